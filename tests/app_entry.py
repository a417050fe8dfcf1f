"""The app as AppTest runs it: this script runs app.py.

Why not `AppTest.from_file("app.py")`: AppTest.run resets `PagesManager.uses_pages_directory`
to None, and PagesManager then sets it from whether a `pages/` folder sits beside the entry
script, so every test run of app.py would start in Streamlit's legacy multipage mode, where
`switch_page` runs a page file without app.py (streamlit/streamlit#9446 and #14217 fixed only
part of this). A real server is unaffected. From tests/ there is no `pages/` beside the entry,
and app.py registers its pages by absolute path (attnviz/app/nav.py), so the app runs as it
does under `streamlit run app.py`.
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "app.py"), run_name="__main__")
