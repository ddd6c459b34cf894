"""KV-cache rollback: a cached run and a run that recomputes everything decide the same things."""

from __future__ import annotations

import pytest

from specviz import DecodeSettings, Run, load_model
from specviz.drafters import DraftModelDrafter


def run(target, drafter, settings, use_cache: bool):
    r = Run(target, DraftModelDrafter(drafter, use_cache=use_cache), "w1 w2 w3", settings, use_cache=use_cache)
    return list(r), r.trace


@pytest.mark.parametrize("dirs", ["tiny_llama_dirs", "tiny_t5_dirs"])
def test_cached_and_uncached_runs_give_identical_traces(request, dirs):
    target_dir, drafter_dir = request.getfixturevalue(dirs)
    target, drafter = load_model(str(target_dir)), load_model(str(drafter_dir))
    target.eos_ids = frozenset()  # long runs, so rejections and rollbacks happen many times
    settings = DecodeSettings(gamma=4, temperature=1.0, max_new_tokens=40, seed=7)
    cached_its, cached = run(target, drafter, settings, use_cache=True)
    fresh_its, fresh = run(target, drafter, settings, use_cache=False)
    assert cached.generated_ids == fresh.generated_ids
    assert any(it.final.kind == "correction" for it in cached_its)  # rollback was exercised
    for a, b in zip(cached_its, fresh_its, strict=True):
        assert (a.drafted, a.accepted, a.emitted_ids) == (b.drafted, b.accepted, b.emitted_ids)
        for da, db in zip(a.drafts, b.drafts, strict=True):
            assert (da.token_id, da.verdict, da.u) == (db.token_id, db.verdict, db.u)
            assert da.p == pytest.approx(db.p, abs=1e-5) and da.q == pytest.approx(db.q, abs=1e-5)


def test_same_seed_same_trace_other_seed_other_trace(tiny_llama_dirs):
    target_dir, drafter_dir = tiny_llama_dirs
    target, drafter = load_model(str(target_dir)), load_model(str(drafter_dir))
    target.eos_ids = frozenset()
    settings = DecodeSettings(gamma=3, temperature=1.0, max_new_tokens=30, seed=11)
    first = run(target, drafter, settings, use_cache=True)[1].to_dict()
    again = run(target, drafter, settings, use_cache=True)[1].to_dict()
    other = run(target, drafter, DecodeSettings(**{**settings.to_dict(), "seed": 12}), use_cache=True)[1].to_dict()
    for d in (first, again, other):
        d.pop("wall_time"), d.pop("summary"), [it.pop(k) for it in d["iterations"]
                                               for k in ("draft_time", "verify_time", "sample_time", "elapsed")]
    assert first == again
    assert first["generated_ids"] != other["generated_ids"]
