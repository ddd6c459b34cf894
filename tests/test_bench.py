"""The benchmark's report format and its greedy-equality check (tiny models, a few tokens; no timings)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from specviz import contention
from specviz.bench.markdown import to_markdown
from specviz.bench.measure import BASELINE, measure
from specviz.bench.methods import Method, MethodSpec, Outcome, engine_method
from specviz.bench.prompts import BenchPrompt, load_prompts
from specviz.bench.report import FORMAT, BenchResult, summarize
from specviz.cli import main
from specviz.errors import SpecvizError
from specviz.models import load_model
from specviz.settings import DecodeSettings

PROMPTS = [BenchPrompt("a", "chat", "w1 w2 w3"), BenchPrompt("b", "copy", "w4 w5 w4 w5 w4")]


def fake(name: str, family: str, drafter: str, ids: list[int], seconds: float, gamma: int | None = None,
         record: bool | None = None) -> Method:
    spec = MethodSpec(name, family, drafter, gamma, record)
    return Method(spec, lambda prompt, seed=0: Outcome(list(ids), seconds, seconds / 2, 3, accepted=2, evaluated=3,
                                               iterations=2, c=0.1 if drafter != "none" else None))


@pytest.fixture(scope="module")
def tiny(tiny_llama_dirs):
    return load_model(str(tiny_llama_dirs[0]))


def fake_methods(tiny, wrong: bool = False) -> list[Method]:
    """Methods that return fixed ids in fixed times; they hold the tiny model (for the memory column)."""
    return [replace(m, models=(tiny,)) for m in [
        fake(BASELINE, "engine", "none", [5, 6, 7, 8], 2.0, record=False),
        fake("hf generate", "hf", "none", [5, 6, 7, 8], 2.0),
        fake("engine ngram γ=4 rec on", "engine", "ngram", [5, 6, 9, 8] if wrong else [5, 6, 7, 8], 1.04, 4, True),
        fake("engine ngram γ=4 rec off", "engine", "ngram", [5, 6, 7, 8], 1.0, 4, False),
        fake("hf ngram γ=4", "hf", "ngram", [5, 6, 7, 8], 1.25, 4),
    ]]


def test_ratios_are_paired_medians(tiny):
    methods = fake_methods(tiny)
    runs = measure(methods, PROMPTS, repeats=2, warmup=0, greedy=True)
    rows, targets = summarize([m.spec for m in methods], runs)
    row = next(r for r in rows if r.method == "engine ngram γ=4 rec on" and r.category == "all")
    assert row.runs == 4 and row.failures == 0
    assert row.tokens_per_s.median == pytest.approx(4 / 1.04)
    assert row.speedup.median == pytest.approx(2.0 / 1.04)
    assert row.overhead.median == pytest.approx(0.04)
    assert row.vs_hf.median == pytest.approx(1.25 / 1.04) and row.hf_method == "hf ngram γ=4"
    assert row.cpu_speedup.median == pytest.approx(2.0 / 1.04)
    assert row.alpha == pytest.approx(2 / 3) and row.accepted_length == pytest.approx(2.0)
    assert {t.met for t in targets if "copy" in t.name} == {True}
    assert [t.met for t in targets if "overhead" in t.name] == [True]



def test_the_speedup_after_the_prefill_and_the_ceiling_the_prefill_sets(tiny):
    """The baseline spends 1.2 s of 2.0 before its first token: no drafter can pass 2.0 / 1.2 end to end.
    After the first iteration it writes 3 tokens in 0.8 s, the drafter 2 in 0.2 s: 10 / 3.75 times faster."""
    first = {BASELINE: (1.2, 1), "engine ngram γ=4 rec off": (0.8, 2)}
    methods = [replace(m, run=lambda prompt, seed=0, run=m.run, name=m.spec.name: replace(
        run(prompt, seed), first_seconds=first[name][0], first_tokens=first[name][1]))
        if m.spec.name in first else m for m in fake_methods(tiny)]
    runs = measure(methods, PROMPTS, repeats=2, warmup=0, greedy=True)
    rows, _ = summarize([m.spec for m in methods], runs)
    row = {(r.method, r.category): r for r in rows}
    assert row[BASELINE, "all"].first_share == pytest.approx(0.6)
    assert row["engine ngram γ=4 rec off", "copy"].after_first.median == pytest.approx((2 / 0.2) / (3 / 0.8))
    assert row["engine ngram γ=4 rec on", "all"].after_first is None   # no first iteration measured
    machine = {"device": "cpu", "device_name": "test", "platform": "x", "torch": "t", "threads": 1,
               "transformers": "t", "dtype": "float32"}
    result = BenchResult(machine, {"target": "tiny", "drafters": ["ngram"], "gammas": [4], "temperature": 0,
                                   "max_new_tokens": 4, "repeats": 2, "warmup": 0, "prompts": 2,
                                   "categories": {"chat": 1, "copy": 1}, "memory_source": "x", "greedy": True},
                         "bench", "today", [m.spec for m in methods], rows, [], runs)
    text = to_markdown(result)
    assert "| end-to-end ceiling 1/f | 1.67× | 1.67× |" in text and "| baseline: time before the first token | 60% |" \
        in text and "| engine ngram γ=4 rec off | 2.67× (2.67–2.67) |" in text
    assert "host's share" not in text   # on a GPU the CPU-time ratios say what they leave out
    assert "On a GPU it counts only the host's share" in to_markdown(replace(result, machine={**machine,
                                                                                           "device": "cuda:0"}))


def test_an_engine_run_times_its_first_iteration(tiny):
    method = engine_method(tiny, None, "none", DecodeSettings(max_new_tokens=6))
    out = method.run(PROMPTS[0])
    assert 0 < out.first_seconds < out.seconds and out.first_tokens == 1


def test_a_chain_held_to_a_node_budget_is_a_method_of_its_own(tiny):
    """`--gammas 2` and `--trees 2x1x4` run different drafts of the mixed drafter (a budget beyond γ lets the
    head's chain follow the copy's), so their rows must not share a name."""
    names = [engine_method(tiny, object(), "lookup+eagle", DecodeSettings(gamma=2, nodes=nodes)).spec.name
             for nodes in (0, 4)]
    assert names == ["engine lookup+eagle γ=2 rec on", "engine lookup+eagle tree 2x1x4 rec on"]


def test_each_repeat_samples_with_its_own_seed(tiny):
    """Repeat r runs every method with seed r (the warm-up with 0): sampled, the engine then writes a
    different text in each repeat, so a median is not one text's luck timed three times."""
    seeds: list[tuple[str, int]] = []
    methods = [replace(m, run=lambda prompt, seed=0, run=m.run, name=m.spec.name:
                       seeds.append((name, seed)) or run(prompt, seed)) for m in fake_methods(tiny)[:2]]
    measure(methods, PROMPTS[:1], repeats=3, warmup=1, greedy=True)
    assert sorted(seeds) == sorted((m.spec.name, seed) for m in methods for seed in (0, 0, 1, 2))
    sampled = engine_method(tiny, None, "none", DecodeSettings(temperature=1.0, max_new_tokens=12))
    texts = {tuple(sampled.run(PROMPTS[0], seed).ids) for seed in range(3)}
    assert len(texts) > 1 and sampled.run(PROMPTS[0], 1).ids == sampled.run(PROMPTS[0], 1).ids


