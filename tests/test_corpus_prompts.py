"""The corpus's prompt builder: every kind, deterministic, distinct, split cleanly, long where it
should be, and standing up on a machine that lacks some of its sources."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import specviz.corpus.prompts as prompts_package
from specviz.corpus.prompts import KINDS, SHARES, CorpusPrompt, build_prompts, catalogs, passages, stdlib_source
from specviz.corpus.prompts.bugs import inject_bug
from specviz.corpus.prompts.cleaning import clean_debian_copyright, clean_markup
from specviz.corpus.prompts.splits import HELDOUT_SHARE, split_of
from specviz.corpus.prompts.typos import add_typos
from specviz.errors import SpecvizError

MATERIAL_KINDS = ("code", "summarize", "rag")
BENCHMARK_OPENINGS = (   # well-known public benchmark questions: none may appear in the corpus
    "Compose an engaging travel blog post about a recent trip to Hawaii",
    "Draft a professional email seeking your supervisor's feedback",
    "Imagine you are writing a blog post comparing two popular smartphone models",
    "Natalia sold clips to 48 of her friends in April",
    "Weng earns $12 an hour for babysitting",
    "Betty is saving money for a new wallet",
    "Check if in given list of numbers, are any two numbers closer to each other than",
    "def has_close_elements",
    "Give three tips for staying healthy",
    "What are the three primary colors",
    "When did Virgin Australia start operating",
    "Which is a species of fish? Tope or Rope",
)


def tokens(prompt: CorpusPrompt, chars_per_token: float = 4.0) -> float:
    """A prompt's rough length in tokens."""
    return sum(len(m["content"]) for m in prompt.messages) / chars_per_token


def key(prompt: CorpusPrompt) -> tuple:
    return tuple(m["content"] for m in prompt.messages), prompt.follow_up


