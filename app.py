"""specviz: the Streamlit app. `streamlit run app.py`.

The pages live in pages/ and each draws the shared sidebar itself (pages/ui/controls.py): with a
pages/ folder next to this script, Streamlit serves a process's first request (and every AppTest
run) in its directory-based multipage mode, which runs a page without this script.
"""

import streamlit as st

st.set_page_config(page_title="specviz: speculative decoding, recorded", page_icon=":material/rocket_launch:",
                   layout="wide")

PAGES = [
    st.Page("pages/generate.py", title="Generate", icon=":material/play_arrow:", default=True),
    st.Page("pages/lesson.py", title="Lesson", icon=":material/school:"),
    st.Page("pages/inspector.py", title="Iteration inspector", icon=":material/search:"),
    st.Page("pages/table.py", title="Draft / verify table", icon=":material/table_chart:"),
    st.Page("pages/speedup.py", title="Speedup curves", icon=":material/show_chart:"),
    st.Page("pages/theory.py", title="Theory", icon=":material/functions:"),
    st.Page("pages/traces.py", title="Traces", icon=":material/save:"),
]

page = st.navigation(PAGES)
page.run()