def test_a_rate_over_no_measured_time_is_unknown(tiny):
    """A run too short for its clock has no rate: the CPU columns say unknown instead of dividing by zero."""
    methods = [replace(m, run=lambda prompt, seed=0, run=m.run: replace(run(prompt, seed), cpu_seconds=0.0))
               if m.spec.name == "engine ngram γ=4 rec on" else m for m in fake_methods(tiny)]
    rows, _ = summarize([m.spec for m in methods], measure(methods, PROMPTS, repeats=2, warmup=0, greedy=True))
    row = next(r for r in rows if r.method == "engine ngram γ=4 rec on" and r.category == "all")
    assert row.cpu_speedup is None and row.cpu_overhead is None and row.cpu_vs_hf is None
    assert row.speedup.median == pytest.approx(2.0 / 1.04)  # the wall clock measured it

def test_mismatch_is_reported_not_averaged(tiny):
    methods = fake_methods(tiny, wrong=True)
    runs = measure(methods, PROMPTS, repeats=1, warmup=0, greedy=True)
    bad = [r for r in runs if r.matches is False]
    assert [(r.method, r.first_mismatch) for r in bad] == [("engine ngram γ=4 rec on", 2)] * 2
    rows, targets = summarize([m.spec for m in methods], runs)
    row = next(r for r in rows if r.method == "engine ngram γ=4 rec on" and r.category == "all")
    assert row.failures == 2 and row.runs == 0
    assert row.tokens_per_s is None and row.speedup is None and row.overhead is None
    result = BenchResult({"device": "cpu", "device_name": "test", "platform": "test", "torch": "x", "threads": 1,
                          "transformers": "y", "dtype": "float32"},
                         {"target": "t", "drafters": ["ngram"], "gammas": [4], "temperature": 0.0, "greedy": True,
                          "max_new_tokens": 4, "repeats": 1, "warmup": 0, "prompts": 2, "categories": {"chat": 1},
                          "memory_source": "test"}, "cmd", "today", [m.spec for m in methods], rows, targets, runs)
    assert "FAILED: engine ngram γ=4 rec on on a (repeat 1) differs at token 2" in to_markdown(result)


