"""The decoder process: the same runs as the library, stops that keep what was decided, errors
that reach the caller, and a process that comes back after it dies."""

from __future__ import annotations

import os
import signal
import weakref
from dataclasses import asdict, replace

import pytest
import torch

from specviz import DecodeSettings, SpecvizError, generate, load_model
from specviz.decoder_process import DecoderProcess, ModelSpec, _load, follow_trace, trace_stream
from specviz.device import available_cores, decoder_threads
from specviz.drafters import build_drafter
from specviz.limits import KEPT_PAIRS, kept_pairs
from specviz.sweep import gamma_sweep

PROMPT = "w1 w2 w3 w1 w2"
# Simulated latency (ms) per target call, for a run that must still be going when the test stops or kills it:
# a tiny model's whole run takes milliseconds, which a test process descheduled on a busy machine can miss.
# A stopped run is asked for `LONG` tokens, some 24 s at this pace, and stops after its first.
SLOW = 100
LONG = 240   # the tiny target holds 256 positions


@pytest.fixture(scope="module")
def process():
    started = DecoderProcess(threads=1)
    yield started
    started.close()


@pytest.fixture(scope="module")
def models(tiny_llama_dirs) -> ModelSpec:
    target, drafter = tiny_llama_dirs
    return ModelSpec(str(target), "model", str(drafter))


def run(process: DecoderProcess, models: ModelSpec, settings: DecodeSettings, prompt: str = PROMPT):
    with process.turns:
        *_, trace = follow_trace(process.request(models, trace_stream, prompt, settings))
    return trace


@pytest.mark.parametrize("settings", [DecodeSettings(gamma=3, temperature=0, max_new_tokens=12),
                                      DecodeSettings(gamma=2, temperature=1.0, seed=7, max_new_tokens=12)])
def test_a_run_in_the_process_is_the_library_run(process, models, settings):
    target = load_model(models.target)
    threads = torch.get_num_threads()
    torch.set_num_threads(process.threads)  # the same reductions, so the same floats
    try:
        library = generate(target, build_drafter("model", target, models.draft_model), PROMPT, settings)
    finally:
        torch.set_num_threads(threads)
    remote = run(process, models, settings)
    assert remote.generated_ids == library.generated_ids and remote.text == library.text
    assert [asdict(it)["drafts"] for it in remote.iterations] == [asdict(it)["drafts"] for it in library.iterations]
    assert remote.threads == 1 and remote.wall_time > 0 and remote.drafter == library.drafter


def test_stopping_keeps_what_was_decided_and_the_process_serves_on(process, models):
    settings = DecodeSettings(gamma=1, temperature=0, max_new_tokens=LONG)
    with process.turns:
        traces = follow_trace(process.request(models, trace_stream, PROMPT, replace(settings, target_latency_ms=SLOW)))
        trace = next(traces)
        traces.close()
    assert trace.iterations and trace.wall_time > 0
    assert trace.generated_ids == [t for it in trace.iterations for t in it.emitted_ids] and trace.text
    whole = run(process, models, settings).generated_ids
    assert len(trace.generated_ids) < len(whole) and whole[: len(trace.generated_ids)] == trace.generated_ids


def test_other_work_streams_its_items(process, models):
    settings = DecodeSettings(temperature=0, max_new_tokens=6)
    with process.turns:
        studies = list(process.request(models, gamma_sweep, PROMPT, settings, [1, 3]))
    assert [len(s.variants) for s in studies] == [0, 1, 2]
    rows = studies[-1].rows()
    assert [r.varied for r in rows] == [{}, {"gamma": 1}, {"gamma": 3}] and all(r.threads == 1 for r in rows)
    assert all(r.match_rate == 1.0 for r in rows)  # greedy: every run is the target's own output