@pytest.fixture(scope="module")
def both_splits() -> dict[str, tuple[list[CorpusPrompt], list[CorpusPrompt]]]:
    """300 training and 300 held-out prompts of every kind."""
    return {kind: (build_prompts(kind, 300, "train", 0), build_prompts(kind, 300, "heldout", 0)) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_builds_n_distinct_prompts_the_same_every_time(kind):
    first = build_prompts(kind, 60, "train", 7)
    assert first == build_prompts(kind, 60, "train", 7)
    assert len(first) == 60 and len({key(p) for p in first}) == 60
    for prompt in first:
        assert prompt.kind == kind and prompt.source
        assert prompt.messages[-1]["role"] == "user"
        assert all(m["role"] in ("user", "assistant") and m["content"].strip() for m in prompt.messages)


@pytest.mark.parametrize("kind", KINDS)
def test_other_seeds_give_other_prompts(kind):
    one = {key(p) for p in build_prompts(kind, 60, "train", 1)}
    two = {key(p) for p in build_prompts(kind, 60, "train", 2)}
    assert len(one & two) < 15


def test_prompts_are_the_same_in_another_process():
    """Nothing depends on the interpreter's hash seed or on what was built before."""
    script = ("import hashlib, json; from specviz.corpus.prompts import KINDS, build_prompts; "
              "print(hashlib.sha256(json.dumps([[p.messages, p.source, p.follow_up] for k in KINDS "
              "for p in build_prompts(k, 12, 'heldout', 3)]).encode()).hexdigest())")
    here = hashlib.sha256(json.dumps([[p.messages, p.source, p.follow_up] for k in KINDS
                                      for p in build_prompts(k, 12, "heldout", 3)]).encode()).hexdigest()
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    there = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env,
                           cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    assert here == there


@pytest.mark.parametrize("kind", KINDS)
def test_train_and_heldout_share_no_source_and_no_prompt(kind, both_splits):
    train, heldout = both_splits[kind]
    assert len(train) == len(heldout) == 300
    assert not {p.source for p in train} & {p.source for p in heldout}
    assert not {key(p) for p in train} & {key(p) for p in heldout}
    assert not {p.text for p in train} & {p.text for p in heldout}


def test_about_a_tenth_of_all_sources_is_held_out():
    keys = [f"topic:{i}" for i in range(20_000)]
    share = sum(split_of(k) == "heldout" for k in keys) / len(keys)
    assert abs(share - HELDOUT_SHARE) < 0.01
    assert split_of("topic:volcanoes") == split_of("topic:volcanoes")


def test_shares_cover_every_kind_sum_to_one_and_chat_leads():
    assert set(SHARES) == set(KINDS)
    assert sum(SHARES.values()) == pytest.approx(1.0)
    assert max(SHARES, key=SHARES.get) == "chat"
    assert all(share > 0 for share in SHARES.values())


@pytest.mark.parametrize("kind", MATERIAL_KINDS)
def test_code_passages_and_documents_come_long(kind, both_splits):
    train, _ = both_splits[kind]
    lengths = [tokens(p, 3.5 if kind == "code" else 4.0) for p in train]
    assert sum(n >= 300 for n in lengths) >= (30 if kind == "code" else 250)
    assert max(lengths) <= 2_300
    if kind != "code":
        assert sum(n >= 1_000 for n in lengths) >= 30


def test_summarize_passages_are_300_to_2000_tokens(both_splits):
    train, heldout = both_splits["summarize"]
    assert all(280 <= tokens(p) <= 2_100 for p in train + heldout)


def test_rag_prompts_hold_three_to_six_numbered_documents(both_splits):
    headers = re.compile(r'^(?:\[(\d)\] |Document (\d):|Source (\d) \(|### Doc (\d)|<doc id="(\d)">|\((\d)\) )', re.M)
    train, heldout = both_splits["rag"]
    for prompt in train + heldout:
        numbers = sorted({int(n) for match in headers.findall(prompt.text) for n in match if n})
        assert numbers == list(range(1, len(numbers) + 1)) and 3 <= len(numbers) <= 6, prompt.text[:300]


def test_only_multiturn_prompts_have_a_follow_up(both_splits):
    for kind, (train, heldout) in both_splits.items():
        for prompt in train + heldout:
            assert bool(prompt.follow_up.strip()) == (kind == "multiturn"), prompt
            assert len(prompt.messages) == 1


@pytest.mark.parametrize("args, message", [
    (("poetry", 3, "train", 0), "unknown prompt kind 'poetry'"),
    (("chat", 3, "test", 0), "unknown split 'test'"),
    (("chat", -1, "train", 0), "must be a whole number"),
    (("chat", 2.5, "train", 0), "must be a whole number"),
])
def test_bad_input_is_a_clear_one_line_error(args, message):
    with pytest.raises(SpecvizError, match=message) as error:
        build_prompts(*args)
    assert "\n" not in str(error.value)
    assert isinstance(error.value, ValueError)


def test_zero_prompts_is_an_empty_list():
    assert build_prompts("rag", 0, "heldout", 0) == []


def test_no_prompt_copies_a_public_benchmark_question(both_splits):
    openings = [o.lower() for o in BENCHMARK_OPENINGS]
    for train, heldout in both_splits.values():
        for prompt in train + heldout:
            text = (" ".join(m["content"] for m in prompt.messages) + " " + prompt.follow_up).lower()
            assert not [o for o in openings if o in text], prompt


def test_variety_many_openings_and_some_typos_and_instructions(both_splits):
    chat, _ = both_splits["chat"]
    assert len({" ".join(p.text.split()[:3]) for p in chat}) > 100
    assert any(p.text.startswith(("You are", "###", "System:", "Instructions:", "Act as")) for p in chat)
    assert any(p.text[:1].islower() for p in chat)


def test_code_prompts_edit_real_standard_library_code_and_write_new_code(both_splits):
    train, _ = both_splits["code"]
    edits = [p for p in train if p.source.startswith("stdlib:")]
    assert any(p.source.startswith(("spec:", "sql:", "shell:", "program:")) for p in train)
    assert sum("def " in p.text or "class " in p.text for p in edits) == len(edits)
    if not stdlib_source.stdlib_modules():
        pytest.skip("this Python has no standard library source to edit")
    assert 90 <= len(edits) <= 210


def test_translation_uses_the_catalogs_in_several_languages(both_splits):
    train, _ = both_splits["translation"]
    languages = {p.source.split(":")[1] for p in train if p.source.startswith("locale:")}
    if not catalogs.messages("French"):
        pytest.skip("this machine has no gettext catalogs to translate from")
    assert len(languages) >= 8


@pytest.fixture
def bare_machine(monkeypatch):
    """A machine without licences, package docs, site-packages or gettext catalogs (caches emptied
    before and after)."""
    missing = Path("/nonexistent-for-this-test")
    monkeypatch.setattr(passages, "LICENSES", missing)
    monkeypatch.setattr(passages, "DOCS", missing)
    monkeypatch.setattr(passages, "site_packages", lambda: [])
    monkeypatch.setattr(catalogs, "LOCALES", missing)
    clear_caches()
    yield monkeypatch
    clear_caches()


def clear_caches() -> None:
    for module in vars(prompts_package).values():
        if isinstance(module, types.ModuleType):
            for thing in vars(module).values():
                if hasattr(thing, "cache_clear"):
                    thing.cache_clear()


@pytest.mark.usefixtures("bare_machine")
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_still_builds_from_the_standard_library_alone(kind):
    built = build_prompts(kind, 20, "train", 0)
    assert len(built) == 20
    if kind in ("summarize", "rag", "rewrite"):
        assert all(p.source.startswith(("stdlib:", "draft:")) for p in built)


def test_a_kind_with_no_source_at_all_says_so(bare_machine):
    bare_machine.setattr(stdlib_source, "stdlib_modules", lambda: {})
    clear_caches()
    with pytest.raises(SpecvizError, match="no passages found on this machine"):
        build_prompts("summarize", 5, "train", 0)
    assert len(build_prompts("code", 20, "train", 0)) == 20     # writing tasks need nothing on the machine
    assert len(build_prompts("chat", 20, "train", 0)) == 20


def test_markup_is_cleaned_into_paragraphs():
    text = ("# Title\n\n[![badge](https://img.shields.io/x.svg)](https://example.org)\n\n"
            "Read **the** [guide](https://example.org/docs/a/very/long/path/index.html) at "
            "https://example.org/a/very/long/path/index.html now.\n\n| a | b |\n|---|---|\n\n"
            ".. code:: python\n\n    print(1)\n\nContact <someone@example.org> for help with this package.")
    assert clean_markup(text) == ["Title", "Read the guide at example.org now.",
                                  "Contact for help with this package."]
    copyright_text = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
                      "Files: *\nCopyright: 2001 Someone\nLicense: MIT\n Permission is hereby granted, free of "
                      "charge, to any person.\n .\n The software is provided as is.\n")
    assert clean_debian_copyright(copyright_text) == [
        "License: MIT", "Permission is hereby granted, free of charge, to any person.",
        "The software is provided as is."]


def test_a_bug_changes_one_operator_and_the_code_still_parses():
    source = ("def total(xs):\n    n = 0\n    for x in xs:\n        if x > 0 and x < 10:\n            n += 1\n"
              "    return n\n")
    buggy = inject_bug(source, random.Random(0))
    assert buggy is not None and buggy != source
    compile(buggy, "<bug>", "exec")
    assert sum(a != b for a, b in zip(source.split(), buggy.split())) == 1


def test_typos_change_a_few_words_only():
    text = "I definitely believe their restaurant is different from the library because the grammar is better."
    typed = add_typos(text, random.Random(3), rate=0.1)
    assert typed != text
    assert abs(len(typed.split()) - len(text.split())) <= 1
