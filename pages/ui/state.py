"""The session's trace: the last run or a loaded file, shown by every page."""

from __future__ import annotations

import streamlit as st

from specviz import Trace
from specviz.study import Study


def trace() -> Trace | None:
    return st.session_state.get("trace")


def set_trace(new: Trace, source: str) -> None:
    """Make `new` the trace every page shows; results derived from the old one are dropped."""
    st.session_state.trace = new
    st.session_state.trace_source = source
    st.session_state.inspect_index = 0
    st.session_state.setdefault("studies", {}).pop("comparison", None)
    show_caption()


def study(kind: str) -> Study | None:
    """The session's study of this kind: the last one run or loaded."""
    return st.session_state.get("studies", {}).get(kind)


def set_study(new: Study, ran_on: tuple | None = None) -> None:
    """Keep `new` as the session's study of its kind; `ran_on`: the sidebar's models, settings and
    prompt it was measured on here (`controls.ran_on`), None for one that came from elsewhere."""
    st.session_state.setdefault("studies", {})[new.kind] = new
    st.session_state.setdefault("studies_ran_on", {})[new.kind] = ran_on


def ran_on(kind: str) -> tuple | None:
    """What the session's study of this kind was measured on here (see `set_study`)."""
    return st.session_state.get("studies_ran_on", {}).get(kind)


def studies() -> list[Study]:
    return list(st.session_state.get("studies", {}).values())


def show_caption() -> None:
    """Say in the sidebar which trace the pages show. The sidebar makes a fresh slot on every
    run; a page that changes the trace redraws it in place."""
    if "caption_slot" not in st.session_state:
        st.session_state.caption_slot = st.sidebar.empty()
    st.session_state.caption_slot.caption(f"Showing: {describe()}")


def require_trace() -> Trace:
    """The current trace, or stop the page with a pointer to where one comes from."""
    current = trace()
    if current is None or not current.iterations:
        st.info("No trace yet: run a generation on the **Generate** page or load a file on the **Traces** page.")
        st.stop()
    return current


def describe() -> str:
    current = trace()
    if current is None:
        return "no trace yet"
    return (f"{st.session_state.get('trace_source', 'last run')}: {len(current.iterations)} iterations, "
            f"{len(current.generated_ids)} tokens, {current.target} ← {current.drafter}")


def study_measured_on(shown: Study) -> str:
    base = shown.baseline
    return measured_on(f"{base.device} ({base.dtype})", base.threads, base.waited)


def measured_on(device: str, threads: int, waited: float) -> str:
    """Where and how times were measured, so a number read off the screen can be weighed."""
    cores = f"{threads} torch thread{'s' if threads != 1 else ''}" if threads else "unrecorded torch threads"
    queue = (f"waited {waited:.1f} s for other visitors' runs first, not counted in the times"
             if waited >= 0.05 else "no other run was queued ahead")
    return f"Measured on {device} with {cores}; {queue}."