def test_errors_reach_the_caller_and_the_process_serves_on(process, models, tmp_path):
    with process.turns, pytest.raises(SpecvizError, match="model directory not found"):
        list(process.request(ModelSpec(str(tmp_path / "nope"), "none"), trace_stream, PROMPT,
                             DecodeSettings()))
    with process.turns, pytest.raises(SpecvizError, match="the prompt is empty"):
        list(process.request(models, trace_stream, "  ", DecodeSettings()))
    assert run(process, models, DecodeSettings(temperature=0, max_new_tokens=3)).generated_ids


def test_loading_is_reported_then_cleared(models):
    fresh = DecoderProcess(threads=1)
    heard = []
    try:
        with fresh.turns:
            request = fresh.request(models, trace_stream, PROMPT, DecodeSettings(max_new_tokens=2),
                                    on_status=heard.append)
            list(request)
        assert heard[0].startswith("Loading the target model") and heard[-1] is None
        assert request.cpu_seconds > 0  # the run's own CPU time, read in the decoder process
    finally:
        fresh.close()


def test_a_process_that_dies_mid_run_is_reported_and_replaced(models):
    fresh = DecoderProcess(threads=1)
    try:
        with fresh.turns:
            settings = DecodeSettings(gamma=1, temperature=0, max_new_tokens=LONG, target_latency_ms=SLOW)
            items = fresh.request(models, trace_stream, PROMPT, settings)
            next(items)
            os.kill(fresh._child.pid, signal.SIGKILL)
            with pytest.raises(SpecvizError, match="the decoder process ended unexpectedly"):
                list(items)
        assert run(fresh, models, DecodeSettings(max_new_tokens=2)).generated_ids
    finally:
        fresh.close()


def test_requests_need_a_turn(process, models):
    with pytest.raises(RuntimeError, match=r"hold a turn \(DecoderProcess.turns\)"):
        process.request(models, trace_stream, PROMPT, DecodeSettings())


def test_thread_count_leaves_a_core_to_the_server(monkeypatch):
    monkeypatch.delenv("SPECVIZ_THREADS", raising=False)
    assert [decoder_threads(cores) for cores in (1, 2, 16)] == [1, 1, 15]
    monkeypatch.setenv("SPECVIZ_THREADS", "3")
    assert decoder_threads(2) == 3
    monkeypatch.setenv("SPECVIZ_THREADS", "0")
    with pytest.raises(SpecvizError, match="SPECVIZ_THREADS must be a whole number >= 1"):
        decoder_threads()


@pytest.mark.parametrize("cpu_max, cores", [("150000 100000", 2), ("50000 100000", 1), ("max 100000", None),
                                            (None, None), ("garbled", None)])
