"""A lesson through one iteration of a trace: seven steps (eight for an adaptive run), each an
explanation with this iteration's own numbers, a question for the class and, where one helps, a picture.

The steps follow Leviathan et al. 2023, Algorithm 1: the drafter proposes γ tokens with q, the
target scores every position in one pass (p), each position is kept while u ≤ min(1, p/q), the
first rejected one is replaced by a token drawn from norm(max(0, p − q)), and a fully accepted
draft earns a bonus token drawn from p; then eq. 1 and Theorem 3.8 for the expected tokens per
iteration and the walltime improvement. A token tree is followed along its accepted path; the
children of a node are tried in turn against what each rejection leaves (SpecInfer, Miao et al.
2024, multi-step speculative sampling). Greedy and Spec-Verification (Xia et al., eq. 8-9) are
told with their own tests. Everything is read from the trace; nothing is recomputed but the formulas.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, replace

import plotly.graph_objects as go

from specviz import theory
from specviz.charts.inspector import acceptance_test, final_bars, pq_bars, residual_bars
from specviz.charts.run_settings import draft_shape, picking
from specviz.charts.speedup import speedup_chart
from specviz.charts.style import INK, scrolling, show_token
from specviz.charts.text import token_span
from specviz.charts.tree import (
    confidence_stop,
    last_committed,
    node_labels,
    node_test,
    residual_sequence,
    token_tree,
)
from specviz.plural import count
from specviz.settings import rule_name
from specviz.trace import DraftStep, Iteration, Trace, text_segments
from specviz.tree import is_chain

# Streamlit sizes paragraphs and list items itself: a rule for the lesson's own elements overrides it.
LESSON_CSS = ("<style>.specviz-lesson p, .specviz-lesson li, .specviz-lesson td, .specviz-lesson th "
              "{ font-size: 1.6rem; line-height: 1.55; }</style>")
QUESTION_CSS = ("margin-top: 1.2rem; padding: 0.6rem 1rem; border-left: 8px solid #0072B2; background: #eef5fb; "
                f"color: {INK}; font-size: 1.6rem;")   # its own ink on its own background, under either theme
CONTEXT_CSS = ("font-size: 1.5rem; line-height: 2; padding: 0.4rem 0.8rem; border: 2px solid #cccccc; "
               "white-space: pre-wrap; word-break: break-word; font-family: ui-monospace, monospace;")
TABLE_CSS = "border-collapse: collapse; margin: 0.4rem 0;"
CELL_CSS = "padding: 0.15rem 0.9rem; border-bottom: 1px solid #dddddd; text-align: left;"
PROMPT_CHARS = (160, 400)   # a long prompt's head (its system prompt) and tail shown as context
MAX_ROWS = 12        # table rows before "… and n more"


@dataclass(frozen=True)
class LessonStep:
    title: str
    body: str                 # HTML; every token in it is escaped
    question: str             # plain text
    figure: go.Figure | None = None


def _n(x: float | None) -> str:
    """Three decimals, or two significant digits below 0.01, so that a small p is not read as 0."""
    return "?" if x is None else f"{x:.3f}" if x == 0 or abs(x) >= 0.01 else f"{x:.2g}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _tok(token: str) -> str:
    return f"<b>'{html.escape(show_token(token))}'</b>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    """An HTML table that scrolls sideways in a narrow column; cells are HTML already. Rows beyond MAX_ROWS are
    counted, not shown."""
    def row(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f'<{tag} style="{CELL_CSS}">{c}</{tag}>' for c in cells) + "</tr>"

    more = f"<p>… and {len(rows) - MAX_ROWS} more</p>" if len(rows) > MAX_ROWS else ""
    return scrolling(f'<table style="{TABLE_CSS}">{row(head, "th")}'
                     f'{"".join(row(r, "td") for r in rows[:MAX_ROWS])}</table>') + more


def _first_rejected(it: Iteration) -> DraftStep | None:
    return next((it.drafts[k] for level in it.tested_levels for k in level if it.drafts[k].verdict == "rejected"),
                None)


def instructive(it: Iteration) -> bool:
    """A rejection followed by a correction: every part of Algorithm 1 shows."""
    return it.final is not None and it.final.kind == "correction" and any(d.verdict == "rejected" for d in it.drafts)


def default_iteration(trace: Trace) -> int:
    """The first instructive iteration, else the first with drafts, else 0."""
    its = trace.iterations
    return next((it.index for it in its if instructive(it)), next((it.index for it in its if it.drafted), 0))


def default_note(trace: Trace) -> str:
    """Why the lesson starts where it does (plain text)."""
    first = default_iteration(trace)
    if trace.iterations and instructive(trace.iterations[first]):
        why = "the first with a rejection followed by a correction, the most instructive"
    elif any(it.drafted for it in trace.iterations):
        why = "no iteration has a recorded rejection followed by a correction; this is the first with a draft"
    else:
        why = "no iteration drafted anything: every one is a plain target step"
    return f"The lesson starts at iteration {first}: {why}. Pick another iteration here."


def iteration_label(it: Iteration) -> str:
    end = it.final.kind if it.final is not None else "stop"
    return f"Iteration {it.index}: drafted {it.drafted}, accepted {it.accepted}, then {end}"


def _ending(trace: Trace, index: int) -> str:
    """How the run ended after this iteration ("" when it went on)."""
    if index != len(trace.iterations) - 1:
        return ""
    if len(trace.generated_ids) >= trace.settings.max_new_tokens:
        return f"the token budget (max_new_tokens = {trace.settings.max_new_tokens}) is reached"
    if trace.iterations[index].final is None:
        return "an accepted draft was the end-of-sequence token"
    return "its last token was the end of sequence, or the run was stopped by hand"


def _rule_text(trace: Trace) -> str:
    s = trace.settings
    if s.rule == "sampling":
        return "lossless speculative sampling: keep a draft when u ≤ min(1, p/q) (Leviathan et al., Algorithm 1)"
    if s.rule == "greedy":
        why = " (sampling at temperature 0 is greedy)" if s.verify == "sampling" else ""
        return f"greedy: keep a draft while it equals the target's most likely token{why}"
    return (f"Spec-Verification: keep a draft in the target's top-β (β = {s.beta}) whose log-probability is "
            f"within τ = {s.tau:g} of the top-1's (Xia et al.)")


def _context(trace: Trace, index: int) -> LessonStep:
    s, it = trace.settings, trace.iterations[index]
    before = replace(trace, iterations=trace.iterations[:index])
    committed = sum(len(b.emitted_ids) for b in before.iterations)
    read = trace.context or trace.prompt   # with the chat template, where the trace has it
    head, tail = PROMPT_CHARS
    prompt = read if len(read) <= head + tail else f"{read[:head]} … {read[-tail:]}"
    spans = "".join(token_span(piece, kind) for piece, kind in text_segments(before, include_rejected=False))
    templated = trace.context.strip() not in ("", trace.prompt.strip())
    template = " (in grey, as the target read it: its chat template included)" if templated else " (in grey)"
    body = (f"<p>Iteration {index} (numbered 0 to {len(trace.iterations) - 1}). Everything before it is committed: "
            f"the prompt{template} and the {count(committed, 'token')} of iterations before it.</p>"
            f'<div style="{CONTEXT_CSS}"><span style="color: #666666;">{html.escape(prompt)}</span>{spans}</div>'
            f"<p>Target <b>{html.escape(trace.target)}</b>, drafter <b>{html.escape(trace.drafter)}</b>; "
            f"rule: {html.escape(_rule_text(trace))}; draft: {html.escape(draft_shape(s))}; tokens: "
            f"{html.escape(picking(s))}.</p>"
            + ("<p>This iteration starts right after the prompt" if index == 0 else
               f"<p>This iteration continues from {_tok(last_committed(trace, index))}")
            + (f" and drafted {count(it.drafted, 'token')}.</p>" if it.drafted else ".</p>"))
    return LessonStep("The context", body, "Before we look: which token would you expect next, and would a much "
                      "smaller model guess the same?")


def _draft(trace: Trace, index: int) -> LessonStep:
    s, it = trace.settings, trace.iterations[index]
    title = "The drafter proposes"
    if not it.drafted:
        why = ("the run has no drafter: this is plain target decoding" if trace.drafter.startswith("none") else
               "the run starts with the target's pass over the prompt, which emits the first token: a drafter "
               "that reads the target's hidden states (the EAGLE head, the blockwise heads) drafts only once that "
               "pass has computed them" if index == 0 else
               "the drafter proposed nothing this time (nothing to copy, or an adaptive run predicted no draft "
               "faster)")
        return LessonStep(title, f"<p>No draft in this iteration: {html.escape(why)}. The target makes one ordinary "
                          "step and emits one token.</p>", "What would a drafter have to do for this step to emit "
                          "more than one token?")
    cost = (f"It ran {it.draft_calls} forward pass{'es' * (it.draft_calls != 1)} in {_ms(it.draft_time)}."
            if it.draft_calls else f"It ran no forward pass: {_ms(it.draft_time)} of lookups.")
    if it.one_pass:
        cost += (" That one pass drafted the whole block: each position's q was computed without seeing the "
                 "tokens drafted before it, which is why a parallel drafter's acceptance decays with the position.")
    stop = f" {confidence_stop(it, trace)}" if it.unsure else ""
    if not it.drafts:
        return LessonStep(title, f"<p>The drafter {html.escape(trace.drafter)} proposed {count(it.drafted, 'token')}. "
                          f"{cost}"
                          f"{stop}</p><p>This trace was recorded without per-token records: only the counts are "
                          "known, not the tokens or their q.</p>", "Why is drafting cheap compared with the target?")
    how = ("drafted with argmax (the greedy rules); q is recorded at temperature 1 to show the drafter's belief"
           if s.greedy else "each drawn from the drafter's q, after the same temperature, top-k and top-p as p")
    names = node_labels(it)
    drawn = "argmax of q" if s.greedy else "sampled from q"
    rows = [[names[i], _tok(d.token), _n(d.q), drawn if d.sampled else "picked by rank"]
            for i, d in enumerate(it.drafts)]
    picked = sum(not d.sampled for d in it.drafts)
    if is_chain(it.parents):
        if picked == len(it.drafts):
            how, copied = "each picked by rank, not sampled, so the test takes q as one-hot (q = 1)", ""
        else:
            copied = f" {picked} of them were picked by rank (tested as a one-hot q)." if picked else ""
        body = (f"<p>The drafter {html.escape(trace.drafter)} proposed {count(it.drafted, 'token')}, one after "
                f"another, {html.escape(how)}.{copied} {cost}{stop}</p>")
        return LessonStep(title, body + _table(["position", "token", "q(token)", "how"], rows),
                          "Why can the small drafter afford to write tokens one at a time, when the target cannot?")
    body = (f"<p>The drafter {html.escape(trace.drafter)} proposed a token tree of {it.drafted} nodes, "
            f"{max(d.position for d in it.drafts)} deep: each node continues its parent, and a node's children are "
            f"alternatives for the same position. {it.drafted - picked} nodes were sampled from q; {picked} were "
            "picked by rank (the drafter's top-k, or a continuation copied from the prompt), which the test treats as "
            f"a one-hot q. {cost}{stop}</p>")
    after = [[names[parent] if parent >= 0 else "the root", *row] for parent, row in zip(it.parents, rows)]
    return LessonStep(title, body + _table(["after", "node", "token", "q(token)", "how"], after),
                      "Why propose several candidates for one position when only one can be kept?",
                      token_tree(it, last_committed(trace, index)))


def _score(trace: Trace, index: int) -> LessonStep:
    it = trace.iterations[index]
    title = "The target scores every position in one pass"
    times = (f"Verifying took {_ms(it.verify_time)}; drafting took {_ms(it.draft_time)} "
             f"({it.draft_calls} drafter pass{'es' * (it.draft_calls != 1)}).")
    if not it.drafted:
        return LessonStep(title, f"<p>With nothing drafted, the target runs one forward pass and gets p for the next "
                          f"token only. {times}</p>", "How long would γ such steps take, one after another?")
    mask = ("with a tree attention mask: each node sees the context and its own ancestors, so its p is exactly what "
            "feeding its path alone would give" if not is_chain(it.parents) else "with the usual causal mask")
    body = (f"<p>The target runs <b>ONE</b> forward pass over the context plus all {it.drafted} drafted tokens, "
            f"{mask}. It returns p at every drafted position, and one more after the last draft (for a bonus). "
            f"{times}</p>")
    if not it.drafts:
        return LessonStep(title, body + "<p>This trace holds no per-token records, so the p values are not known.</p>",
                          "Why can the target check γ tokens in one pass, when it cannot write them in one?")
    names = node_labels(it)
    ratios = not trace.settings.greedy   # the greedy rules compare tokens, no ratio
    rows = [[names[i], _tok(d.token), _n(d.q), _n(d.p)] + (["∞" if d.ratio is None else _n(d.ratio)] if ratios else [])
            for i, d in enumerate(it.drafts)]
    focus = _first_rejected(it) or it.drafts[(it.path or [0])[-1]]
    tree, picked = not is_chain(it.parents), not all(d.sampled for d in it.drafts)
    cases = (["p′/q for a sibling tried after a rejected one"] * tree
             + [("p′ alone for a node picked by rank" if tree else "p alone for a token picked, not drawn")] * picked)
    which = f" ({'; '.join(cases)})" if cases else ""
    body += ("<p>p(token) is the target's probability after the node's parent; " +
             (f"p/q is the ratio the test used{which}.</p>" if ratios else f"the {rule_name(trace.settings.rule)} "
              "rule tests no ratio: it compares each draft with the target's top tokens, and q only shows how sure "
              "the drafter was.</p>"))
    return LessonStep(title, body + _table(["node", "token", "q(token)", "p(token)"] + ["p/q"] * ratios, rows),
                      "Why can the target check γ tokens in one pass, when it cannot write them in one?",
                      pq_bars(focus))


def _test_detail(trace: Trace, d: DraftStep) -> str:
    """The greedy and Spec-Verification tests' numbers, from the recorded top of p."""
    s, top = trace.settings, d.p_top
    if d.u is not None or top is None or not top.ids:
        return ""
    if s.rule == "greedy":
        return f"; the target's argmax is {_tok(top.tokens[0])} (p = {_n(top.probs[0])})"
    rank = f"rank {top.ids.index(d.token_id) + 1}" if d.token_id in top.ids else f"rank &gt; {len(top.ids)}"
    gap = math.log(top.probs[0] / d.p) if d.p > 0 else math.inf
    return f"; {rank} in p (β = {s.beta}), log-prob gap to the top-1 {gap:.2f} (τ = {s.tau:g})"


