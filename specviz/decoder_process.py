"""The decoder in a process of its own, where a web server's Python threads cannot slow it down.

A forward pass is thousands of small torch calls, and each one gives the GIL up and takes it back.
A thread busy in Python in the same process (a page redraw, a websocket message, a file watcher)
keeps the GIL for a whole switch interval every time it gets it, so the decoder waits after every
call: the app measured verify times 4-15x the library's (BENCHMARKS.md, "Where the time goes").
`DecoderProcess` keeps the models in a child process (a fresh interpreter; POSIX hosts) with a
fixed number of torch threads; the server's side only sends requests and reads what the decoder
yields (a trace's iterations, sweep points, grid cells), so nothing it does holds a GIL the
decoder needs.

One process serves every visitor: requests take turns, first come first served (`turns`), and the
time a request waits there is never part of what it measures (the decoder's clocks start when its run starts).

A request names the models (`ModelSpec`) and a generator function `work(target, drafter, *args)`
defined at the top level of a module (it travels by name). What the function yields comes back
item by item. `Request.stop()` asks the decoder to stop after the item it is working on: the
function sees `StopRequested` raised at its `yield` and may yield one last item (the trace's
ending does) before it returns.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

from specviz.device import decoder_threads
from specviz.errors import SpecvizError
from specviz.limits import kept_pairs
from specviz.turns import Turns

if TYPE_CHECKING:
    from specviz.models import Prompt


@dataclass(frozen=True)
class ModelSpec:
    """The models of a request: the target (None = the embedded one), the drafter kind (None = the
    target's default, `drafters.default_drafter`), the drafter's weights file or draft LM (None =
    the kind's default) and the dtype the models compute in (None = the device's default,
    `device.pick_dtype`)."""

    target: str | None = None
    drafter: str | None = None
    draft_model: str | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.drafter is None:
            from specviz.drafters import default_drafter

            object.__setattr__(self, "drafter", default_drafter(self.target))


@dataclass(frozen=True)
class Ending:
    """The last item of a trace stream: what the run's loop stamps on its trace when it ends."""

    wall_time: float
    text: str
    stopped_by: str | None = None


@dataclass(frozen=True)
class Status:
    """Yielded by a work function to say what it does before its first result (None: done with that); the
    page shows it where it shows the loading."""

    text: str | None


class StopRequested(Exception):
    """Raised inside a request's work function at its `yield` when the request is stopped."""


class DecoderProcess:
    """A child process that loads models once and runs requests on them, one at a time."""

    def __init__(self, threads: int | None = None):
        self.threads = threads or decoder_threads()
        self.turns = Turns()  # held by whoever talks to the process; see `request`
        self._child: subprocess.Popen | None = None
        self._conn: Connection | None = None

    def request(self, models: ModelSpec, work: Callable[..., Iterator], *args,
                on_status: Callable[[str | None], None] | None = None) -> Request:
        """Start `work(target, drafter, *args)` in the decoder process; the caller holds a turn (`turns`).
        `on_status` hears what the process is loading, and None once the models are ready."""
        if not self.turns.held():
            raise RuntimeError("hold a turn (DecoderProcess.turns) while a request runs")
        self._ensure_started()
        try:
            self._conn.send((models, work, args))
        except OSError as error:  # it died since the last request
            raise self._lost() from error
        return Request(self, on_status)

    def close(self) -> None:
        if self._child is not None:
            self._conn.close()
            try:
                self._child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._child.kill()
            self._child = self._conn = None

    def _ensure_started(self) -> None:
        """A fresh interpreter, not a fork: a fork would copy the server's threads and locks, and
        multiprocessing's spawn would re-run whatever module is `__main__` (a page script, in the
        server) in the child."""
        if self._child is not None and self._child.poll() is None:
            return
        ours, theirs = socket.socketpair()
        entry = f"from specviz.decoder_process import serve; serve({theirs.fileno()}, {self.threads})"
        self._child = subprocess.Popen([sys.executable, "-c", entry], pass_fds=[theirs.fileno()], env=child_env())
        theirs.close()
        self._conn = Connection(ours.detach())

    def _lost(self) -> SpecvizError:
        code = self._child.poll() if self._child is not None else None
        self._child = self._conn = None
        return SpecvizError(f"the decoder process ended unexpectedly (exit code {code}); the next run starts "
                            "a new one")


def child_env() -> dict[str, str]:
    """The environment for a fresh interpreter that imports specviz from this checkout, installed or not."""
    package_root = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}


