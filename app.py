"""specviz: the Streamlit app. `streamlit run app.py`.

The sidebar's run settings are drawn here, before the page, so every page shares them.
"""

import streamlit as st

from ui import controls, state

st.set_page_config(page_title="specviz: speculative decoding, recorded", page_icon="🔭", layout="wide")

PAGES = [
    st.Page("pages/generate.py", title="Generate", icon="▶️", default=True),
    st.Page("pages/inspector.py", title="Iteration inspector", icon="🔍"),
    st.Page("pages/table.py", title="Draft / verify table", icon="📋"),
    st.Page("pages/speedup.py", title="Speedup curves", icon="📈"),
    st.Page("pages/theory.py", title="Theory", icon="📐"),
    st.Page("pages/traces.py", title="Traces", icon="💾"),
]

page = st.navigation(PAGES)
controls.sidebar()
st.sidebar.caption(f"Showing: {state.describe()}")
page.run()
