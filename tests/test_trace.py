"""What the trace records, its summary statistics, and its JSON and DataFrame forms."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from synthetic import synthetic_trace, synthetic_tree_trace

from specviz import DecodeSettings, SpecvizError, Trace, generate, load_model, load_trace, trace_from_dict
from specviz.drafters import DraftModelDrafter
from specviz.study import Study, load_record
from specviz.trace import VERSION, DraftStep, text_segments
from specviz.tree import depths, is_chain

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "assets" / "examples").glob("*.json"))


@pytest.fixture(scope="module")
def trace(tiny_llama_dirs):
    target_dir, drafter_dir = tiny_llama_dirs
    target, drafter = load_model(str(target_dir)), load_model(str(drafter_dir))
    target.eos_ids = frozenset()
    return generate(target, DraftModelDrafter(drafter), "w1 w2 w3",
                    DecodeSettings(gamma=4, temperature=1.0, max_new_tokens=60, seed=3, record_top_k=5))


def test_the_context_is_the_prompt_as_the_target_read_it(trace, tiny_llama_dirs):
    tokenizer = load_model(str(tiny_llama_dirs[0])).tokenizer
    assert trace.context == tokenizer.decode(trace.prompt_ids) and trace.prompt in trace.context
    assert trace_from_dict(trace.to_dict()).context == trace.context


def test_each_iteration_is_consistent(trace):
    assert sum(len(it.emitted_ids) for it in trace.iterations) == len(trace.generated_ids) == 60
    for it in trace.iterations:
        verdicts = [d.verdict for d in it.drafts]
        assert verdicts[: it.accepted] == ["accepted"] * it.accepted
        assert [d.token_id for d in it.drafts[: it.accepted]] == it.emitted_ids[: it.accepted]
        for d in it.drafts:
            assert d.ratio == pytest.approx(d.p / d.q)
            assert 0 <= d.beta <= 1 + 1e-6 and len(d.p_top.ids) == 5 and len(d.q_top.ids) == 5
            assert d.u is not None
        if it.final.kind == "correction":
            rejected = it.drafts[it.accepted]
            assert rejected.verdict == "rejected" and rejected.u > rejected.ratio
            assert rejected.residual_mass == pytest.approx(1 - rejected.beta, abs=1e-5)
            assert it.final.sampled_from == "residual" and it.final.top == rejected.residual_top
            assert sum(rejected.residual_top.probs) <= 1 + 1e-6
            assert verdicts[it.accepted + 1:] == ["unverified"] * (len(verdicts) - it.accepted - 1)
        else:   # all accepted: a bonus; no draft (the last place of the budget): a target step
            assert it.final.kind == ("bonus" if it.drafted else "target") and it.accepted == it.drafted
        assert it.final.token_id == it.emitted_ids[-1]
        assert min(it.draft_time, it.verify_time, it.sample_time) > 0
    times = trace.commit_times()
    assert times == [it.elapsed for it in trace.iterations] and times == sorted(times)
    assert 0 < times[0] and times[-1] <= trace.wall_time


def test_drafts_leave_the_last_place_to_the_bonus(trace):
    """γ ≤ budget - 1: had every draft been accepted, the bonus takes the last place, so a draft there
    could add no token, only a drafter step; the iteration at budget 1 is the target's step alone."""
    written = 0
    for it in trace.iterations:
        assert it.drafted <= min(4, 60 - written - 1)
        written += len(it.emitted_ids)
    assert trace.iterations[-1].drafted == 0 or len(trace.iterations[-1].emitted_ids) > 1


def test_every_text_shown_is_the_tokenizers_across_runs_on_one_model(tiny_llama_dirs):
    target = load_model(str(tiny_llama_dirs[0]))
    for seed in (1, 2):   # the second run reads texts the first one decoded
        trace = generate(target, None, "w1 w2", DecodeSettings(temperature=1.0, max_new_tokens=8, seed=seed))
        for it in trace.iterations:
            ids = [it.final.token_id, *it.final.top.ids]
            assert [it.final.token, *it.final.top.tokens] == [target.tokenizer.decode([i]) for i in ids]
    assert set(target.texts) >= set(trace.generated_ids)


def test_summary_statistics(trace):
    s = trace.summary()
    accepted = sum(it.accepted for it in trace.iterations)
    rejections = sum(it.final.kind == "correction" for it in trace.iterations)
    assert s.alpha == pytest.approx(accepted / (accepted + rejections))
    assert s.accepted_length == pytest.approx(60 / len(trace.iterations))
    assert sum(s.accepted_histogram) == sum(1 for it in trace.iterations if it.drafted)
    first = [it for it in trace.iterations if it.drafted]
    assert s.position_acceptance[0] == pytest.approx(sum(it.accepted >= 1 for it in first) / len(first))
    assert s.c is not None and s.c > 0
    assert s.tokens_per_s == pytest.approx(60 / trace.wall_time)


def test_json_round_trip(trace, tmp_path):
    path = tmp_path / "trace.json"
    trace.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "specviz-trace" and data["version"] == VERSION
    loaded = load_trace(path)
    assert loaded == trace
    assert loaded.summary() == trace.summary()
    assert loaded.threads == torch.get_num_threads() and loaded.waited == 0.0