class Request:
    """The items of one request as they arrive; iterate it, or `stop()` it early."""

    def __init__(self, owner: DecoderProcess, on_status: Callable[[str | None], None] | None):
        self._owner = owner
        self._on_status = on_status
        self._done = False
        self.cpu_seconds: float | None = None  # the decoder process's CPU time for the work, once done
        self.error: Exception | None = None   # what ended the work while `stop` drained it, which it does not raise

    def __iter__(self) -> Request:
        return self

    def __next__(self):
        while not self._done:
            kind, payload = self._receive()
            if kind == "item":
                return payload
            if kind == "status":
                if self._on_status is not None:
                    self._on_status(payload)
            elif kind == "error":
                self._done = True
                raise payload
            else:
                self._done, self.cpu_seconds = True, payload
        raise StopIteration

    def stop(self) -> list:
        """Ask the decoder to stop after its current item; return the items it still sends (what
        arrived before the end, should the process die meanwhile: a stop never raises, and keeps in
        `error` what ended the work instead)."""
        if self._done:
            return []
        left = []
        try:
            self._owner._conn.send("stop")
            while not self._done:
                kind, payload = self._receive()
                if kind == "item":
                    left.append(payload)
                elif kind == "error":
                    self._done, self.error = True, payload
                elif kind == "done":
                    self._done, self.cpu_seconds = True, payload
        except OSError:  # the process died before the stop reached it
            self._done = True
            self.error = self._owner._lost()
        except SpecvizError as lost:  # it died while we drained: `_receive` has reset it
            self.error = lost
        return left

    def close(self) -> None:
        self.stop()

    def _receive(self) -> tuple[str, object]:
        try:
            return self._owner._conn.recv()
        except (EOFError, OSError) as error:
            self._done = True
            raise self._owner._lost() from error


def serve(fd: int, threads: int) -> None:
    """The decoder process: fix the torch threads, then answer requests on `fd` until it closes."""
    import torch

    torch.set_num_threads(threads)
    conn = Connection(fd)
    loaded: dict = {}
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request == "stop":  # for a request that had already ended
            continue
        models, work, args = request
        target = drafter = None   # the last request's models live on in `loaded` only, if at all
        try:
            target, drafter = _load(models, loaded, lambda text: conn.send(("status", text)), kept_pairs())
            cpu = time.process_time()  # this process's CPU time, read where the work runs, to the microsecond
            _stream(work(target, drafter, *args), conn)
        except Exception as error:  # every failure goes back to the page; the process serves on
            target = drafter = None   # out of memory: the failed pair goes too, with every pair kept (`_failed`)
            conn.send(("error", _failed(error, loaded)))
        else:
            conn.send(("done", time.process_time() - cpu))


def _stream(items: Iterator, conn: Connection) -> None:
    """Send what `items` yields; on a stop, let it finish with `StopRequested` and send its last word."""
    try:
        if _stop_asked(conn):  # while its models loaded
            return
        for item in items:
            conn.send(("status", item.text) if isinstance(item, Status) else ("item", item))
            if _stop_asked(conn):
                try:
                    conn.send(("item", items.throw(StopRequested())))
                except (StopRequested, StopIteration):
                    pass
                return
    finally:
        items.close()


def _stop_asked(conn: Connection) -> bool:
    """Has the page sent "stop"? (Nothing else arrives while a request runs.)"""
    return conn.poll() and conn.recv() == "stop"


def _load(models: ModelSpec, loaded: dict, status: Callable[[str | None], None], keep: int):
    """The request's (target, drafter), loaded once and kept in `loaded` with the pairs used last, `keep` in all:
    a new pair lets the least recently used ones go first (their memory with them) and shares a kept pair's
    target where it can. A new pair decodes a few tokens before it is handed out, so no measured run pays the
    first calls' one-off costs."""
    from specviz.decoder import generate
    from specviz.drafters import build_drafter
    from specviz.limits import NO_LIMITS
    from specviz.models import load_model
    from specviz.settings import DecodeSettings

    if models in loaded:
        loaded[models] = loaded.pop(models)   # now the one used last
        return loaded[models]
    if len(loaded) >= keep:
        for spec in list(loaded)[: len(loaded) - keep + 1]:   # the ones used least recently
            del loaded[spec]
        _let_go()
    weights = models.target, models.dtype
    target = next((t for spec, (t, _) in loaded.items() if (spec.target, spec.dtype) == weights), None)
    if target is None:
        status(f"Loading the target model {models.target or 'SmolLM2-135M-Instruct (embedded)'}"
               f"{f' in {models.dtype}' if models.dtype else ''}… (kept for the runs after it)")
        target = load_model(models.target, dtype=models.dtype)
    status(f"Preparing the drafter ({models.drafter})… (kept for the runs after it)")
    drafter = build_drafter(models.drafter, target, models.draft_model)
    generate(target, drafter, "Hello", DecodeSettings(temperature=0.0, max_new_tokens=4, record=False),
             limits=NO_LIMITS)
    loaded[models] = target, drafter
    status(None)
    return target, drafter