def _test(trace: Trace, index: int) -> LessonStep:
    s, it = trace.settings, trace.iterations[index]
    title = "Each position's test"
    questions = {"sampling": "If p(x) ≥ q(x), can the draft be rejected? And if p(x) = 0?",
                 "greedy": "Can greedy verification ever change the output of the target decoding alone?",
                 "spec": "What do we give up when β or τ grows?"}
    levels = it.tested_levels
    if not levels:
        what = ("nothing was drafted" if not it.drafted else "this trace holds no per-token records"
                if not it.drafts else "no draft was reached before the run stopped")
        return LessonStep(title, f"<p>Nothing to test in this iteration: {what}.</p>", questions[s.rule])
    rule = {"sampling": "Draw u ~ U(0, 1) and keep the draft x when u ≤ min(1, p(x)/q(x)): a token the target likes "
                        "at least as much as the drafter always stays, any other stays with probability p/q.",
            "greedy": "Keep the draft while it equals the target's most likely token, argmax p.",
            "spec": f"Keep the draft when it is among the target's top β = {s.beta} tokens and its log-probability "
                    f"is at most τ = {s.tau:g} below the top-1's."}[s.rule]
    names, items = node_labels(it), []
    for level in levels:
        for k in level:
            d = it.drafts[k]
            items.append(f"<li>{names[k]} {_tok(d.token)}: p = {_n(d.p)}, q = {_n(d.q)} → "
                         f"{html.escape(node_test(it, k))}{_test_detail(trace, d)}</li>")
    tree = ""
    if not is_chain(it.parents):
        tree = (" A node's children are tried in turn; after a rejection the next one is tested against what is "
                "left, p′ = norm(max(0, p − q)) (SpecInfer)." if s.rule == "sampling" else
                " All children of a node are checked; the one the target ranks best among those passing is kept.")
    unreached = sum(d.verdict == "unverified" for d in it.drafts)
    end = (f"<p>{count(unreached, 'drafted token')} never reached a test (after the first rejection, "
           "under a rejected node, or past the end): their p was computed and thrown away.</p>" if unreached else "")
    body = (f"<p>{html.escape(rule + tree)} Position by position along the accepted path; the first rejection ends "
            f"it.</p><ul>{''.join(items)}</ul>{end}")
    return LessonStep(title, body, questions[s.rule], acceptance_test(it))


