"""The drafter report: heads side by side on held-out conversations, kind by kind, and its coverage numbers."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from specviz import DecodeSettings, generate
from specviz.cli import main
from specviz.drafters.eagle import EagleHead
from specviz.drafters.weights import save_weights
from specviz.errors import SpecvizError
from specviz.training.config import TrainConfig
from specviz.training.drafter_report import (
    ReportSettings,
    by_kind,
    drafter_report,
    earlier_heads,
    markdown,
    outside_share,
    settings_record,
)
from specviz.training.train import model_config

HELDOUT = [{"kind": kind, "messages": [{"role": "user", "content": words}]}
           for kind, words in [("chat", "w1 w2 w3"), ("chat", "w4 w5"), ("code", "w6 w7 w8"), ("code", "w9")]]


def head_file(target, path, vocab, layers=(-1,), depth=1):
    torch.manual_seed(len(vocab))
    head = EagleHead.from_target(target, vocab, feature_layers=layers, layers=depth)
    save_weights(path, head.state_dict(), "eagle", model_config(TrainConfig(kind="eagle"), head), target)
    return path


def test_heads_measured_on_the_same_prompts_with_their_coverage(chatty, tmp_path):
    whole = head_file(chatty, tmp_path / "whole.safetensors", torch.arange(chatty.vocab_size))
    part = head_file(chatty, tmp_path / "part.safetensors", torch.arange(0, chatty.vocab_size, 2), layers=(0, 1),
                     depth=2)
    settings = ReportSettings(per_kind=1, max_new_tokens=6, gamma=3, tree=(2, 2, 3), temperatures=(0.0, 0.7))
    report = drafter_report(chatty, [whole, part], HELDOUT, settings)

    assert report["settings"]["prompts"] == {"chat": 1, "code": 1}
    greedy = [t for prompt in ("w1 w2 w3", "w6 w7 w8") for t in generate(
        chatty, None, [{"role": "user", "content": prompt}], DecodeSettings(temperature=0, max_new_tokens=6)
    ).generated_ids]   # the target alone's greedy tokens: what every head's greedy runs emit
    for head, vocab in zip(report["heads"], (range(chatty.vocab_size), range(0, chatty.vocab_size, 2))):
        assert [(r["kind"], r["temperature"]) for r in head["rows"]] == \
            [("chat", 0.0), ("code", 0.0), ("chat", 0.7), ("code", 0.7)]
        assert head["greedy_tokens"] == len(greedy)
        assert head["outside_draft_vocab"] == outside_share(list(vocab), greedy)
        for row in head["rows"]:
            assert row["chain"]["gamma"] == 3 and row["tree"]["gamma"] == 2 and row["chain"]["prompts"] == 1
            assert len(row["chain"]["by_position"]) == 3 and 1 <= row["tree"]["accepted_length"] <= 3
    assert report["heads"][0]["outside_draft_vocab"] == 0
    assert report["heads"][1]["feature_layers"] == [0, 1] and [h["layers"] for h in report["heads"]] == [1, 2]
    text = markdown(report)
    assert "EAGLE head (whole)" in text and "EAGLE head (part)" in text and "| pos 3 |" in text
    assert "| EAGLE head (part) | [0, 1] | 2 |" in text


def test_an_earlier_reports_heads_are_kept_only_under_the_same_target_and_settings(tmp_path):
    settings = ReportSettings(per_kind=1, max_new_tokens=6, gamma=3, tree=(2, 2, 3))
    record = settings_record(settings, by_kind(HELDOUT, 1))
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"format": "specviz-drafter-report", "target": "T", "settings": record,
                                   "heads": [{"name": "old"}]}))
    assert earlier_heads(earlier, "T", record) == [{"name": "old"}]
    with pytest.raises(SpecvizError, match=r"other settings \(gamma, max_new_tokens\)"):
        earlier_heads(earlier, "T", settings_record(replace(settings, gamma=4, max_new_tokens=8), by_kind(HELDOUT, 1)))
    with pytest.raises(SpecvizError, match="heads of 'T', not of 'U'"):
        earlier_heads(earlier, "U", record)
    (tmp_path / "trace.json").write_text(json.dumps({"format": "specviz-trace"}))
    with pytest.raises(SpecvizError, match="not a drafter report"):
        earlier_heads(tmp_path / "trace.json", "T", record)


def test_outside_share_counts_tokens_not_in_the_vocabulary():
    assert outside_share([1, 2, 3], [1, 4, 4, 2]) == 0.5
    assert outside_share([1], []) is None


def test_bad_tree_is_one_line(capsys):
    assert main(["drafter-report", "--tree", "4x2"]) == 2
    assert capsys.readouterr().err.strip() == "error: --tree: '4x2' is not DEPTHxTOPKxNODES (e.g. 4x2x8)"


def test_a_report_is_saved_after_each_head_so_a_stop_keeps_those_done(chatty, tmp_path, monkeypatch):
    import specviz.drafters

    heads = [head_file(chatty, tmp_path / f"{name}.safetensors", torch.arange(chatty.vocab_size)) for name in "ab"]
    real, calls, saved = specviz.drafters.load_trained, [], []

    def stops_at_the_second_head(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(specviz.drafters, "load_trained", stops_at_the_second_head)
    settings = ReportSettings(per_kind=1, max_new_tokens=4, gamma=2, tree=(2, 2, 3), temperatures=(0.0,))
    with pytest.raises(KeyboardInterrupt):
        drafter_report(chatty, heads, HELDOUT, settings, kept=[{"name": "earlier"}],
                       save=lambda report: saved.append(json.loads(json.dumps(report))))
    assert [[h["name"] for h in report["heads"]] for report in saved] == [["earlier", "EAGLE head (a)"]]


def test_missing_heads_are_named_before_any_model_loads(no_model_loads, capsys, tmp_path):
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    assert main(["drafter-report", "--heads", str(a), str(b)]) == 2
    assert capsys.readouterr().err.strip() == f"error: no head at {a}, {b}"