def test_a_trace_saved_before_blocks_reads_its_block_from_its_one_pass_drafts(trace):
    """Before version 6 a trace did not say its drafter's block: a draft of depth 2 or more made in one drafter
    pass gives it (the class pack's blockwise heads and Spec-Drafter), a token-by-token drafter's stays 0."""
    data = trace.to_dict()
    data["version"] = 5
    del data["block"]
    assert trace_from_dict(data).block == 0   # the fixture's drafter makes one pass a token
    for it in data["iterations"]:
        it["draft_calls"] = min(it["draft_calls"], 1)
    deepest = max(max(depths(it.parents)) for it in trace.iterations if it.drafted)
    assert deepest >= 2 and trace_from_dict(data).block == deepest
    shipped = load_record(next(path for path in EXAMPLES if path.name == "drafters.json"))
    blocks = {v.trace.drafter.split(" (")[0]: v.trace.block for v in shipped.variants}
    assert blocks["blockwise heads"] == blocks["Spec-Drafter"] == 4 and blocks["EAGLE head"] == 0


def test_traces_saved_before_remote_targets_load_as_exact_local_runs(trace):
    data = trace.to_dict()
    data["version"] = 3
    for it in data["iterations"]:
        del it["network_time"], it["server_time"], it["p_unknown"]
    for key in ("target_url", "target_model", "target_logprobs", "target_timeout_s"):
        del data["settings"][key]
    loaded = trace_from_dict(data)
    assert loaded.iterations == trace.iterations and loaded.approximate is None and not loaded.settings.target_url


def test_traces_saved_before_threads_and_waiting_were_recorded_load(trace):
    data = trace.to_dict()
    del data["threads"], data["waited"]
    loaded = trace_from_dict(data)
    assert (loaded.threads, loaded.waited) == (0, 0.0) and loaded.iterations == trace.iterations


def test_data_frames(trace):
    its, drafts = trace.iterations_frame(), trace.drafts_frame()
    assert len(its) == len(trace.iterations) and list(its["verify (ms)"]) == [
        1000 * it.verify_time for it in trace.iterations]
    assert len(drafts) == sum(it.drafted for it in trace.iterations)
    assert set(drafts["verdict"]) <= {"accepted", "rejected", "unverified"}


def test_text_segments_follow_decisions(trace):
    pieces = text_segments(trace)
    kinds = [kind for _, kind in pieces]
    assert kinds.count("rejected") == sum(it.final.kind == "correction" for it in trace.iterations)
    assert len([k for k in kinds if k != "rejected"]) == len(trace.generated_ids)


def test_recording_off_keeps_the_decisions(tiny_llama_dirs):
    target_dir, drafter_dir = tiny_llama_dirs
    target, drafter = load_model(str(target_dir)), load_model(str(drafter_dir))
    settings = DecodeSettings(gamma=3, max_new_tokens=20, seed=5)
    full = generate(target, DraftModelDrafter(drafter), "w1 w2", settings)
    bare = generate(target, DraftModelDrafter(drafter), "w1 w2", DecodeSettings(**{**settings.to_dict(),
                                                                                  "record": False}))
    assert bare.generated_ids == full.generated_ids
    assert all(not it.drafts for it in bare.iterations)
    assert bare.summary().alpha == full.summary().alpha


@pytest.mark.parametrize("content, message", [
    ("not json", r"not a specviz trace: .*bad\.json is not JSON"),
    ("[1, 2]", 'missing "format": "specviz-trace"'),
    ('{"format": "other"}', 'missing "format": "specviz-trace"'),
    ('{"format": "specviz-trace", "version": 99}', r"unsupported specviz trace version 99 \(expected 1 to \d+\)"),
    ('{"format": "specviz-trace", "version": 1, "prompt": "x"}', "not a valid specviz trace: it has no field 'iter"),
    ("[" * 100_000, "nests its JSON deeper than Python reads"),
])
def test_bad_trace_files_are_refused(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SpecvizError, match=message):
        load_trace(path)


@pytest.mark.parametrize("field, value, message", [
    ("gamma", 0, "gamma must be between 1 and 64, got 0"),
    ("gamma", "lots", "gamma must be a whole number, got 'lots'"),
    ("gamma", 2.5, "gamma must be a whole number, got 2.5"),
    ("temperature", "hot", "temperature must be a number, got 'hot'"),
    ("record", 1, "record must be true or false, got 1"),
    ("verify", None, "verify must be text, got None"),
    ("speed", 3, "its settings have no field 'speed'"),
])
def test_trace_from_dict_refuses_bad_settings_saying_which(trace, field, value, message):
    data = trace.to_dict()
    data["settings"][field] = value
    with pytest.raises(SpecvizError, match=f"^not a valid specviz trace: {message}$"):
        trace_from_dict(data)