def _let_go() -> None:
    """Free what models no longer held kept: Python's cycles now, and CUDA's cached blocks for the next load."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _failed(error: Exception, loaded: dict) -> Exception:
    """The error as the page should raise it: a SpecvizError as it is; out of memory as one too, once every
    model kept is let go (a host's visitors try pair after pair, and each stayed loaded); anything else
    with its traceback."""
    import torch

    if isinstance(error, SpecvizError):
        return SpecvizError(str(error))
    if isinstance(error, torch.OutOfMemoryError | MemoryError):
        loaded.clear()
        error.__traceback__ = None   # its frames hold the failed work's tensors
        _let_go()
        return SpecvizError(f"out of memory ({str(error).splitlines()[0] if str(error) else type(error).__name__}): "
                            "the models this server kept loaded are let go, so the next run loads only its own "
                            "pair; try again, or a smaller pair, fewer new tokens or half precision")
    detail = "".join(traceback.format_exception_only(error)).strip()
    return RuntimeError(f"the decoder process failed: {detail}\n{traceback.format_exc()}")


def trace_stream(target, drafter, prompt: Prompt, settings, chat: bool = True) -> Iterator:
    """Work function for one run (its settings prepared first, `sizing.prepare`, with a `Status` while
    that sizes the pair): the trace's header (no iterations yet), each iteration, then its `Ending`."""
    from specviz.decoder import Run, checked_prompt
    from specviz.sizing import prepare, sizes

    checked_prompt(target, prompt, settings, chat)   # refused before a new pair's sizing, not after
    if sizes(drafter, settings):
        yield from _measuring(target, drafter)
    prepared = prepare(target, drafter, settings)
    run = Run(target, drafter, prompt, prepared.settings, chat=chat, sizing=prepared.sizing)
    yield replace(run.trace, iterations=[], generated_ids=[])
    try:
        yield from run
    except StopRequested:  # raised in the run's loop, which stamped its wall time and text as it ended
        pass
    yield Ending(run.trace.wall_time, run.trace.text, run.trace.stopped_by)


def sizing_stream(target, drafter) -> Iterator:
    """Work function for the pair's sizing (`sizing.size_for`), each first measurement said as a `Status`."""
    from specviz.sizing import size_for

    yield from _measuring(target, drafter)
    yield size_for(target, drafter)


def _measuring(target, drafter) -> Iterator[Status]:
    """What a pair's first sizing measures, step by step (`sizing.measuring`), then that it is done."""
    from specviz.sizing import measuring

    yield from (Status(text) for text in measuring(target, drafter))
    yield Status(None)


def follow_trace(request: Request) -> Iterator:
    """Rebuild a `trace_stream`'s trace as it arrives; yields the trace after each iteration. Closed
    early, it stops the request and still applies the run's ending."""
    from specviz.trace import Iteration, Trace

    trace = None

    def apply(item) -> None:
        nonlocal trace
        if isinstance(item, Trace):
            trace = item
        elif isinstance(item, Iteration):
            trace.iterations.append(item)
            trace.generated_ids.extend(item.emitted_ids)
        elif isinstance(item, Ending):
            trace.wall_time, trace.text, trace.stopped_by = item.wall_time, item.text, item.stopped_by

    try:
        for item in request:
            apply(item)
            if isinstance(item, Iteration):
                yield trace
    finally:
        for item in request.stop():
            apply(item)
        if request.error is not None and trace is not None and trace.stopped_by is None:
            trace.stopped_by = f"an error as it stopped: {str(request.error).splitlines()[0]}"
