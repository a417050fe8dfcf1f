"""The canvas charts (the explorer's heatmap and all-heads grid) as Streamlit v2 components, with
their JS."""
