"""The distillation corpus: its storage, the target's batched answers, growing it, and the held-out line."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
import torch

from specviz import DecodeSettings, generate, load_model
from specviz.cli import main
from specviz.corpus import grow as growing
from specviz.corpus.answer import Ask, answer
from specviz.corpus.prompts import KINDS, SHARES, CorpusPrompt
from specviz.corpus.store import CORPUS_DIR, Record, load_heldout, load_records, load_shard, save_shard, shard_paths
from specviz.drafters.weights import fingerprint
from specviz.errors import SpecvizError


def fake_builder(kind: str, n: int, split: str, seed: int) -> list[CorpusPrompt]:
    """Prompts of tiny-vocabulary words; the same seed gives the same prompts."""
    rng = np.random.default_rng([KINDS.index(kind), seed])
    follow = "w3 w4" if kind == "multiturn" else ""
    return [CorpusPrompt(kind, ({"role": "user", "content": " ".join(f"w{i}" for i in rng.integers(2, 12, 4))},),
                         f"fake:{kind}:{seed}", follow) for _ in range(n)]


def test_quotas_move_the_corpus_towards_the_shares():
    assert sum(growing.quotas(Counter(), 1000).values()) == 1000
    assert growing.quotas(Counter(), 1000) == {k: pytest.approx(1000 * s, abs=1) for k, s in SHARES.items()}
    heavy = Counter({"chat": 5000})
    plan = growing.quotas(heavy, 300)
    assert sum(plan.values()) == 300 and plan["chat"] == 0


def test_a_shard_reads_back_as_written(tmp_path):
    records = [Record(np.array([5, 6, 7, 49151], dtype=np.uint16), 2, "math", "topic:x", 0.8, 11, "ab"),
               Record(np.array([1, 2, 3], dtype=np.uint16), 3, "chat", "topic:y", 0.0, -1, "cd")]
    path = tmp_path / "shards" / "one.npz"
    save_shard(path, records, {"dtype": "float32"})
    back, meta = load_shard(path)
    assert meta["dtype"] == "float32" and meta["format"] == "specviz-corpus"
    assert [(r.tokens.tolist(), r.n_prompt, r.kind, r.source, r.temperature, r.seed, r.digest) for r in back] == \
        [(r.tokens.tolist(), r.n_prompt, r.kind, r.source, r.temperature, r.seed, r.digest) for r in records]
    assert back[0].answer.tolist() == [7, 49151] and back[1].n_answer == 0
    assert [p.name for p in tmp_path.joinpath("shards").iterdir()] == ["one.npz"]  # no temporary file left


def test_a_write_cut_short_leaves_the_shard_as_it_was(tmp_path, monkeypatch):
    """A stop (Ctrl-C, SIGTERM) inside the write keeps the previous shard, and the half file is never a shard."""
    path = tmp_path / "shards" / "one.npz"
    save_shard(path, [Record(np.array([5, 6, 7], dtype=np.uint16), 2, "math", "topic:x", 0.0, -1, "ab")], {})
    real = np.savez_compressed

    def stopped_midway(file, **arrays):
        real(file, **arrays)
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", stopped_midway)
    with pytest.raises(KeyboardInterrupt):
        save_shard(path, [Record(np.array([1, 2], dtype=np.uint16), 1, "chat", "topic:y", 0.0, -1, "cd")] * 2, {})
    assert shard_paths(tmp_path) == [path] and [r.digest for r in load_records(tmp_path)] == ["ab"]
    assert [p.name for p in path.parent.iterdir()] == ["one.npz"]   # and the half-written temporary is gone


def test_a_damaged_shard_or_a_wrong_folder_is_a_one_line_error(tmp_path, capsys):
    assert main(["corpus", "stats", "--dir", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip() == f"error: no corpus folder at {tmp_path / 'nowhere'} (python -m " \
        f"specviz corpus grow --dir {tmp_path / 'nowhere'} starts one)"
    save_shard(tmp_path / "shards" / "one.npz", [Record(np.array([5, 6], dtype=np.uint16), 1, "chat", "x", 0.0, -1,
                                                        "ab")], {})
    cut = tmp_path / "shards" / "two.npz"
    cut.write_bytes((tmp_path / "shards" / "one.npz").read_bytes()[:40])
    for action in ("stats", "coverage"):
        assert main(["corpus", action, "--dir", str(tmp_path)]) == 2
        assert capsys.readouterr().err.startswith(f"error: {cut} is not a readable corpus shard (BadZipFile")
    np.savez_compressed(cut, meta=np.array('{"format": "something else"}'))
    with pytest.raises(SpecvizError, match="two.npz is not a specviz corpus shard .format 'something else'.$"):
        load_records(tmp_path)


def test_held_out_prompts_are_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    from specviz import files
    from specviz.corpus import store

    with pytest.raises(SpecvizError, match="no held-out prompts at .*: python -m specviz corpus heldout writes them"):
        load_heldout(tmp_path)
    store.save_heldout([{"kind": "chat", "messages": []}], tmp_path)

    def stopped(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", stopped)
    with pytest.raises(KeyboardInterrupt):
        store.save_heldout([{"kind": "code", "messages": []}], tmp_path)
    assert load_heldout(tmp_path) == [{"kind": "chat", "messages": []}]


def test_batched_answers_are_the_targets_own(small):
    """Greedy rows equal the decoder's target-alone greedy output; a sampled row depends on its seed only."""
    prompts = [[3, 4, 5], [6, 7, 8, 9, 10, 11], [2]]
    greedy = answer(small, [Ask(p) for p in prompts], max_new_tokens=12)
    for p, ids in zip(prompts, greedy):
        alone = generate(small, None, " ".join(f"w{i - 3}" for i in p), DecodeSettings(temperature=0,
                                                                                       max_new_tokens=12), chat=False)
        assert alone.prompt_ids == p and ids == alone.generated_ids
    mixed = answer(small, [Ask(prompts[0], 1.0, 5), Ask(prompts[1], 0.9, 6), Ask(prompts[2])], max_new_tokens=12)
    assert mixed[1] == answer(small, [Ask(prompts[1], 0.9, 6)], max_new_tokens=12)[0]
    assert mixed[2] == greedy[2]
    draws = {tuple(answer(small, [Ask(prompts[0], 1.0, seed)], max_new_tokens=6)[0]) for seed in range(8)}
    assert len(draws) > 1