def test_a_containers_cpu_limit_bounds_the_cores(tmp_path, monkeypatch, cpu_max, cores):
    """A container limited to 1.5 CPUs on a 16-core node has 2 cores' worth of time, not 16."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    quota = tmp_path / "cpu.max"
    if cpu_max is not None:
        quota.write_text(cpu_max + "\n")
    assert available_cores(quota) == (cores or 16)


def test_stopping_a_run_whose_process_died_keeps_what_arrived(models):
    fresh = DecoderProcess(threads=1)
    try:
        with fresh.turns:
            settings = DecodeSettings(gamma=1, temperature=0, max_new_tokens=LONG)   # greedy: no early EOS here
            traces = follow_trace(fresh.request(models, trace_stream, PROMPT, replace(settings,
                                                                                       target_latency_ms=SLOW)))
            trace = next(traces)
            os.kill(fresh._child.pid, signal.SIGKILL)
            fresh._child.wait()
            traces.close()
        assert trace.iterations and trace.generated_ids == [t for it in trace.iterations for t in it.emitted_ids]
        assert trace.stopped_by.startswith("an error as it stopped: the decoder process ended unexpectedly")
        whole = run(fresh, models, settings).generated_ids   # the replaced process, at full speed
        assert len(trace.generated_ids) < len(whole) and whole[: len(trace.generated_ids)] == trace.generated_ids
    finally:
        fresh.close()


def test_out_of_memory_lets_every_kept_model_go_and_says_so():
    from specviz.decoder_process import _failed

    loaded = {"pair": object()}
    error = _failed(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail"), loaded)
    assert isinstance(error, SpecvizError) and loaded == {}
    assert str(error).startswith("out of memory (CUDA out of memory. Tried to allocate 2.00 GiB): the models this "
                                 "server kept loaded are let go")
    loaded = {"pair": object()}
    bug = _failed(KeyError("w"), loaded)
    assert type(bug) is RuntimeError and "KeyError: 'w'" in str(bug) and loaded   # a bug keeps its traceback

    class Activations:
        """What a failed pass held in its frame."""

    held = []

    def work():
        activations = Activations()
        held.append(weakref.ref(activations))
        raise torch.OutOfMemoryError("CUDA out of memory")

    try:
        work()
    except torch.OutOfMemoryError as failure:
        _failed(failure, {})
        assert held[0]() is None   # let go while the error is still being handled


def test_a_run_that_sizes_its_pair_says_so_before_its_first_item(tiny_llama_dirs, monkeypatch):
    from specviz import sizing
    from specviz.decoder_process import Status, _stream
    from specviz.trace import Trace

    def prepared(target, drafter, settings):   # the sizing itself is measured in test_tree_size
        return sizing.Prepared(replace(settings, auto_size=False, adaptive=False))

    monkeypatch.setattr(sizing, "prepare", prepared)
    monkeypatch.setattr(sizing, "measuring", lambda target, drafter: iter(["Timing…", "Drafting…"]))
    target = load_model(str(tiny_llama_dirs[0]))
    drafter = build_drafter("model", target, str(tiny_llama_dirs[1]))
    sized = list(trace_stream(target, drafter, PROMPT, DecodeSettings(max_new_tokens=2, auto_size=True)))
    assert sized[:3] == [Status("Timing…"), Status("Drafting…"), Status(None)]
    assert isinstance(sized[3], Trace)
    chain = list(trace_stream(target, drafter, PROMPT, DecodeSettings(max_new_tokens=2, auto_size=False,
                                                                     adaptive=False)))
    assert not any(isinstance(item, Status) for item in chain)

    class Sent:
        def __init__(self):
            self.messages = []

        def send(self, message):
            self.messages.append(message)

        def poll(self):
            return False

    conn = Sent()
    _stream((item for item in sized), conn)
    assert [kind for kind, _ in conn.messages[:4]] == ["status", "status", "status", "item"]


def test_the_pairs_used_last_stay_loaded_and_the_others_are_let_go(tiny_llama_dirs):
    first, second = (str(d) for d in tiny_llama_dirs)
    a, b, c = ModelSpec(first, "ngram"), ModelSpec(second, "ngram"), ModelSpec(first, "model", second)
    loaded, said = {}, []
    pair_a = _load(a, loaded, said.append, keep=2)
    b_target = weakref.ref(_load(b, loaded, said.append, keep=2)[0].model)
    again = _load(a, loaded, said.append, keep=2)
    assert again[0] is pair_a[0] and again[1] is pair_a[1]   # kept, and now the pair used last
    pair_c = _load(c, loaded, said.append, keep=2)
    assert list(loaded) == [a, c]           # b, used least recently, went
    assert b_target() is None               # and its target's memory with it
    assert pair_c[0] is pair_a[0]           # c shares a's target rather than loading it again
    assert sum(text.startswith("Loading the target") for text in said if text) == 2


def test_the_pairs_kept_are_read_from_the_environment(monkeypatch):
    monkeypatch.delenv("SPECVIZ_KEPT_PAIRS", raising=False)
    assert kept_pairs() == KEPT_PAIRS
    monkeypatch.setenv("SPECVIZ_KEPT_PAIRS", "5")
    assert kept_pairs() == 5
    monkeypatch.setenv("SPECVIZ_KEPT_PAIRS", "0")
    with pytest.raises(SpecvizError, match="SPECVIZ_KEPT_PAIRS must be a whole number >= 1, got '0'"):
        kept_pairs()
