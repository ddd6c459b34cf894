"""Lesson: one iteration of the current trace, one step per screen, in type that reads on a projector."""

import streamlit as st

from pages.ui import controls, state
from specviz import charts

controls.sidebar()  # drawn by each page, so a page opened on its own still has it
st.title("Lesson: one iteration, step by step")
trace = state.require_trace()
last_iteration = len(trace.iterations) - 1
if st.session_state.get("lesson_trace") is not trace:  # a new trace starts at its most instructive iteration
    st.session_state.lesson_trace = trace
    st.session_state.lesson_index = charts.default_iteration(trace)
    st.session_state.lesson_step = 0
st.session_state.lesson_index = min(st.session_state.lesson_index, last_iteration)


def choose() -> None:
    st.session_state.lesson_index = st.session_state.lesson_pick
    st.session_state.lesson_step = 0


def turn(delta: int) -> None:
    st.session_state.lesson_step += delta


if st.session_state.get("lesson_pick") != st.session_state.lesson_index:
    st.session_state.lesson_pick = st.session_state.lesson_index  # the widget's state is dropped on a page switch
st.selectbox("Iteration", range(last_iteration + 1), key="lesson_pick", on_change=choose,
             format_func=lambda i: charts.iteration_label(trace.iterations[i]))
st.caption(charts.default_note(trace))

index = st.session_state.lesson_index   # a click on Prev or Next builds no step again
steps = state.built_for("lesson_steps", trace, index, lambda: charts.lesson_steps(trace, index))
at = min(st.session_state.lesson_step, len(steps) - 1)


def buttons(end: str = "") -> None:
    """Prev and Next, above the step (a presenter's clicker sends PageUp / PageDown) and again below it."""
    with st.container(horizontal=True):
        st.button("◀ Prev", on_click=turn, args=(-1,), disabled=at == 0, key=f"lesson_prev{end}",
                  shortcut=None if end else "PageUp")
        st.button("Next ▶", on_click=turn, args=(1,), disabled=at == len(steps) - 1, key=f"lesson_next{end}",
                  shortcut=None if end else "PageDown")
        if not end and st.button(f"Open iteration {st.session_state.lesson_index} in the inspector",
                                 key="lesson_inspect", type="tertiary", icon=":material/search:"):
            st.session_state.inspect_index = st.session_state.lesson_index
            st.switch_page("pages/inspector.py")


buttons()
step = steps[at]
st.header(f"Step {at + 1} of {len(steps)}: {step.title}")
st.html(charts.lesson_html(step))
if step.figure is not None:
    st.plotly_chart(step.figure, key=f"lesson_figure_{at}")
buttons("_end")
