"""Iteration inspector: one iteration at a time, from the recorded trace (nothing is recomputed)."""

import streamlit as st

from pages.ui import controls, state
from specviz import charts
from specviz.charts.tree_mask import MAX_NODES as MASK_NODES
from specviz.tree import is_chain

TABS = 32   # a tree of more drafted nodes shows one node's p and q at a time, picked from a list

controls.sidebar()  # drawn by each page, so a page opened on its own still has it
st.title("Iteration inspector")
trace = state.require_trace()
last = len(trace.iterations) - 1
st.session_state.inspect_index = min(st.session_state.get("inspect_index", 0), last)


def step(delta: int) -> None:
    st.session_state.inspect_index = max(0, min(last, st.session_state.inspect_index + delta))


def jump() -> None:
    st.session_state.inspect_index = st.session_state.inspect_slider


prev, nxt, where = st.columns([1, 1, 3])
prev.button("◀ Prev", on_click=step, args=(-1,), disabled=st.session_state.inspect_index == 0, key="prev")
nxt.button("Next ▶", on_click=step, args=(1,), disabled=st.session_state.inspect_index == last, key="next")
if last > 0:
    # moved by Prev / Next, or a new slider: its range is part of its identity, and a trace of another length
    # makes one that starts at 0, while the old one's value still reads as the slider's
    st.session_state.inspect_slider = st.session_state.inspect_index
    with where:
        st.slider("Iteration", 0, last, key="inspect_slider", on_change=jump)
it = trace.iterations[st.session_state.inspect_index]

final = it.final
st.subheader(charts.iteration_heading(it))
st.caption(charts.phase_caption(it, trace.settings.rule))
if it.unsure:
    st.caption(charts.confidence_stop(it, trace))

root = charts.last_committed(trace, it.index)
st.plotly_chart(charts.token_tree(it, root), key="tree")
if it.drafts:
    with st.expander("The verify pass's attention mask"):
        st.markdown(charts.mask_note(it))
        if len(it.drafts) <= MASK_NODES:
            st.plotly_chart(charts.tree_mask(it, root), key="mask")
        else:
            st.caption(f"The grid of {len(it.drafts)} drafted nodes ({len(it.drafts) + 1} rows) is too large to "
                       f"read: it is drawn for trees of up to {MASK_NODES} nodes.")
    st.plotly_chart(charts.acceptance_test(it), key="acceptance")
    names = charts.node_names(it)

    def show_node(i: int) -> None:
        """Drafted node i's p against q, and its test in words."""
        st.plotly_chart(charts.pq_bars(it.drafts[i]), key=f"pq-{i}")
        st.markdown(charts.node_note(it, i))

    if len(names) <= TABS:
        for i, tab in enumerate(st.tabs(names)):
            with tab:
                show_node(i)
    else:   # a tab and a chart per node would take the page minutes to draw
        show_node(st.selectbox("Drafted node", range(len(names)), format_func=names.__getitem__, key="inspect_node"))
    rejected = next((d for d in it.drafts if d.verdict == "rejected"), None)
    if not is_chain(it.parents):
        for node in charts.rejection_points(it):
            st.plotly_chart(charts.residual_sequence(it, node), key=f"residual-{node}")
    elif rejected is not None and rejected.residual_top is not None:
        st.plotly_chart(charts.residual_bars(rejected, final), key="residual")
else:
    st.info("No draft this iteration: the target made one plain step.")
if final is not None and final.kind in ("bonus", "target") and final.top is not None:
    st.plotly_chart(charts.final_bars(final), key="final")
