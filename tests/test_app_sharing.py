"""AppTest: one process serves many sessions; runs take turns on the lock and traces stay per session."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from apps import use_tiny_pair
from streamlit.testing.v1 import AppTest

from pages.ui.models import run_lock

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def session(tiny_llama_dirs):
    """A fresh session set up for the tiny same-vocabulary pair; call it with a prompt."""
    def start(prompt: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120)
        at.run()
        return use_tiny_pair(at, tiny_llama_dirs, prompt, 6)

    return start


def test_sessions_keep_their_own_traces(session):
    first, second = session("w1 w2 w3"), session("w7 w8")
    first.button(key="generate").click().run()
    kept = first.session_state["trace"]
    second.button(key="generate").click().run()
    assert second.session_state["trace"] is not kept
    assert first.session_state["trace"] is kept and kept.prompt == "w1 w2 w3"
    assert second.session_state["trace"].prompt == "w7 w8"


def test_a_run_waits_for_the_lock(session):
    at = session("w1 w2 w3")
    lock = run_lock()
    lock.acquire()
    releaser = threading.Timer(1.5, lock.release)
    started = time.monotonic()
    releaser.start()
    at.button(key="generate").click().run()
    releaser.join()
    assert time.monotonic() - started >= 1.5
    trace = at.session_state["trace"]
    assert not at.exception and trace.generated_ids
    assert trace.waited >= 1.4 and trace.wall_time < trace.waited  # the wait is shown, not timed
    assert any(f"waited {trace.waited:.1f} s for other visitors' runs first, not counted in the times" in c.value
               for c in at.caption)
    assert lock.acquire(blocking=False)  # released again after the run
    lock.release()