def _final(trace: Trace, index: int) -> LessonStep:
    s, it = trace.settings, trace.iterations[index]
    final = it.final
    if final is None:
        body = (f"<p>No token follows the accepted drafts: the run stops here, {html.escape(_ending(trace, index))}. "
                "Nothing after it is emitted, not even drafts the target accepted.</p>")
        return LessonStep("The end of the run", body, "Why must nothing follow the end-of-sequence token, even "
                          "drafts the target accepted?")
    prob = dict(zip(final.top.ids, final.top.probs)).get(final.token_id) if final.top else None
    chance = f" (probability {_n(prob)})" if prob is not None else ""
    picture = final_bars(final) if final.top is not None else None
    if final.kind == "target":
        return LessonStep("The target's own token", f"<p>With no draft, the token {_tok(final.token)} comes from the "
                          f"target's {html.escape(final.sampled_from)}{chance}, as in ordinary decoding.</p>",
                          "What did this step cost per token, compared with a speculative iteration?", picture)
    if final.kind == "bonus":
        body = (f"<p>All {it.accepted} drafts on the path were accepted. The verify pass already computed p after the "
                f"last one (position γ + 1), so one more token comes free: the bonus {_tok(final.token)}, drawn from "
                f"{html.escape(final.sampled_from)}{chance}.</p>")
        return LessonStep("Everything accepted: the bonus token", body, "Why does the bonus token cost no extra target "
                          "pass?", picture)
    title = "The first rejection and the correction"
    nodes = [k for k in (it.tested_levels or [[]])[-1] if it.drafts[k].verdict == "rejected"]
    rejected = [it.drafts[k] for k in nodes]
    if not rejected:
        return LessonStep(title, f"<p>A draft was rejected and replaced by the correction {_tok(final.token)}. This "
                          "trace holds no per-token records, so the residual is not known.</p>",
                          "Why draw the correction from max(0, p − q) and not from p itself?")
    last = rejected[-1]
    where = "the first position that failed" if len(rejected) == 1 else \
        f"{len(rejected)} children of the same node, all rejected in turn"
    body = f"<p>The path ends at {where}: " + ", ".join(_tok(d.token) for d in rejected) + ".</p>"
    if s.greedy:
        body += (f"<p>Under the {rule_name(s.rule)} rule the correction is the target's most likely token there, "
                 f"argmax p = {_tok(final.token)}{chance}: exactly what the target decoding alone would emit.</p>")
        return LessonStep(title, body, "Why is argmax p the right correction when verifying greedily?", picture)
    first = it.drafts[nodes[0]]
    test = f"{node_labels(it)[nodes[0]]} {_tok(first.token)}: p = {_n(first.p)}, q = {_n(first.q)}, " \
        f"{html.escape(node_test(it, nodes[0]))}. "
    if last.residual_mass is None:
        body += (f"<p>{test}The correction {_tok(final.token)} was drawn from the residual norm(max(0, p − q)); this "
                 "trace did not record it.</p>")
    else:
        masses = "; ".join(f"after {_tok(d.token)}: {_n(d.residual_mass)}" for d in rejected)
        tops = ", ".join(f"{_tok(t)} {_n(v)}" for t, v in zip(last.residual_top.tokens[:4], last.residual_top.probs))
        body += (f"<p>{test}The position is not wasted: the target's p is corrected to max(0, p − q), the probability "
                 "p has beyond q. Before normalising it sums to 1 − Σ min(p, q), the chance of a rejection here "
                 f"(mass {masses}). Divided by that mass it is a distribution: {tops}.</p>"
                 f"<p>The correction {_tok(final.token)} is drawn from it{chance}. So every position emits a token "
                 "distributed exactly as p (Leviathan et al., Algorithm 1; the proof is their Appendix A.1).</p>")
        picture = residual_bars(last, final) if is_chain(it.parents) else \
            residual_sequence(it, it.parents[nodes[-1]])
    return LessonStep(title, body, "Why draw the correction from max(0, p − q) and not from p itself?", picture)