def test_bench_command_on_tiny_pair(tiny_llama_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    target_dir, drafter_dir = tiny_llama_dirs
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"id": p.id, "category": p.category, "text": p.text}
                                               for p in PROMPTS]}))
    out, md = tmp_path / "bench.json", tmp_path / "BENCH.md"
    code = main(["bench", "--target", str(target_dir), "--drafters", "ngram,model", "--drafter-model",
                 str(drafter_dir), "--gammas", "2", "--draft-confidences", "0,0.3", "--max-new-tokens", "5",
                 "--trees", "3x2x4,auto",
                 "--repeats", "1", "--warmup", "0", "--threads", "1", "--prompts", str(prompts), "--out", str(out),
                 "--markdown", str(md)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["format"] == FORMAT and data["version"] == 1
    names = [m["name"] for m in data["methods"]]
    trees = [n for n in names if " tree " in n]
    assert len(trees) == 4 and trees[0] == "engine ngram tree 3x2x4 rec off"
    assert "engine model tree 3x2x4 rec off" in trees
    assert sum(n.startswith("engine model tree auto=") for n in trees) == 1
    chains = [n for n in names if n not in trees]
    assert chains == [BASELINE, "hf generate", "engine ngram γ=2 rec on", "engine ngram γ=2 rec off", "app ngram γ=2",
                     "engine ngram γ=2 stop<0.3 rec on", "engine ngram γ=2 stop<0.3 rec off", "app ngram γ=2 stop<0.3",
                     "hf ngram γ=2", "engine model γ=2 rec on", "engine model γ=2 rec off", "app model γ=2",
                     "engine model γ=2 stop<0.3 rec on", "engine model γ=2 stop<0.3 rec off",
                     "app model γ=2 stop<0.3", "hf model γ=2"]
    assert len(data["runs"]) == len(names) * len(PROMPTS)
    assert all(r["matches"] for r in data["runs"]), [r for r in data["runs"] if not r["matches"]]
    assert {r["category"] for r in data["rows"]} == {"all", "chat", "copy"}
    row = next(r for r in data["rows"] if r["method"] == "engine model γ=2 rec on" and r["category"] == "all")
    assert set(row["speedup"]) == {"median", "low", "high"} and row["alpha"] is not None and row["memory_mb"] > 0
    assert data["machine"]["threads"] == 1 and data["settings"]["greedy"] is True
    stop = next(r for r in data["rows"] if r["method"] == "engine model γ=2 stop<0.3 rec on" and r["category"] == "all")
    assert stop["confidence"] == 0.3 and stop["hf_method"] is None
    assert stop["overhead"] is not None  # paired with its own recording-off twin
    app = next(r for r in data["rows"] if r["method"] == "app model γ=2" and r["category"] == "all")
    assert app["engine_method"] == "engine model γ=2 rec on" and app["alpha"] == row["alpha"]
    assert all(app[key]["median"] > 0 for key in ("vs_engine", "verify_vs_engine", "draft_vs_engine"))
    app_runs = [r for r in data["runs"] if r["method"] == "app model γ=2"]
    assert app_runs and all(r["verify_seconds"] > 0 for r in app_runs)
    text = md.read_text()
    assert text.startswith("# Benchmarks") and "| method | tokens/s" in text and "### Targets" in text
    assert "packed once for oneDNN" in text
    assert data["settings"]["verify_cost"]["relative"][0] == 1.0 and "- verify cost (one target pass" in text
    assert "| app model γ=2 | engine model γ=2 rec on |" in text
    assert "app model γ=2 vs engine model γ=2 rec on, verify time per iteration (all prompts)" in text


def test_an_adaptive_bench_needs_no_fixed_chains(tiny_llama_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(contention, "BUSY_CORES", -1.0)   # every measurement counts as taken beside other work
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"id": p.id, "category": p.category, "text": p.text}
                                               for p in PROMPTS]}))
    out, md = tmp_path / "bench.json", tmp_path / "BENCH.md"
    assert main(["bench", "--target", str(tiny_llama_dirs[0]), "--drafters", "ngram", "--gammas", "", "--adaptive",
                 "--trees", "", "--no-hf", "--max-new-tokens", "5", "--repeats", "1", "--warmup", "0",
                 "--threads", "1", "--prompts", str(prompts), "--out", str(out), "--markdown", str(md)]) == 0
    data = json.loads(out.read_text())
    assert [m["name"] for m in data["methods"]] == [BASELINE, "engine ngram adaptive chains ≤8 rec off",
                                                     "engine ngram adaptive trees ≤8 rec off"]
    assert data["settings"]["gammas"] == [] and all(r["matches"] for r in data["runs"])
    assert "The adaptive ngram runs' sizing: the drafter's step was measured while other processes" in md.read_text()


