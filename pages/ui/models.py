"""The decoder process shared by every session, and the turns runs take on it.

One server process serves everyone (a hosted GPU). The models live in one decoder process
(`specviz.decoder_process`), where the server's page rendering cannot slow them down; runs take
turns there, first come first served (`specviz.turns`), so no two runs interleave on the same KV
caches; a waiting run is told its place in line, and its time in the queue is shown beside its
numbers, never inside them. Each session keeps its own trace in its own
session state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from pages.ui import controls, state
from specviz import DecodeSettings, SpecvizError, Trace
from specviz.decoder_process import DecoderProcess, ModelSpec, Request, follow_trace, trace_stream
from specviz.plural import count
from specviz.turns import Turns

WAIT_ICON = ":material/hourglass_top:"   # Streamlit's own icon font: a browser without emoji fonts draws it too


@st.cache_resource(show_spinner=False)
def decoder() -> DecoderProcess:
    return DecoderProcess()


def turns() -> Turns:
    return decoder().turns


@dataclass
class Turn:
    """A run's turn on the decoder process: its models and how long it queued for them."""

    process: DecoderProcess
    models: ModelSpec
    waited: float
    loading: DeltaGenerator  # where the process's loading messages show

    def request(self, work: Callable[..., Iterable], *args, baseline: bool = False) -> Request:
        """`work(target, drafter, *args)` in the decoder process; with `baseline`, drafter None."""
        models = replace(self.models, drafter="none", draft_model=None) if baseline else self.models
        return self.process.request(models, work, *args, on_status=self._show)

    def _show(self, text: str | None) -> None:
        if text:
            self.loading.info(text, icon=WAIT_ICON)
        else:
            self.loading.empty()


@contextmanager
def exclusive() -> Iterator[Turn]:
    """Wait for a turn on the decoder process (saying where this run stands in line), then hold it."""
    line = turns()
    ticket, started = line.take(), time.monotonic()
    try:   # from here on every Streamlit call may raise a rerun or stop, and the ticket must still leave the line
        waiting = st.empty()
        while not line.wait(ticket, timeout=0.5):
            waiting.info(f"Waiting for a turn: {count(line.ahead(ticket), 'run')} ahead of this one "
                         f"({time.monotonic() - started:.0f} s so far). One model serves every visitor, first come "
                         "first served; the wait is not counted in this run's timings.", icon=WAIT_ICON)
        waited = time.monotonic() - started
        waiting.empty()
        yield Turn(decoder(), controls.models(), waited, st.empty())
    finally:
        line.leave(ticket)


def run_with_progress(turn: Turn, prompt: str, settings: DecodeSettings, what: str,
                      baseline: bool = False) -> Trace | None:
    """One run in the decoder process with a progress bar saying `what`; its trace, None if it decided
    nothing. With `baseline`, the target alone."""
    progress = st.progress(0.0, text=what)
    trace = None
    with closing(follow_trace(turn.request(trace_stream, prompt, settings, baseline=baseline))) as traces:
        for trace in traces:
            progress.progress(min(1.0, len(trace.generated_ids) / settings.max_new_tokens), text=what)
    progress.empty()
    return trace


def runs_with_progress(what: str, total: int, work: Callable[..., Iterable], args: Callable[[], tuple],
                       keep: Callable[[list, float], None] | None = None) -> tuple[list, float] | None:
    """Collect what `work(target, drafter, *args())` yields in the decoder process (one item per
    finished run), with a progress bar: (items, seconds queued first), or None after showing the
    error when something is wrong (invalid settings from `args()` included). `keep(items, seconds)`
    hears the items when the work ends, and also when a click (Stop or any other) cuts it short."""
    progress = st.progress(0.0, text=f"{what}: starting…")
    results, waited = [], 0.0
    try:
        arguments = args()   # invalid ones are refused here, before the run queues
        controls.needs_drafter(what)
        with exclusive() as turn:
            waited = turn.waited
            with closing(turn.request(work, *arguments)) as request:
                for result in request:
                    results.append(result)
                    progress.progress(len(results) / total, text=f"{what}: {len(results)} of {total} runs done")
    except SpecvizError as error:
        st.error(str(error))
        return None
    except BaseException:   # Streamlit's rerun or stop: the finished runs stay, the one under way is dropped
        if results and keep is not None:
            keep(results, waited)
        raise
    finally:
        progress.empty()
    if keep is not None and results:
        keep(results, waited)
    return results, waited


def study_with_progress(kind: str, total: int, work: Callable[..., Iterable], args: Callable[[], tuple]) -> None:
    """A study's runs (`runs_with_progress`; each item is the study so far) with a Stop button: the last
    study, with the time it queued, becomes the session's study of its `kind` when the runs end or a click
    stops them, beside the session's study of that kind before (`state.set_study`)."""
    what = state.STUDY_NAMES[kind]
    before = st.session_state.get("studies", {}).get(kind)
    stop = st.empty()
    stop.button("Stop", key=f"stop {what}", help="Ends the study now: the runs finished so far are kept and "
                "shown, the one under way is dropped.")

    def kept(studies: list, waited: float) -> None:
        studies[-1].baseline.waited = waited
        state.set_study(studies[-1], repeating=before)

    try:
        runs_with_progress(what, total, work, args, keep=kept)
    finally:
        stop.empty()
