"""The token-tree pictures, the table and the linked view on a hand-made tree, on a real tree run,
and the pages that show them (AppTest)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from synthetic import FixedTree, synthetic_trace, synthetic_tree_trace
from test_charts import make_trace

from specviz import DecodeSettings, charts, generate, trace_from_dict
from specviz.charts.linked import draft_rows
from specviz.charts.table import iteration_cells
from specviz.charts.tree import (
    CHAR_WIDTH,
    LABEL_FONT,
    MIN_FONT,
    PLOT_WIDTH,
    Box,
    label_room,
    residual_panels,
    token_tree,
    tree_boxes,
)
from specviz.charts.tree_mask import mask_cells
from specviz.models import load_model
from specviz.trace import Choice

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def tree_trace():
    return synthetic_tree_trace()


def test_tree_layout_puts_children_right_of_parents_and_centres_them(tree_trace):
    boxes = {b.key: b for b in tree_boxes(tree_trace.iterations[0], "The")}
    assert [boxes[k].kind for k in sorted(boxes)] == ["root", "rejected", "accepted", "unverified", "unverified",
                                                     "rejected", "rejected", "unverified", "correction"]
    for b in boxes.values():
        if b.parent is not None:
            assert b.depth == boxes[b.parent].depth + 1
    assert boxes[7].parent == 1 and boxes[7].depth == 2  # the correction ends the accepted path
    assert len({b.row for b in boxes.values() if not any(c.parent == b.key for c in boxes.values())}) == 5  # leaves
    assert boxes[1].row == (boxes[4].row + boxes[7].row) / 2


def test_tree_figure_marks_verdicts_apart_from_hue(tree_trace):
    fig = charts.token_tree(tree_trace.iterations[0], charts.last_committed(tree_trace, 0))
    texts = [a.text for a in fig.layout.annotations]
    assert texts[0] == "<b>prompt</b>"
    assert "<s>␣the</s> ✗" in texts and "<b>␣a</b> ✓" in texts and "<b>␣red</b> ↻" in texts and "␣one" in texts
    by_text = {a.text: a for a in fig.layout.annotations}
    assert by_text["<b>␣a</b> ✓"].font.color == "#ffffff"  # dark fill, white ink: reads in grey
    assert by_text["␣one"].font.color == "#888888"
    edges = {t.name: t for t in fig.data if t.mode == "lines"}
    assert set(edges) == {"accepted path", "tested and rejected", "never reached", "final token"}
    assert edges["accepted path"].line.width > edges["tested and rejected"].line.width
    assert edges["never reached"].line.dash == "dot"
    assert "Iteration 0: the token tree, 7 drafted, 1 accepted" in fig.layout.title.text


def test_tree_hover_holds_p_q_u_and_the_rule(tree_trace):
    fig = charts.token_tree(tree_trace.iterations[0], "The")
    (nodes,) = [t for t in fig.data if t.name == "nodes"]
    hover = list(nodes.hovertext)
    assert "last committed token" in hover[0]
    the, a = hover[1], hover[2]
    assert "p = 0.100" in the and "q = 0.500" in the and "u = 0.630 &gt; min(1, p(x) / q(x)) = 0.200" in the
    assert "rule: lossless sampling" in the and "left after this rejection: mass 0.550" in the
    assert "u = 0.400 ≤ min(1, p′(x) / q(x)) = 0.907" in a and "rejecting '␣the'" in a
    assert "never reached" in hover[3]
    assert "correction token" in hover[-1] and "residual" in hover[-1]


def test_a_chain_renders_on_one_row(tree_trace):
    fig = charts.token_tree(tree_trace.iterations[1], charts.last_committed(tree_trace, 1))
    rows = {b.row for b in tree_boxes(tree_trace.iterations[1], "")}
    assert rows == {0} and fig.layout.annotations[0].text == "<b>␣red</b>"
    assert fig.layout.annotations[-1].text == "<b>␣on</b> ★" and "token chain" in fig.layout.title.text


def test_residual_sequence_follows_the_rejected_siblings(tree_trace):
    it = tree_trace.iterations[0]
    assert charts.rejection_points(it) == [-1, 1]
    panels = residual_panels(it, 1)
    assert [p.mark for p in panels] == ["✗ tried", "✗ tried", "↻ drawn"]
    assert panels[0].top.tokens[0] == " red" and panels[1].top.probs == [0.8, 0.2, 0.0]
    assert panels[2].title == "left after '␣small'<br>(mass 1.00)<br>drew the correction '␣red' ↻"
    fig = charts.residual_sequence(it, 1)
    assert len(fig.data) == 3
    first, second, last = fig.data
    assert list(first.marker.pattern.shape) == ["", "x", "", ""]  # ' big' tried against p
    assert list(last.marker.line.width) == [4, 0] and last.x[0] == "␣red ↻ drawn"
    root = residual_panels(it, -1)
    assert [p.mark for p in root] == ["✗ tried", "✓ kept"]


def test_table_follows_the_accepted_path_and_counts_branches(tree_trace):
    cells = iteration_cells(tree_trace.iterations[0])
    assert [c.state for c in cells] == ["kept", "bifurcation", "discarded"]
    assert cells[0].draft == [" a"] and cells[0].branches == 3
    assert cells[1].draft == [" big", " small"] and cells[1].verify == " red" and cells[1].branches == 2
    assert cells[2].draft == [" dog"]
    html = charts.draft_verify_table(tree_trace)
    assert "<th>Branches</th>" in html and "␣big | ␣small" in html
    assert "<th>Branches</th>" not in charts.draft_verify_table(make_trace())  # chains keep two rows


def test_linked_view_counts_a_tree_by_depth(tree_trace):
    rows = draft_rows(tree_trace)
    first = rows[rows["iteration"] == 0]
    assert list(first["verdict"]) == ["accepted", "rejected", "unverified"]
    assert list(first["tested"]) == [True, True, False] and list(first["kept"]) == [1, 0, 0]
    assert first["token"].iloc[1] == "␣big | ␣small"
    assert rows[rows["tested"]]["kept"].mean() == pytest.approx(tree_trace.summary().alpha)
    charts.linked_view(tree_trace).to_dict()
    charts.timeline(tree_trace)


def test_a_version_1_trace_loads_as_chains_and_draws():
    data = make_trace().to_dict()
    data["version"] = 1
    for it in data["iterations"]:
        for d in it["drafts"]:
            del d["parent"], d["sampled"]
    old = trace_from_dict(json.loads(json.dumps(data)))
    fig = charts.token_tree(old.iterations[1], charts.last_committed(old, 1))
    assert [a.text for a in fig.layout.annotations] == ["<b>t1</b>", "<b>t3</b> ✓", "<s>t4</s> ✗", "t5", "<b>t7</b> ↻"]
    assert "token chain" in fig.layout.title.text


def test_a_real_tree_run_draws(tiny_llama_dirs):
    target = load_model(str(tiny_llama_dirs[0]))
    vocab = target.vocab_size
    drafter = FixedTree(vocab, [3, 4, 5, 6], [-1, -1, 0, 0], [True, True, False, False])
    trace = generate(target, drafter, "w1 w2", DecodeSettings(gamma=2, max_new_tokens=12, seed=3))
    assert any(len(charts.rejection_points(it)) for it in trace.iterations)
    for it in trace.iterations:
        fig = charts.token_tree(it, charts.last_committed(trace, it.index))
        assert len(fig.layout.annotations) == 1 + len(it.drafts) + (it.final is not None)
        for node in charts.rejection_points(it):
            assert charts.residual_sequence(it, node).data
        cells = iteration_cells(it)
        assert sum(c.state == "kept" for c in cells) == it.accepted   # a target step is drawn plain, not kept
    charts.draft_verify_table(trace)
    charts.linked_view(trace).to_dict()


def test_generate_and_inspector_show_the_tree(tree_trace, monkeypatch):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.session_state["trace"] = tree_trace
    at.session_state["shown"] = "live"  # the app opened on an example
    at.session_state["inspect_index"] = 0   # as showing the live runs does (`state.show`)
    at.switch_page("pages/generate.py").run()
    assert not at.exception
    trees = [c for c in at.get("plotly_chart") if ": the token " in c.proto.spec]
    assert len(trees) == 1 and "Iteration 1: the token chain" in trees[0].proto.spec  # the last iteration
    at.switch_page("pages/inspector.py").run()
    assert not at.exception
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert "Iteration 0: the token tree" in specs[0]
    assert sum("tried in turn" in s for s in specs) == 2  # under the root and under ' a'
    assert any("left after" in m.value for m in at.markdown)
    assert sum("Iteration 0: tree attention in the verify pass" in s for s in specs) == 1
    assert any("siblings share a position" in m.value for m in at.markdown)
    mask = sys.modules["specviz.charts.tree_mask"]   # `charts.tree_mask` is the chart's function
    monkeypatch.setattr(mask, "MAX_NODES", len(tree_trace.iterations[0].drafts) - 1)   # as a big tree would be
    at.run()
    assert not any("tree attention in the verify pass" in c.proto.spec for c in at.get("plotly_chart"))
    assert any("is too large to read" in c.value for c in at.caption)
    at.switch_page("pages/table.py").run()
    assert not at.exception
    assert any("<th>Branches</th>" in h.proto.body for h in at.get("html"))


def test_the_mask_lets_a_node_read_the_prefix_the_root_and_its_own_path_only(tree_trace):
    """Rows: the root, then nodes 1a 1b 1c 2a(1a) 2b(1b) 2c(1b) 3(2b); columns: the prefix, the root, the nodes.
    The accepted path (the root and 1b) reads in green (2), other reads in grey (1), masked cells are 0."""
    tree, chain = tree_trace.iterations
    assert mask_cells(tree) == [
        [2, 2, 0, 0, 0, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0, 0, 0],
        [2, 2, 0, 2, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 1, 0, 0, 0],
        [1, 1, 0, 1, 0, 0, 1, 0, 0],
        [1, 1, 0, 1, 0, 0, 0, 1, 0],
        [1, 1, 0, 1, 0, 0, 1, 0, 1]]
    assert mask_cells(chain) == [[2, 2, 0, 0], [2, 2, 2, 0], [2, 2, 2, 2]]   # causal, both drafts kept
    fig = charts.tree_mask(tree, "The")
    hover = fig.data[0].text
    assert hover[7][6] == "3 ␣dog (t+3) reads 2b ␣big: its ancestor"
    assert hover[7][7] == "3 ␣dog (t+3) may not read 2c ␣small: on another branch, not its path"
    assert hover[5][8] == "2b ␣big (t+2) may not read 3 ␣dog: its descendant, fed after it"
    assert fig.layout.title.text == "Iteration 0: tree attention in the verify pass"
    assert charts.tree_mask(chain, "␣red").layout.title.text == "Iteration 1: causal attention in the verify pass"


def test_a_big_tree_shows_one_nodes_p_and_q_at_a_time():
    """A tree of more nodes than the inspector has tabs for (`TABS`): one node's p and q, picked from a list,
    where a tab and a chart per node took the page minutes to draw."""
    trace = synthetic_tree_trace()
    tree = trace.iterations[0]
    leaves = [replace(tree.drafts[3], parent=2) for _ in range(40)]   # never reached, under ' one'
    trace.iterations[0] = replace(tree, drafts=tree.drafts + leaves, drafted=len(tree.drafts) + len(leaves))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.session_state["trace"] = trace
    at.session_state["shown"] = "live"  # the app opened on an example
    at.session_state["inspect_index"] = 0
    at.switch_page("pages/inspector.py").run()
    assert not at.exception and not at.tabs
    node = at.selectbox(key="inspect_node")
    assert len(node.options) == 47 and node.value == 0
    node.set_value(1).run()
    assert [m.value for m in at.markdown if "→ accepted" in m.value]   # ' a', kept after ' the' was rejected
    at.session_state["inspect_index"] = 1   # the chain after it: a tab per node
    at.run()
    assert len(at.tabs) == 2


def test_the_confidence_stop_is_told_as_a_chain_or_a_trees_has_it(tree_trace):
    """A chain stops after its last node; a tree only leaves one node unexpanded. The depth allowed is the
    adaptive policy's where it chose one."""
    tree, chain = (replace(it, unsure=True) for it in tree_trace.iterations)
    settings = replace(tree_trace.settings, gamma=4, draft_confidence=0.3)
    trace = replace(tree_trace, settings=settings, iterations=[tree, chain])
    assert charts.confidence_stop(chain, trace) == ("The drafter stopped after 2 of γ = 4: its most likely next "
                                                     "token had probability below 0.30 (the confidence stop).")
    assert charts.confidence_stop(tree, trace).startswith("The drafter left a node unexpanded where its most likely")
    assert charts.confidence_stop(tree, trace).endswith("its deepest branch reached depth 3 of γ = 4.")
    chosen = replace(chain, choice=Choice(3, 1, 0, 2.0, 1.2, 0.6))
    assert "after 2 of γ = 3:" in charts.confidence_stop(chosen, trace)
    assert charts.confidence_stop(tree_trace.iterations[0], trace) == ""
    lesson = charts.lesson_steps(trace, 1)
    assert any("The drafter stopped after 2 of γ = 4" in step.body for step in lesson)