def test_prompt_set_loads_with_categories():
    prompts = load_prompts()
    assert {p.category for p in prompts} == {"chat", "code", "copy"} and len({p.id for p in prompts}) == len(prompts)
    assert [p.category for p in load_prompts(categories=["copy"], per_category=2)] == ["copy", "copy"]


def test_several_prompt_sets_make_one_run_and_keep_their_categories_apart():
    from specviz.bench.prompts import DEFAULT_PROMPTS
    from specviz.corpus.store import CORPUS_DIR

    paths = f"{DEFAULT_PROMPTS},{CORPUS_DIR / 'heldout.json'}"
    prompts = load_prompts(paths, per_category=1)
    categories = [p.category for p in prompts]
    assert categories[:3] == ["chat", "code", "copy"] and "heldout/chat" in categories and "math" in categories
    assert len(set(categories)) == len(categories) == 3 + 9 and len({p.id for p in prompts}) == len(prompts)
    assert [p.category for p in load_prompts(paths, categories=["heldout/code"])] == ["heldout/code"] * 24
    with pytest.raises(SpecvizError, match="cannot read the prompt set missing.json"):
        load_prompts(f"{DEFAULT_PROMPTS},missing.json")


def test_a_benchmark_question_file_reads_as_a_prompt_set(tmp_path):
    """MT-bench's JSON Lines, as Spec-Bench ships it: each question's first turn, by its category."""
    questions = tmp_path / "question.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in [
        {"question_id": 81, "category": "writing", "turns": ["Compose a blog post.", "Rewrite it in limericks."]},
        {"question_id": 481, "category": "translation", "turns": ["Translate German to English: Guten Tag"]},
        {"question_id": 482, "category": "translation", "turns": ["Translate German to English: Danke"]}]) + "\n\n")
    prompts = load_prompts(questions, per_category=1)
    assert prompts == [BenchPrompt("writing-81", "writing", "Compose a blog post."),
                       BenchPrompt("translation-481", "translation", "Translate German to English: Guten Tag")]
    questions.write_text('{"question_id": 1, "category": "qa"}\n')
    with pytest.raises(SpecvizError, match="cannot read the prompt set .*question.jsonl: a prompt has no 'turns'"):
        load_prompts(questions)


def test_the_corpus_held_out_prompts_read_as_a_prompt_set():
    from specviz.corpus.prompts import KINDS
    from specviz.corpus.store import CORPUS_DIR

    prompts = load_prompts(CORPUS_DIR / "heldout.json", per_category=2)
    assert [p.category for p in prompts] == [k for k in KINDS for _ in range(2)]
    assert len({p.id for p in prompts}) == len(prompts)
    assert all(isinstance(p.text, list) and p.text[-1]["role"] == "user" for p in prompts)
    assert all(len(p.text) == 3 for p in prompts if p.category == "multiturn")   # the opening turn kept
