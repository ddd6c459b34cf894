"""The linked trace view on a page: brushing stays in the browser; clicking an iteration opens it
in the Iteration inspector."""

from __future__ import annotations

import streamlit as st

from pages.ui import state
from specviz import Trace, charts
from specviz.charts.linked import PICK


def linked_view(trace: Trace, key: str) -> None:
    """Draw `trace`'s linked view; only a click (`PICK`) reruns the page, and it opens the inspector."""
    if st.session_state.pop("inspect_picked", False):
        st.switch_page("pages/inspector.py")

    def pick() -> None:
        picked = st.session_state[key]["selection"][PICK]
        if picked:
            st.session_state.inspect_index = int(picked[0]["iteration"])
            st.session_state.inspect_picked = True

    st.caption("Drag across the tokens per iteration to choose iterations: the acceptance per position and the "
               "accepted length follow at once, in your browser (black ticks: the whole trace). Double-click clears "
               "the choice; click a verdict to open its iteration in the inspector.")
    st.altair_chart(_chart(trace), key=key, on_select=pick, selection_mode=[PICK], theme=None)


def _chart(trace: Trace):
    """The view of `trace`, built once per trace (about 0.2 s for 512 tokens) rather than on every
    rerun of the page; a trace still growing is rebuilt when it has more iterations."""
    return state.built_for("linked_chart", trace, len(trace.iterations), lambda: charts.linked_view(trace))