def test_long_labels_on_a_deep_chain_shrink_to_fit_their_depths_column_then_lose_their_glyph_then_are_cut():
    def chain(token: str, depth: int) -> list[Box]:
        return [Box(-1, None, 0, "root", "·", "")] + [Box(d, d - 1, d, "accepted", token, "") for d in
                                                         range(1, depth + 1)]

    assert label_room(chain("␣a", 4))[0] == LABEL_FONT   # short tokens keep the full size
    size, chars = label_room(chain("␣assistant", 3))
    assert MIN_FONT < size < LABEL_FONT and chars >= len("␣assistant")
    assert CHAR_WIDTH * size * len("␣assistant") + 2 * (size // 3) + 8 <= PLOT_WIDTH / 4.2   # padding and borders
    size, chars = label_room(chain("␣assistant", 8))
    assert size == MIN_FONT and chars < len("␣assistant")   # no smaller, though it cannot fit
    it = synthetic_tree_trace().iterations[1]
    assert {a.font.size for a in token_tree(it).layout.annotations} == {label_room(tree_boxes(it))[0]}

    def deep(token: str, verdict: str) -> list[str]:
        drafts = [replace(it.drafts[0], token=token, position=depth, parent=depth - 2, verdict=verdict)
                  for depth in range(1, 9)]
        return [a.text for a in token_tree(replace(it, drafts=drafts, final=None)).layout.annotations][1:]

    room = label_room([Box(-1, None, 0, "root", "·", "")] + [Box(0, -1, 8, "unverified", "␣assistant", "")])[1]

    assert len("␣sat") < chars < len("␣sat ✓")
    assert set(deep(" sat", "accepted")) == {"<b>␣sat</b>"}   # whole, its ✓ left out: the dark box says it
    assert set(deep(" a", "accepted")) == {"<b>␣a</b> ✓"}
    assert set(deep(" assistant", "accepted")) == {"<b>␣assistant</b>"}   # the accepted path is never cut
    assert set(deep(" assistant", "unverified")) == {"␣assistant"[:room - 1] + "…"}   # the rest is, at the root's size
    boxes = [Box(-1, None, 0, "root", "·", ""), Box(0, -1, 1, "accepted", "␣a", ""),
             Box(1, -1, 1, "unverified", "␣assistant", "")]
    assert label_room(boxes)[0] == LABEL_FONT   # a node never kept does not shrink the picture


def test_a_quote_in_a_token_is_drawn_as_a_quote(tree_trace):
    """Plotly reads tags in its text but shows an entity such as &quot; as written."""
    it = tree_trace.iterations[0]
    it.drafts[0] = replace(it.drafts[0], token='"""<')
    fig = charts.token_tree(it, "The")
    assert '<s>"""&lt;</s> ✗' in [a.text for a in fig.layout.annotations]
    (nodes,) = [t for t in fig.data if t.name == "nodes"]
    assert "&quot;" not in "".join(nodes.hovertext)


def test_a_wide_draft_verify_table_scrolls_sideways_in_a_smaller_font():
    """Drafts deeper than four do not fit the page's column at the usual size: the table scrolls inside its own box
    and its font steps down; γ = 4 keeps the large one, whether or not an iteration accepted all four."""
    wide, narrow, low = (charts.draft_verify_table(synthetic_trace(64, gamma=g, alpha=a))
                         for g, a in ((8, 0.95), (4, 0.95), (4, 0.1)))
    assert "font-size: 1.15rem" in low
    assert all(h.startswith('<div style="overflow-x: auto;">') for h in (wide, narrow))
    assert "font-size: 0.95rem" in wide and "font-size: 1.15rem" in narrow