def passes_lossless_test(step: DraftStep) -> bool:
    """The lossless rule's test as `verification.lossless` computes it, in float32: u·q < p′ (u < min(1, p′/q)
    for u < 1), with q = 1 for a picked node. A trace records u, q and p′ as float32 values, every digit kept
    by JSON, and ratio = p′/q in float64, so ratio·q rounds back to p′ exactly: no tolerance is needed."""
    q = step.q if step.sampled else 1.0
    u, q, p = (torch.tensor(x, dtype=torch.float32) for x in (step.u, q, step.ratio * q))
    return bool(u * q < p)


def check_u_against_verdicts(trace: Trace) -> int:
    """Under the lossless rule every tested draft was accepted exactly where u < min(1, p/q), and as often
    as uniform draws would be: within 4σ of Σ min(1, p/q); a rule that draws no u (greedy, β/τ) records
    none. Returns how many lossless tests were checked."""
    tested = []
    for it in trace.iterations:
        for step in it.drafts:
            if step.rule != "sampling":
                assert step.u is None, (it.index, step)
            elif step.verdict != "unverified":
                assert passes_lossless_test(step) == (step.verdict == "accepted"), (it.index, step)
                tested.append(step)
    kept = [min(1.0, step.ratio) for step in tested]
    sigma = math.sqrt(sum(k * (1 - k) for k in kept))
    assert abs(sum(s.verdict == "accepted" for s in tested) - sum(kept)) <= 4 * sigma
    return len(tested)


def runs(record: Trace | Study) -> list[Trace]:
    return [record.baseline, *(v.trace for v in record.variants)] if isinstance(record, Study) else [record]


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_every_shipped_trace_accepts_a_draft_exactly_where_u_is_within_the_ratio(path):
    for run in runs(load_record(path)):
        checked = check_u_against_verdicts(run)
        assert checked or run.settings.rule != "sampling" or not any(it.drafts for it in run.iterations)


SYNTHETIC = {"default": synthetic_trace(), "never": synthetic_trace(64, gamma=1, alpha=0.0, seed=1),
             "often": synthetic_trace(256, gamma=8, alpha=0.9, seed=2), "tree": synthetic_tree_trace()}


@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_traces_accept_a_draft_exactly_where_u_is_within_the_ratio(name):
    assert check_u_against_verdicts(SYNTHETIC[name]) > 0


def test_the_engine_accepts_a_draft_exactly_where_u_is_within_the_ratio(trace):
    assert check_u_against_verdicts(trace) > 0


def test_c_is_a_drafter_step_over_a_verify_pass_with_the_prompts_passes_left_out():
    """Each later iteration: 4 drafter steps of 5 ms and a 50 ms verify pass, c = 0.1; the first also read a long
    prompt (a 900 ms prefill, a draft model's 200 ms first step), which must not move c."""
    trace = synthetic_trace(64)
    steady = [replace(it, draft_calls=4, draft_time=0.02, verify_time=0.05) for it in trace.iterations]
    first = replace(steady[0], draft_time=0.2 + 0.015, verify_time=0.9)
    assert replace(trace, iterations=steady).summary().c == pytest.approx(0.1)
    assert replace(trace, iterations=[first, *steady[1:]]).summary().c == pytest.approx(0.1)
    only = replace(trace, iterations=[first]).summary().c   # nothing else to go by: the one there is
    assert only == pytest.approx((0.215 / 4) / 0.9)
    assert replace(trace, iterations=[replace(it, draft_calls=0) for it in steady]).summary().c is None
    # the target's token first (EAGLE, --first-target): the prefill drafts nothing, and the first draft reads
    # the prompt (a draft model's prefill, the head's window); a target step between drafts is no verify pass
    prefill = replace(steady[0], draft_calls=0, draft_time=0.0, verify_time=0.9)
    plain = replace(steady[2], draft_calls=0, draft_time=0.0, verify_time=0.01)
    mixed = [prefill, replace(steady[1], draft_time=0.2 + 0.015), plain, *steady[3:]]
    assert replace(trace, iterations=mixed).summary().c == pytest.approx(0.1)


def test_expected_alpha_averages_the_chances_the_verdicts_were_drawn_with():
    """Every synthetic draft has β = Σ min(p, q) = 0.55: E[β] is 0.55 exactly, α̂ only near it (u decides)."""
    trace = synthetic_trace(512, alpha=0.55)
    summary = trace.summary()
    assert summary.expected_alpha == pytest.approx(0.55, abs=1e-6) and summary.alpha != summary.expected_alpha
    picked = replace(trace, iterations=[replace(it, drafts=[replace(d, sampled=False, p=0.3) for d in it.drafts])
                                        for it in trace.iterations])
    assert picked.summary().expected_alpha == pytest.approx(0.3)   # a picked draft is kept with chance p(x̃)
    greedy = replace(trace, iterations=[replace(it, drafts=[replace(d, rule="greedy") for d in it.drafts])
                                        for it in trace.iterations])
    assert greedy.summary().expected_alpha is None
    tree = synthetic_tree_trace()
    trees = replace(tree, iterations=[it for it in tree.iterations if not is_chain(it.parents)])
    assert trees.iterations and trees.summary().expected_alpha is None   # a depth passes when any child does
