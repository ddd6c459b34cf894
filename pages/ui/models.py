"""Models shared by every session of the process, and the lock that serialises runs on them.

One process serves everyone (a hosted GPU): models load once (`st.cache_resource`), and every run
holds `run_lock()` so no two runs interleave on the same KV caches. Each session keeps its own
trace in its own session state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import streamlit as st

from pages.ui import controls
from specviz import LoadedModel, SpecvizError, load_model
from specviz.drafters import Drafter, build_drafter


@st.cache_resource(show_spinner="Loading the target model (once per process)…")
def target_model(name: str | None) -> LoadedModel:
    return load_model(name)


@st.cache_resource(show_spinner="Preparing the drafter (once per process)…")
def drafter(target_name: str | None, kind: str, draft_model: str | None) -> Drafter | None:
    return build_drafter(kind, target_model(target_name), draft_model)


@st.cache_resource
def run_lock() -> threading.Lock:
    return threading.Lock()


@contextmanager
def exclusive() -> Iterator[tuple[LoadedModel, Drafter | None]]:
    """Wait for the shared models (saying so), then hold them: yields (target, drafter)."""
    lock = run_lock()
    waiting = st.empty()
    while not lock.acquire(timeout=0.5):
        waiting.info("⏳ Waiting for another run to finish: one model serves every visitor, runs take turns.")
    waiting.empty()
    try:
        target_name, draft_model = controls.pair()
        kind = st.session_state.drafter
        # A preset pair's draft model is an LM for the "model" drafter; trained kinds use their shipped weights.
        if kind != "model" and st.session_state.pair != controls.CUSTOM_PAIR:
            draft_model = None
        yield target_model(target_name), drafter(target_name, kind, draft_model)
    finally:
        lock.release()


def runs_with_progress(what: str, total: int,
                       work: Callable[[LoadedModel, Drafter], Iterable]) -> list | None:
    """Collect what `work(target, drafter)` yields (one item per finished run) under the run lock,
    with a progress bar; None after showing the error when something is wrong."""
    progress = st.progress(0.0, text=f"{what}: starting…")
    results = []
    try:
        with exclusive() as (target, drafter):
            if drafter is None:
                raise SpecvizError(f"the {what} needs a drafter: pick one other than 'none' in the sidebar")
            for result in work(target, drafter):
                results.append(result)
                progress.progress(len(results) / total, text=f"{what}: {len(results)} of {total} runs done")
    except SpecvizError as error:
        st.error(str(error))
        return None
    finally:
        progress.empty()
    return results
