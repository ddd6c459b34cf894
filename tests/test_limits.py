"""A host's limits (prompt tokens, new tokens, run time, study time) and the target's context, checked before any
work."""

from __future__ import annotations

import json

import pytest

from specviz import DecodeSettings, Run, SpecvizError, charts, generate, load_model, sweep
from specviz.decoder_process import DecoderProcess, ModelSpec, follow_trace, trace_stream
from specviz.drafters import NgramDrafter
from specviz.limits import NO_LIMITS, Limits, host_limits
from specviz.models import prompt_length
from specviz.study import study_from_dict

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
    monkeypatch.setenv("SPECVIZ_MAX_STUDY_SECONDS", "600")
    assert host_limits() == Limits(100, 32, 2.5, 600.0)


@pytest.mark.parametrize("name,value", [("SPECVIZ_MAX_PROMPT_TOKENS", "lots"), ("SPECVIZ_MAX_NEW_TOKENS", "0"),
                                        ("SPECVIZ_MAX_NEW_TOKENS", "1.5"), ("SPECVIZ_MAX_RUN_SECONDS", "-1"),
                                        ("SPECVIZ_MAX_RUN_SECONDS", "nan"), ("SPECVIZ_MAX_RUN_SECONDS", "inf"),
                                        ("SPECVIZ_MAX_STUDY_SECONDS", "0"), ("SPECVIZ_MAX_STUDY_SECONDS", "ten")])
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


def test_a_prompt_is_counted_with_the_tokenizer_alone_where_the_models_files_are_here(tiny, tiny_llama_dirs,
                                                                                     tmp_path, monkeypatch):
    """What a page checks against the host's limit before a run queues: the count the run itself makes, or
    None where only loading the model would tell (a hub id not downloaded, the embedded model not converted)."""
    target, _ = tiny
    assert prompt_length(str(tiny_llama_dirs[0]), PROMPT) == len(target.encode_prompt(PROMPT)) == 5
    assert prompt_length("nobody/no-such-model", PROMPT) is None
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    assert prompt_length(None, PROMPT) is None
    with pytest.raises(SpecvizError, match="the prompt has 5 tokens; this host accepts at most 4"):
        Limits(prompt_tokens=4).check_prompt(5)


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
        with process.turns:
            *_, trace = follow_trace(process.request(models, trace_stream, PROMPT, SETTINGS))
        assert len(trace.iterations) == 1 and "SPECVIZ_MAX_RUN_SECONDS" in trace.stopped_by
        with process.turns, pytest.raises(SpecvizError, match="this host allows at most 12"):
            list(follow_trace(process.request(models, trace_stream, PROMPT, DecodeSettings(max_new_tokens=13))))
    finally:
        process.close()


def test_a_run_over_the_limits_is_refused_before_its_pair_is_sized(tiny, monkeypatch):
    """A new pair's sizing takes minutes: a budget over the host's limit is refused before it starts."""
    from specviz import sizing

    target, drafter = tiny
    monkeypatch.setenv("SPECVIZ_MAX_NEW_TOKENS", "12")
    monkeypatch.setattr(sizing, "sizes", lambda *args: pytest.fail("the pair was sized"))
    with pytest.raises(SpecvizError, match="this host allows at most 12"):
        next(trace_stream(target, drafter, PROMPT, DecodeSettings(max_new_tokens=13, auto_size=True)))
    monkeypatch.setattr(sweep, "prepare", lambda *args: pytest.fail("a sweep's runs were sized"))
    with pytest.raises(SpecvizError, match="this host allows at most 12"):
        next(sweep.gamma_sweep(target, drafter, PROMPT, DecodeSettings(max_new_tokens=13), [1, 2], adaptive=True))


def test_the_races_later_rounds_start_no_run_past_the_study_time_limit(tiny, monkeypatch):
    target, drafter = tiny
    assert len(list(sweep.comparison_rounds(target, drafter, PROMPT, SETTINGS, 2))) == 4   # both, twice
    monkeypatch.setenv("SPECVIZ_MAX_STUDY_SECONDS", TINY_CAP)   # one whole round, baseline and speculative
    assert [run for run, _ in sweep.comparison_rounds(target, drafter, PROMPT, SETTINGS, 2)] == [-1, 0]


def test_the_study_time_limit_starts_no_run_past_it_and_the_study_says_so(tiny, monkeypatch):
    """Past the host's study time, a γ sweep of three rounds ends after its baseline and first variant (the least
    that still compares something); the study it keeps, and its file, say which limit stopped it."""
    target, drafter = tiny
    ran: list[int] = []
    generate = sweep.generate

    def counted(target, drafter, prompt, settings, **kwargs):
        ran.append(0 if drafter is None else settings.gamma)
        return generate(target, drafter, prompt, settings, **kwargs)

    monkeypatch.setattr(sweep, "generate", counted)
    full = list(sweep.gamma_sweep(target, drafter, PROMPT, SETTINGS, [1, 2], repeats=3))
    assert ran == [0, 1, 2] * 3 and all(study.stopped_by is None for study in full)
    ran.clear()
    monkeypatch.setenv("SPECVIZ_MAX_STUDY_SECONDS", TINY_CAP)
    cut = list(sweep.gamma_sweep(target, drafter, PROMPT, SETTINGS, [1, 2], repeats=3))
    assert ran == [0, 1] and cut[0].stopped_by is None
    stopped = study_from_dict(json.loads(json.dumps(cut[-1].to_dict())))
    assert [v.varied for v in stopped.variants] == [{"gamma": 1}] and stopped.rows()[1].speedup > 0
    assert stopped.stopped_by == f"the host's study time limit of {float(TINY_CAP):g} s (SPECVIZ_MAX_STUDY_SECONDS)"
    warn, note = charts.spread_note(stopped)
    assert warn and note.startswith(f"Stopped early by {stopped.stopped_by}: these are the runs it finished")
    assert "stopped_by" not in full[-1].to_dict()   # a study that ran to its end says nothing
