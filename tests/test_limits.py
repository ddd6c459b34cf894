"""A host's limits (prompt tokens, new tokens, run time) and the target's context, checked before any work."""

from __future__ import annotations

import pytest

from specviz import DecodeSettings, Run, SpecvizError, generate, load_model
from specviz.decoder_process import DecoderProcess, ModelSpec, follow_trace, trace_stream
from specviz.drafters import NgramDrafter
from specviz.limits import NO_LIMITS, Limits, host_limits

PROMPT = "w1 w2 w3 w1 w2"
SETTINGS = DecodeSettings(gamma=2, temperature=0, max_new_tokens=12)
TINY_CAP = "1e-9"   # seconds: every run is past it after its first iteration


@pytest.fixture(scope="module")
def tiny(tiny_llama_dirs):
    target = load_model(str(tiny_llama_dirs[0]))
    return target, NgramDrafter(target.vocab_size, target.device)


def test_limits_read_from_the_environment(monkeypatch):
    assert host_limits() == NO_LIMITS
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "100")
    monkeypatch.setenv("SPECVIZ_MAX_NEW_TOKENS", " 32 ")
    monkeypatch.setenv("SPECVIZ_MAX_RUN_SECONDS", "2.5")
    assert host_limits() == Limits(100, 32, 2.5)


@pytest.mark.parametrize("name,value", [("SPECVIZ_MAX_PROMPT_TOKENS", "lots"), ("SPECVIZ_MAX_NEW_TOKENS", "0"),
                                        ("SPECVIZ_MAX_NEW_TOKENS", "1.5"), ("SPECVIZ_MAX_RUN_SECONDS", "-1"),
                                        ("SPECVIZ_MAX_RUN_SECONDS", "nan"), ("SPECVIZ_MAX_RUN_SECONDS", "inf")])
def test_malformed_limits_are_refused_by_name(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(SpecvizError, match=f"{name} must be .*, got '{value}'"):
        host_limits()


def test_over_the_limits_is_refused_before_any_work(tiny, monkeypatch):
    target, drafter = tiny
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "4")
    with pytest.raises(SpecvizError, match="the prompt has 5 tokens; this host accepts at most 4"):
        Run(target, drafter, PROMPT, SETTINGS)
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "5")
    monkeypatch.setenv("SPECVIZ_MAX_NEW_TOKENS", "11")
    with pytest.raises(SpecvizError, match="max_new_tokens is 12; this host allows at most 11"):
        Run(target, drafter, PROMPT, SETTINGS)
    assert generate(target, drafter, PROMPT, SETTINGS, limits=NO_LIMITS).generated_ids   # the decoder's own runs


def test_a_run_longer_than_the_context_is_refused(tiny):
    target, drafter = tiny   # 256 positions
    prompt = " ".join(["w1"] * 250)
    with pytest.raises(SpecvizError, match=r"\(250 tokens\) and max_new_tokens \(12\) need 262 positions, but .* "
                                           "has a context of 256"):
        Run(target, drafter, prompt, SETTINGS)
    assert Run(target, drafter, prompt, DecodeSettings(max_new_tokens=6)).trace.prompt_ids


def test_the_run_time_limit_stops_after_an_iteration_and_says_so(tiny, monkeypatch):
    target, drafter = tiny
    full = generate(target, drafter, PROMPT, SETTINGS)
    assert full.stopped_by is None and len(full.iterations) > 1
    monkeypatch.setenv("SPECVIZ_MAX_RUN_SECONDS", TINY_CAP)
    cut = generate(target, drafter, PROMPT, SETTINGS)
    assert len(cut.iterations) == 1 and cut.generated_ids == full.iterations[0].emitted_ids
    assert cut.stopped_by == f"the host's run-time limit of {float(TINY_CAP):g} s (SPECVIZ_MAX_RUN_SECONDS)"
    assert cut.text and cut.wall_time > 0


def test_the_decoder_process_applies_the_limits(tiny_llama_dirs, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_RUN_SECONDS", TINY_CAP)
    monkeypatch.setenv("SPECVIZ_MAX_NEW_TOKENS", "12")
    process = DecoderProcess(threads=1)   # started here: it inherits the environment
    models = ModelSpec(str(tiny_llama_dirs[0]), "ngram")
    try:
        with process.lock:
            *_, trace = follow_trace(process.request(models, trace_stream, PROMPT, SETTINGS))
        assert len(trace.iterations) == 1 and "SPECVIZ_MAX_RUN_SECONDS" in trace.stopped_by
        with process.lock, pytest.raises(SpecvizError, match="this host allows at most 12"):
            list(follow_trace(process.request(models, trace_stream, PROMPT, DecodeSettings(max_new_tokens=13))))
    finally:
        process.close()
