"""AppTest: one process serves many sessions; runs take turns and traces stay per session."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from apps import MODEL_TIMEOUT, use_tiny_pair
from streamlit.testing.v1 import AppTest

from pages.ui.models import turns

APP = str(Path(__file__).resolve().parent.parent / "app.py")
HOLD = 1.5   # seconds another visitor's run holds the turn once this one waits for it


@pytest.fixture
def session(tiny_llama_dirs):
    """A fresh session set up for the tiny same-vocabulary pair; call it with a prompt."""
    def start(prompt: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT)
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


def test_a_run_waits_for_its_turn(session):
    at = session("w1 w2 w3")
    line = turns()
    holder_ticket = line.take()
    assert line.wait(holder_ticket, timeout=0)
    released: list[float] = []
    ran = threading.Event()   # the script run is over: a run that failed before taking a ticket must not hang this

    def hold() -> None:   # from the moment the run is in line (not from a guess of when it starts), for HOLD s
        while len(line) < 2 and not ran.is_set():
            time.sleep(0.01)
        time.sleep(HOLD)
        released.append(time.perf_counter())
        line.leave(holder_ticket)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        at.button(key="generate").click().run()
    finally:
        ran.set()
    ended = time.perf_counter()
    holder.join()
    trace = at.session_state["trace"]
    assert not at.exception and trace.generated_ids
    assert trace.waited >= HOLD and trace.wall_time <= ended - released[0]  # the wait is shown, not timed
    assert any(f"waited {trace.waited:.1f} s for other visitors' runs first, not counted in the times" in c.value
               for c in at.caption)
    assert len(line) == 0   # its ticket left the line after the run


def test_a_stop_right_after_the_turn_is_taken_leaves_the_line(monkeypatch):
    """A click or a closed tab makes the next Streamlit call raise; the ticket leaves the line all the same."""
    from pages.ui import models

    class Placeholder:
        def info(self, text: str, **kwargs) -> None:
            pass

        def empty(self) -> None:
            raise RuntimeError("rerun requested")   # what a Streamlit call raises once a rerun or stop is pending

    monkeypatch.setattr(models.st, "empty", Placeholder)
    with pytest.raises(RuntimeError, match="rerun requested"), models.exclusive():
        pass
    assert len(turns()) == 0
