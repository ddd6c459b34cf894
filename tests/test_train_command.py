"""`python -m specviz train-drafter`: settings refused before any model loads, checkpoints that are never
resumed or discarded silently, and weights that land at --out only once the run is done."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from specviz.cli import main
from specviz.corpus.store import Record
from specviz.errors import SpecvizError
from specviz.training import command
from specviz.training.config import TrainConfig


@pytest.mark.parametrize("argv, said", [
    (["--steps", "0"], "argument --steps: must be a whole number >= 1, got 0"),
    (["--batch-size", "-2"], "argument --batch-size: must be a whole number >= 1, got -2"),
    (["--eval-every", "0"], "argument --eval-every: must be a whole number >= 1, got 0"),
    (["--unroll", "0"], "argument --unroll: must be a whole number >= 1, got 0"),
    (["--warmup", "-1"], "argument --warmup: must be a whole number >= 0, got -1"),
    (["--threads", "0"], "argument --threads: must be a whole number >= 1, got 0"),
])
def test_counts_that_cannot_train_are_refused_by_the_parser(no_model_loads, capsys, argv, said):
    with pytest.raises(SystemExit) as stop:
        main(["train-drafter", *argv])
    assert stop.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.parametrize("argv, said", [
    (["--kind", "tiny", "--ttt"],
     "--feature-layers, --head-layers and --ttt shape an EAGLE head: they need --kind eagle, not tiny"),
    (["--kind", "medusa", "--head-layers", "2"],
     "--feature-layers, --head-layers and --ttt shape an EAGLE head: they need --kind eagle, not medusa"),
    (["--feature-layers", "4,x"], "--feature-layers takes layer numbers separated by commas, e.g. 4,15,-1; got '4,x'"),
    (["--feature-layers", "4,15,-1", "--ttt"],
     "a head of several feature layers learns from the corpus with training-time test: add --corpus --ttt"),
    (["--target", "some/model"], "--target trains a drafter for another model: name its weights file with --out"),
    (["--first-record", "5"], "--first-record picks the corpus's records to learn from: it needs --corpus"),
])
def test_settings_that_cannot_train_are_refused_before_any_model_loads(no_model_loads, capsys, argv, said):
    assert main(["train-drafter", *argv]) == 2
    assert said in capsys.readouterr().err


def test_every_option_says_what_it_does(no_model_loads):
    """`train-drafter --help` explains each option, the counts made in a loop among them, with its default."""
    parser = argparse.ArgumentParser()
    command.add_train_arguments(parser)
    options = [action for action in parser._actions if action.option_strings and action.dest != "help"]
    assert all(action.help for action in options), [a.dest for a in options if not a.help]
    by_name = {action.dest: action.help for action in options}
    assert "decoder layers in the head" in by_name["head_layers"] and "(default: %(default)s)" in by_name["steps"]


def test_bf16_on_a_cpu_that_emulates_it_is_warned_of(no_model_loads, monkeypatch, capsys):
    monkeypatch.setattr("specviz.device.native_bf16", lambda: False)
    with pytest.raises(AssertionError, match="a model was loaded"):
        main(["train-drafter", "--bf16", "--device", "cpu"])
    assert "--bf16: this CPU has no bf16 instructions (AVX512-BF16 or AMX), so bf16 is emulated" in \
        capsys.readouterr().err
    monkeypatch.setattr("specviz.device.native_bf16", lambda: True)
    with pytest.raises(AssertionError, match="a model was loaded"):
        main(["train-drafter", "--bf16", "--device", "cpu"])
    assert "bf16 is emulated" not in capsys.readouterr().err


def test_checkpoints_are_never_resumed_or_discarded_silently(tiny_llama_dirs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "head.safetensors"
    run = ["train-drafter", "--kind", "tiny", "--target", str(tiny_llama_dirs[0]), "--out", str(out), "--steps", "2",
           "--batch-size", "2", "--train-prompts", "4", "--max-new-tokens", "6", "--eval-every", "1",
           "--eval-prompts", "1", "--eval-tokens", "4", "--top-k", "4", "--threads", "1"]
    assert main([*run, "--feature-layers", "99", "--kind", "eagle"]) == 2
    assert "--feature-layers 99: the target has hidden states 0 to 2 (or -1 to -3 from the end)" in \
        capsys.readouterr().err

    assert main([*run, "--top-k", "100000"]) == 2
    assert "--top-k 100000: the target's vocabulary holds" in capsys.readouterr().err

    assert main([*run, "--resume"]) == 2
    said = capsys.readouterr().err
    assert "--resume: no checkpoint of a run with these settings" in said and "other settings" not in said

    assert main(run) == 0
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["bytes"] == out.stat().st_size and len(card["curve"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "head.json", "head.safetensors"]
    checkpoint = next((tmp_path / "cache" / "training").glob("checkpoint-tiny-*.pt"))

    assert main([*run, "--resume", "--lr", "0.01"]) == 2
    assert f"runs with other settings left {checkpoint.name} (a resumed run may change only --steps, " \
           "--eval-every, --eval-prompts, --eval-tokens, --out)" in capsys.readouterr().err

    weights = out.read_bytes()

    def stopped(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "heldout_acceptance", stopped)
    assert main([*run, "--steps", "3"]) == 130       # stopped in the held-out evaluation, after training
    said = capsys.readouterr().err
    assert f"starting over: the checkpoint an earlier run of these settings left is discarded (--resume continues " \
           f"it): {checkpoint}" in said
    assert f"stopped: the same command with --resume continues from {checkpoint}" in said
    assert out.read_bytes() == weights and json.loads(out.with_suffix(".json").read_text()) == card
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "head.json", "head.safetensors"]


def test_first_record_learns_from_the_records_grown_since(small, monkeypatch):
    records = [Record(np.arange(3, 9 + i, dtype=np.uint16), 3, ("chat", "math")[i % 2], "test", 0.0, -1, f"{i + 1:x}")
               for i in range(6)]
    monkeypatch.setattr("specviz.corpus.store.load_records", lambda **kwargs: records)
    monkeypatch.setattr("specviz.corpus.store.shard_paths", lambda: [])
    cfg = TrainConfig(corpus=True, first_record=4, top_k=4, window=16)
    learnt, _, _, card = command.corpus_data(cfg, small)
    assert learnt.lengths() == [len(r.tokens) for r in records[4:]]
    assert card["corpus_records"] == 6 and card["first_record"] == 4 and card["kinds"] == {"chat": 1, "math": 1}
    assert card["answer_tokens"] == sum(r.n_answer for r in records[4:])
    cfg.first_record = 6
    with pytest.raises(SpecvizError, match="--first-record 6: the corpus holds 6 training records, so none is left"):
        command.corpus_data(cfg, small)