def _emitted(trace: Trace, index: int) -> LessonStep:
    it = trace.iterations[index]
    kept = [(it.drafts[k].token, "accepted") for k in it.path] if it.drafts else \
        [(str(i), "accepted") for i in it.emitted_ids[: it.accepted]]
    pieces = kept + ([(it.final.token, it.final.kind)] if it.final is not None else [])
    spans = "".join(token_span(piece, kind) for piece, kind in pieces)
    n = len(it.emitted_ids)
    total = it.draft_time + it.verify_time + it.sample_time
    wasted = it.drafted - it.accepted
    parts = [f"{count(it.accepted, 'accepted draft')}"] if it.drafted else []
    if it.final is not None:
        parts.append(f"1 {it.final.kind} token")
    thrown = f" {count(wasted, 'drafted token')} thrown away." if it.drafted else ""
    body = (f'<div style="{CONTEXT_CSS}">{spans or "&nbsp;"}</div>'
            f"<p>{count(n, 'token')} from one target pass ({' + '.join(parts)}); a plain target step emits 1."
            f"{thrown}</p>"
            f"<p>Cost: draft {_ms(it.draft_time)} + verify {_ms(it.verify_time)} + sample {_ms(it.sample_time)} = "
            f"{_ms(total)}, so {_ms(total / max(n, 1))} per token, against about one verify pass per token for the "
            "target alone (a pass over γ + 1 tokens costs more than over one: little on a GPU, noticeably on a "
            "CPU).</p>")
    ending = _ending(trace, index)
    if ending:
        body += f"<p>The run ends after this iteration: {html.escape(ending)}.</p>"
    picture = token_tree(it, last_committed(trace, index)) if it.drafts else None
    return LessonStep("What was emitted, and what it cost", body, "When does an iteration cost more than it saves?",
                      picture)


