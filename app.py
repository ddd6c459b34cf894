"""specviz: the Streamlit app. `streamlit run app.py`.

The sidebar's run settings are drawn here, before the page, so every page shares them. The pages
live in views/, not pages/: a folder named pages/ next to this script switches Streamlit back to its
older directory-based multipage mode on a process's first run (and on every AppTest run), which runs
a page without this script and so without the sidebar.
"""

import streamlit as st

from ui import controls, state

st.set_page_config(page_title="specviz: speculative decoding, recorded", page_icon=":material/rocket_launch:",
                   layout="wide")

PAGES = [
    st.Page("views/generate.py", title="Generate", icon=":material/play_arrow:", default=True),
    st.Page("views/inspector.py", title="Iteration inspector", icon=":material/search:"),
    st.Page("views/table.py", title="Draft / verify table", icon=":material/table_chart:"),
    st.Page("views/speedup.py", title="Speedup curves", icon=":material/show_chart:"),
    st.Page("views/theory.py", title="Theory", icon=":material/functions:"),
    st.Page("views/traces.py", title="Traces", icon=":material/save:"),
]

page = st.navigation(PAGES)
controls.sidebar()
page.run()
st.sidebar.caption(f"Showing: {state.describe()}")
