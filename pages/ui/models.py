"""Models shared by every session of the process, and the lock that serialises runs on them.

One process serves everyone (a hosted GPU): models load once (`st.cache_resource`), and every run
holds `run_lock()` so no two runs interleave on the same KV caches. Each session keeps its own
trace in its own session state.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from pages.ui import controls
from specviz import LoadedModel, load_model
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