def _speedup(trace: Trace) -> LessonStep:
    s, summary = trace.settings, trace.summary()
    title = "The expected speedup"
    question = "What happens to the best γ when the drafter gets cheaper (c → 0), or when α̂ drops?"
    alpha, gamma, trees = summary.alpha, s.gamma, s.branches > 1
    shapes = [it.choice for it in trace.iterations if it.choice is not None and it.choice.gamma > 0]
    if shapes:   # an adaptive run: its settings hold the limits, the policy chose each draft within them
        depths = sorted(shape.gamma for shape in shapes)
        gamma, trees = depths[len(depths) // 2], any(shape.branches > 1 for shape in shapes)
    if alpha is None:
        return LessonStep(title, "<p>No draft position was tested in this trace, so the acceptance rate α̂ is "
                          "undefined and the formulas have nothing to predict: run with a drafter.</p>"
                          "<p>E = (1 − α^(γ+1)) / (1 − α) tokens per iteration (Leviathan et al., eq. 1); "
                          "S = E / (γc + 1) (Theorem 3.8).</p>", question)
    c = summary.c if summary.c is not None else 0.0
    c_text = (f"c = {_n(c)} (one drafter pass / one verify pass, measured)" if summary.c is not None else
              "c = 0: the drafter made no forward pass (e.g. prompt lookup), so drafting is taken as free")
    block, drafted = trace.block, theory.drafted(gamma, trace.block)
    e, speed = theory.expected_tokens(alpha, drafted), theory.walltime_improvement(alpha, gamma, c, block)
    free = c == 0 and not block   # S = E: it grows with γ, and no γ is optimal
    best = None if free else theory.optimal_gamma(alpha, c, block=block)
    e_text = (f"α̂ = 1, so E = {'min(γ, B)' if block else 'γ'} + 1 = {e:.2f}" if alpha == 1 else
              f"E = (1 − {alpha:.3f}<sup>{drafted + 1}</sup>) / (1 − {alpha:.3f}) = {e:.2f}")
    cost = (f"S = E / (c + 1) = {e:.2f} / ({c:.3f} + 1) = {speed:.2f}×: this drafter drafts its block of up to "
            f"B = {block} tokens in one pass, so an iteration costs one drafter step whatever γ, and drafts "
            f"min(γ, B) = {drafted}" if block else
            f"S = E / (γc + 1) = {e:.2f} / ({gamma} × {c:.3f} + 1) = {speed:.2f}×")
    tree = ("<p>This run drafted token trees: γ is the depth, and the formula counts a chain of γ drafts; a tree "
            "raises the acceptance per depth at the price of a larger verify pass.</p>" if trees else "")
    if shapes:
        tree += (f"<p>The adaptive policy chose each draft's length: γ = {gamma} is the median depth it drafted "
                 f"(from {depths[0]} to {depths[-1]}).</p>")
    chances = ("" if summary.expected_alpha is None else
               f" Leviathan et al. define α as E[β], β = Σ min(p, q), the chance a draft is kept: averaged over the "
               f"same drafts of its chains it is {summary.expected_alpha:.3f}, the chance each verdict's coin was "
               "flipped with.")
    body = (f"<p>Over the whole trace α̂ = {alpha:.3f} (accepted / tested draft positions) and {html.escape(c_text)}."
            f"{chances}</p><p>Expected tokens per iteration (Leviathan et al., eq. 1): {e_text}; measured "
            f"{summary.accepted_length:.2f}.</p>"
            f"<p>Expected walltime improvement (Theorem 3.8): {cost}.</p>"
            + ("<p>With α̂ = 0 every draft is rejected: S = 1 at any γ, so no γ helps.</p>" if free and alpha == 0 else
               "<p>With c = 0 every draft is free, so S = E only grows with γ, towards "
               + ("no bound" if alpha == 1 else f"1 / (1 − α̂) = {1 / (1 - alpha):.2f}×")
               + ": the formula has no optimal γ.</p>" if free else
               f"<p>The optimal γ = {best} maximises S: {theory.walltime_improvement(alpha, best, c, block):.2f}× "
               f"at α̂ = {alpha:.3f}, c = {c:.3f}.</p>") +
            "<p>The formula takes one target pass over γ + 1 tokens to cost what a pass over one token costs, true "
            "on a GPU with room to spare. On a CPU a longer pass costs more, so "
            + ("the speedup measured there stops growing at some γ" if free else
               "the best γ measured there sits below this one")
            + f" (the Speedup curves page sweeps γ).</p>{tree}")
    return LessonStep(title, body, question, speedup_chart(alpha, c, block=block))


def _why_this_length(trace: Trace, index: int) -> LessonStep:
    """An adaptive run's choice before the iteration, with the numbers it read (`specviz.adaptive`)."""
    it = trace.iterations[index]
    c = it.choice
    if c.gamma == 0:
        shape = "no draft at all: one plain target step"
    elif c.branches > 1:
        shape = f"a token tree of depth {c.gamma}, top-{c.branches}, N = {c.nodes} nodes"
    else:
        shape = f"a chain of γ = {c.gamma}"
    chain = (f"<p>For comparison, Leviathan et al.'s eq. 1 with α̂ = {c.alpha:.3f} at every position gives "
             f"(1 − α̂<sup>γ+1</sup>) / (1 − α̂) = {theory.expected_tokens(c.alpha, c.gamma):.2f}; the policy "
             "uses an estimate for each depth instead, since acceptance changes along a draft.</p>"
             if c.gamma and c.branches == 1 and c.alpha < 1 else "")
    if c.probe:
        why = ("<p>No draft was predicted to beat the target alone, so the policy had stopped drafting; a policy "
               "that never drafts learns nothing more, so after a pause it drafts one node to test the estimate "
               "(a probe). A failed probe doubles the pause before the next one.</p>")
    elif c.gamma == 0:
        why = ("<p>Every draft was predicted slower than the target alone: at this acceptance the drafted tokens "
               "would be thrown away more often than they pay for their drafter steps and wider verify pass.</p>")
    else:
        why = (f"<p>Of every shape it may draft, this one had the most expected tokens per second: "
               f"{c.gain:.2f}× the target alone's predicted rate.</p>")
    situation = (f"<p>The drafter said where it stood before drafting: <b>{html.escape(c.situation)}</b>. "
                 "The policy keeps one set of estimates for each such situation (a prompt-lookup draft after a "
                 "3-token match is kept far more often than one after a 1-token match), and read this one's.</p>"
                 if c.situation else "")
    previous = trace.iterations[index - 1] if index else None
    if previous is not None and previous.choice is not None:
        moved = (f"<p>The iteration before drafted {count(previous.drafted, 'token')} and accepted "
                 f"{previous.accepted}; the estimate went from {previous.choice.alpha:.3f} to {c.alpha:.3f}.</p>")
    elif previous is None:
        moved = "<p>This is the first iteration: the estimate is still the pair's calibrated one.</p>"
    else:   # only the target's own first step (its pass over the prompt) comes without a choice: it tests no draft
        moved = (f"<p>Iteration {previous.index} was the target's own step, with no draft the policy chose, so "
                 "there was nothing yet to learn from: the estimate is still the pair's calibrated one.</p>")
    body = (f"<p>Before this iteration the adaptive policy chose {html.escape(shape)}.</p>"
            f"<p>It read only the {count(index, 'finished iteration')} before it: its estimate that the drafter's "
            f"first guess is right is α̂ = {c.alpha:.3f}, and from the estimates at every depth it expected "
            f"E = {c.expected_tokens:.2f} tokens from this iteration (1 + the chance each node is reached and "
            "accepted).</p>"
            f"{situation}{chain}{why}{moved}"
            "<p>Time per iteration = fixed work + depth × one drafter step + one target pass over N + 1 tokens "
            "(the measured verify-cost curve). A tree's drafter step runs its whole frontier in one batch and is "
            "timed on its own (on a CPU it costs more than a chain's one-node step). The choice maximises E over "
            "that time, Leviathan et al.'s Theorem 3.8 with measured costs.</p>"
            f"{_learnt(c.costs)}")
    return LessonStep("Why this draft length", body, "If the next three drafts are all rejected, what happens to "
                      "the draft length, and how does the policy ever find out that drafting pays again?")


def _learnt(costs: tuple[float, ...]) -> str:
    """What a run that learns its costs priced by: the kept curve and drafter step times the factors."""
    if not costs:
        return ""
    a, b, step = costs
    return (f"<p>This run learns its costs from the clock: the target's passes timed so far ran its one-token pass "
            f"at {a:.2f}× the kept curve's and what each wider pass adds at {b:.2f}× the curve's, and its drafter "
            f"steps at {step:.2f}× the sizing's; the time per iteration above was priced with these factors.</p>")


def lesson_steps(trace: Trace, index: int) -> list[LessonStep]:
    """The steps for iteration `index`: context, (an adaptive run's: why this draft length), draft, one-pass
    scoring, the tests, the correction (or bonus, or end), what was emitted and its cost, and the expected
    speedup."""
    why = [_why_this_length(trace, index)] if trace.iterations[index].choice is not None else []
    return [_context(trace, index), *why, _draft(trace, index), _score(trace, index), _test(trace, index),
            _final(trace, index), _emitted(trace, index), _speedup(trace)]


def lesson_html(step: LessonStep) -> str:
    """A step's explanation and question in type that reads on a projector."""
    return (f'<div class="specviz-lesson">{step.body}<div style="{QUESTION_CSS}"><b>Question for the class:</b> '
            f"{html.escape(step.question)}</div></div>{LESSON_CSS}")
