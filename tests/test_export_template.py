"""A chart page saved from the app (export.figure_html) never carries Streamlit's placeholder
colours: inside the server every new Plotly figure gets Streamlit's default template, whose
colours ("#000001"...) only Streamlit's own page resolves, so a saved page drew its text, axes
and colour bars in near-black placeholders."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attnviz import export

PLACEHOLDER = re.compile(r"#0000[0-4][0-9]\b")


def test_a_page_saved_from_the_app_has_no_streamlit_placeholder_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.elements.lib.streamlit_plotly_theme import configure_streamlit_plotly_theme

    configure_streamlit_plotly_theme()  # what importing st.plotly_chart does in the server
    monkeypatch.setattr(pio.templates, "default", "streamlit")
    fig = go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.5, 0.5]], colorscale="Blues"))
    assert PLACEHOLDER.search(fig.to_json())  # the app's figure does carry them
    page = export.figure_html(fig, {"model": "minilm", "text": "a b"})
    drawn = page[page.index("Plotly.newPlot(") :]  # the figure, after the inlined plotly.js
    assert not PLACEHOLDER.findall(drawn)
    assert '"colorscale":[[0.0,"rgb(247,251,255)"]' in page.replace(" ", "")  # the chart's own colours stay
    assert PLACEHOLDER.search(fig.to_json())  # the figure it was given is untouched


def test_a_figure_with_its_own_template_keeps_it() -> None:
    fig = go.Figure(go.Bar(y=[1, 2]), layout={"template": "plotly_dark"})
    page = export.figure_html(fig, {})
    assert '"paper_bgcolor":"rgb(17,17,17)"' in page.replace(" ", "")
