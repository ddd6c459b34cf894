"""The class pack: every shipped example loads and teaches what it says, the app opens on it with no
model, and `python -m specviz examples` rebuilds the files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from apps import switch_to
from streamlit.testing.v1 import AppTest

from specviz import SpecvizError, Trace, examples
from specviz.charts.style import markdown_escape
from specviz.examples import PACK, load_example
from specviz.models import EMBEDDED_NAME
from specviz.study import Study
from specviz.tree import is_chain

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGES = ["pages/generate.py", "pages/lesson.py", "pages/inspector.py", "pages/table.py", "pages/speedup.py",
         "pages/theory.py", "pages/traces.py"]


@pytest.mark.parametrize("example", PACK, ids=[e.name for e in PACK])
def test_each_example_is_what_the_pack_says(example):
    record = load_example(example.name)
    assert isinstance(record, Study if example.study else Trace)
    runs = [record.baseline, *(v.trace for v in record.variants)] if isinstance(record, Study) else [record]
    assert all(run.target == EMBEDDED_NAME and run.prompt == example.prompt and run.iterations for run in runs)
    if isinstance(record, Study):
        runs = {"comparison": 1, "gamma sweep": len(example.values.get("gammas", [])) + example.adaptive,
                "grid": len(example.values.get("betas", [])) * len(example.values.get("taus", [])),
                "drafters": len(example.values.get("kinds", []))}
        assert record.kind == example.study and len(record.variants) == runs[example.study]
        assert {row.rounds for row in record.rows()} == {example.rounds}   # every run timed as often
    else:
        assert record.settings == example.settings


def kinds(trace: Trace) -> set[str]:
    return {it.final.kind for it in trace.iterations if it.final is not None}


def test_the_pack_shows_what_a_class_needs():
    chat = load_example("sampled-chat")
    assert {"correction", "bonus"} <= kinds(chat) and chat.settings.verify == "sampling"
    assert load_example("copy-lookup").summary().accepted_length > 2.5  # copying pays
    race = load_example("greedy-race")
    assert race.variants[0].trace.generated_ids == race.baseline.generated_ids  # greedy: the same text
    assert any(not is_chain(it.parents) for it in load_example("token-tree").iterations)
    assert load_example("beta-tau-grid").baseline.settings.verify == "greedy"
    drafters = {v.varied["drafter"]: v.trace.summary() for v in load_example("drafters").variants}
    assert drafters["ngram"].c is None or drafters["ngram"].c < 0.05  # prompt lookup runs no model


def test_the_app_opens_on_the_first_example_and_every_page_shows_every_example():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert at.session_state["shown"] == PACK[0].name and "decoder" not in str(at.session_state)
    for example in PACK:
        switch_to(at, example.name)
        for page in PAGES:
            at.switch_page(page).run()
            assert not at.exception and not at.error, (example.name, page)
            assert not [i for i in at.info if "No trace yet" in i.value], (example.name, page)
            assert any(example.name in c.value for c in at.sidebar.caption), (example.name, page)
    switch_to(at, "beta-tau-grid")   # a study's example shows its fastest run, and says which
    at.switch_page("pages/generate.py").run()
    assert any("beta-tau-grid: its fastest run (β = " in c.value for c in at.sidebar.caption)
    assert any(c.value.startswith("Spec-Verification (β = ") for c in at.caption)   # its text is not the target's
    switch_to(at, PACK[0].name)
    at.switch_page("pages/speedup.py").run()
    assert at.get("plotly_chart")  # an example without a sweep borrows the pack's, and says whose it is
    sweep, drafters = (next(e for e in PACK if e.study == kind) for kind in ("gamma sweep", "drafters"))
    notes = [c.value for c in at.caption if c.value.startswith("Drawn below: the class pack's example")]
    assert [markdown_escape(sweep.title) in notes[0], markdown_escape(drafters.title) in notes[1], len(notes)] == [
        True, True, 2]


def test_the_examples_command_rebuilds_the_files(monkeypatch, tmp_path):
    small = tuple(replace(e, settings=replace(e.settings, max_new_tokens=3),
                          values={k: v[:1] for k, v in e.values.items()}) for e in (PACK[0], PACK[4]))
    monkeypatch.setattr(examples, "PACK", small)
    with pytest.raises(SpecvizError, match="no example named nope"):
        examples.build(tmp_path, ["nope"])
    examples.build(tmp_path, say=lambda text: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["beta-tau-grid.json", "sampled-chat.json"]
    monkeypatch.setattr(examples, "FOLDER", tmp_path)
    grid = load_example("beta-tau-grid")
    assert [v.varied for v in grid.variants] == [{"beta": 1, "tau": 1.0}]
    assert len(load_example("sampled-chat").generated_ids) <= 3