def test_sampled_answers_follow_the_targets_distribution(small):
    """The Gumbel-max draw at T samples softmax(logits / T): first tokens of many rows, chi-square."""
    from scipy.stats import chisquare

    prompt, temperature, rows = [3, 4, 5], 0.8, 2000
    with torch.no_grad():
        logits = small.model(torch.tensor([prompt])).logits[0, -1].float()
    p = torch.softmax(logits.double() / temperature, -1).numpy()
    first = [ids[0] for ids in answer(small, [Ask(prompt, temperature, seed) for seed in range(rows)], 1)]
    seen = np.bincount(first, minlength=len(p))
    keep = p * rows >= 5   # tokens too rare to test alone share one bin
    expected, observed = p[keep] * rows, seen[keep]
    if not keep.all():
        expected, observed = np.append(expected, p[~keep].sum() * rows), np.append(observed, seen[~keep].sum())
    assert chisquare(observed, expected).pvalue > 1e-4


@pytest.mark.parametrize("stop_in", ["answer", "save_shard"])   # answering the third batch, or writing it
def test_growing_adds_new_prompts_and_keeps_finished_batches(chatty, tmp_path, monkeypatch, stop_in):
    monkeypatch.setattr(growing, "build_prompts", fake_builder)
    settings = growing.GrowSettings(answers=40, max_new_tokens=6, batch_size=8)
    first = growing.grow(chatty, settings, {"dtype": "float32"}, tmp_path, log=lambda _: None)
    records = load_records(tmp_path)
    assert len(records) == 40 and len({r.digest for r in records}) == 40
    assert Counter(r.kind for r in records) == Counter({k: v for k, v in growing.quotas(Counter(), 40).items() if v})
    assert all(0 < r.n_answer <= 6 and r.n_prompt > 0 for r in records)
    assert {r.temperature for r in records} <= {0.0, *growing.TEMPERATURES}
    multi = [r for r in records if r.kind == "multiturn"]
    assert multi and all(r.prompt.tolist().count(chatty.tokenizer.convert_tokens_to_ids("w3")) >= 1 for r in multi)

    calls, real = [], getattr(growing, stop_in)

    def dies_after_two_batches(*args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(growing, stop_in, dies_after_two_batches)
    said = []
    with pytest.raises(KeyboardInterrupt):
        growing.grow(chatty, settings, {"dtype": "float32"}, tmp_path, log=said.append)
    shards = shard_paths(tmp_path)
    assert len(shards) == 2 and first in shards
    kept = load_records(tmp_path)
    assert 40 < len(kept) < 80 and len({r.digest for r in kept}) == len(kept)  # nothing answered twice
    second = next(path for path in shards if path != first)
    assert said[-1] == f"stopped: {len(kept) - 40} finished answers kept in {second}"


def test_a_corpus_answered_by_another_target_is_refused(chatty, tiny_llama_dirs, tmp_path, monkeypatch):
    """Each shard keeps who answered; growing or training for another model stops with the shard named, and a
    shard kept before fingerprints were is matched by its target's name."""
    monkeypatch.setattr(growing, "build_prompts", fake_builder)
    shard = growing.grow(chatty, growing.GrowSettings(answers=4, max_new_tokens=3, batch_size=4), {}, tmp_path,
                         log=lambda _: None)
    records, meta = load_shard(shard)
    assert (meta["target"], meta["target_fingerprint"]) == (chatty.name, fingerprint(chatty))
    assert len(load_records(tmp_path, chatty)) == 4
    other = load_model(str(tiny_llama_dirs[1]))   # the same shapes, other weights
    with pytest.raises(SpecvizError, match=f"{shard.name} holds answers of .*not of '{other.name}'"):
        load_records(tmp_path, other)
    with pytest.raises(SpecvizError, match="holds answers of"):
        growing.grow(other, growing.GrowSettings(answers=4), {}, tmp_path, log=lambda _: None)
    save_shard(shard, records, {"target": chatty.name})   # kept before fingerprints
    assert len(load_records(tmp_path, chatty)) == 4
    save_shard(shard, records, {"target": "another-model"})
    with pytest.raises(SpecvizError, match="'another-model' \\(fingerprint not kept\\)"):
        load_records(tmp_path, chatty)


def test_a_folder_two_targets_answered_into_is_refused_without_a_target(chatty, tmp_path, monkeypatch, capsys):
    """Token ids mean one tokenizer's text: stats and coverage, which load no model, still refuse a mixed folder."""
    monkeypatch.setattr(growing, "build_prompts", fake_builder)
    shard = growing.grow(chatty, growing.GrowSettings(answers=4, max_new_tokens=3, batch_size=4), {}, tmp_path,
                         log=lambda _: None)
    assert main(["corpus", "stats", "--dir", str(tmp_path)]) == 0
    assert f"answered by {chatty.name}" in capsys.readouterr().out
    records, meta = load_shard(shard)
    save_shard(shard.with_name("~" + shard.name), records, {**meta, "target_fingerprint": "0" * 16})  # read second
    with pytest.raises(SpecvizError, match=f"~{shard.name} holds answers of .*not of '{chatty.name}'"):
        load_records(tmp_path)
    for action in ("stats", "coverage"):
        assert main(["corpus", action, "--dir", str(tmp_path)]) == 2
        assert "holds answers of" in capsys.readouterr().err


def test_the_shipped_corpus_is_the_embedded_targets(embedded):
    assert len(load_records(CORPUS_DIR, embedded)) == len(load_records(CORPUS_DIR))


def test_bad_corpus_arguments_are_one_line_errors(capsys, tmp_path):
    assert main(["corpus", "grow", "--answers", "0", "--dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "error: --answers, --max-new-tokens, --batch-size and --per-kind " \
                                             "must be at least 1"
    assert main(["corpus", "grow", "--greedy-share", "1.5", "--dir", str(tmp_path)]) == 2
    assert "--greedy-share must be between 0 and 1" in capsys.readouterr().err


def test_the_shipped_corpus_never_holds_a_heldout_prompt():
    """Training reads the shards; the held-out prompts stay out of every one of them."""
    heldout = load_heldout(CORPUS_DIR)
    assert Counter(p["kind"] for p in heldout) == Counter(dict.fromkeys(KINDS, len(heldout) // len(KINDS)))
    assert len(heldout) // len(KINDS) >= 20
    keys, sources = {p["key"] for p in heldout}, {p["source"] for p in heldout}
    records = load_records(CORPUS_DIR)
    assert records and not keys & {r.digest for r in records}
    assert not sources & {r.source for r in records}
    assert all(m["role"] == "assistant" for p in heldout if p["kind"] == "multiturn" for m in p["messages"][1:2])


def test_coverage_sizes_the_draft_vocabulary_on_the_validation_slice():
    from specviz.corpus.command import coverage
    from specviz.corpus.store import split_validation

    rng = np.random.default_rng(0)
    records = [Record(np.concatenate([[1, 2], rng.zipf(1.3, 60) % 5000]).astype(np.uint16), 2, "chat", "t", 0.0, -1,
                      f"{i:x}") for i in range(400)]
    train, validation = split_validation(records)
    assert len(validation) == 10 and all(int(r.digest, 16) % 40 == 0 for r in validation)
    assert len(train) == 390 and not {id(r) for r in train} & {id(r) for r in validation}
    shares = [float(line.split("|")[2].strip().rstrip("%")) for line in coverage(records).splitlines()
              if line.startswith("| ") and line[2].isdigit()]
    assert len(shares) == 7 and shares == sorted(shares, reverse=True) and shares[0] > shares[-1]
    with pytest.raises(SpecvizError, match="no greedy validation answers"):
        coverage(records[1:39])


def test_a_command_stopped_by_ctrl_c_says_so_and_exits_130(monkeypatch, capsys, tmp_path):
    from specviz.corpus import command

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "stats", interrupted)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    assert main(["corpus", "stats", "--dir", str(tmp_path)]) == 130
    assert capsys.readouterr().err.strip() == "stopped"
    # the command's handlers go with it
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


SIGNALLED = """
import os, signal, sys, time
from specviz.cli import main
from specviz.corpus import command

signal.signal(signal.SIGINT, signal.SIG_IGN)   # as a shell starts a job in the background (`&`, nohup)

def signalled(*args):
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
    time.sleep(60)

command.stats = signalled
sys.exit(main(["corpus", "stats", "--dir", sys.argv[1]]))
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_background_command_stopped_by_a_signal_stops_as_cleanly_as_ctrl_c(tmp_path, name):
    """`kill`, `kill -INT` or `timeout` reach a background run, where the shell has Ctrl-C ignored: the same
    clean stop."""
    run = subprocess.run([sys.executable, "-c", SIGNALLED, str(tmp_path), name], capture_output=True, text=True)
    assert run.returncode == 128 + getattr(signal, name) and run.stderr.rstrip().endswith("stopped")
