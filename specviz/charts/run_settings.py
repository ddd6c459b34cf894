"""A run's settings in words: the draft's shape, how tokens are picked, and a table of what applied.

The settings record every field, most of them unused by a given run (β and τ under lossless sampling, a
remote target's options on a local one); a reader wants the ones that shaped this run, named as the papers
name them.
"""

from __future__ import annotations

import pandas as pd

from specviz.plural import count
from specviz.settings import RULE_NAMES, DecodeSettings
from specviz.trace import Trace


def shape_label(s: DecodeSettings) -> str:
    """The draft's shape in a few symbols: "γ = 4", "a tree of depth γ = 4, top-2, N = 8", "adaptive, γ ≤ 8"."""
    if s.adaptive:
        return f"adaptive, γ ≤ {s.gamma}"
    if s.branches > 1:
        return f"a tree of depth γ = {s.gamma}, top-{s.branches}" + (f", N = {s.nodes}" if s.nodes else "")
    return f"γ = {s.gamma}"


def draft_shape(s: DecodeSettings) -> str:
    """The draft's shape as a sentence's clause. An adaptive run's γ, top-k and N are the largest the policy may
    choose, not what it drafted."""
    if s.adaptive:
        kinds = f"a chain or a tree of up to {s.branches} children per node" if s.branches > 1 else "a chain"
        most = f", at most {s.nodes} nodes" if s.nodes else ""
        text = f"adaptive: before each iteration the policy picks {kinds} (or no draft), up to depth {s.gamma}{most}"
    elif s.branches > 1:
        text = (f"a token tree of depth γ = {s.gamma}, {s.branches} children per node, "
                + (f"budget N = {s.nodes} nodes" if s.nodes else "no node budget"))
    else:
        text = f"a chain of γ = {s.gamma} drafted tokens"
    if s.draft_confidence:
        text += f"; a draft stops where the drafter's most likely token has q below {s.draft_confidence:g}"
    return text


def picking(s: DecodeSettings) -> str:
    """How tokens are picked: sampled at a temperature with its top-k and top-p, or the argmax of a greedy rule,
    whose p and q are recorded untruncated at temperature 1 (`Warper.probs`)."""
    if s.greedy:
        return "argmax (p and q shown at temperature 1)"
    return f"sampled at temperature {s.temperature:g}" + (f", top-k {s.top_k}" if s.top_k else "") + \
        (f", top-p {s.top_p:g}" if s.top_p < 1 else "")


def agreement_note(s: DecodeSettings) -> str | None:
    """Where the rule keeps drafts the target would not have chosen, so the text can differ from its own."""
    if s.rule != "spec" or s.beta == 1:   # β = 1 is greedy verification
        return None
    return (f"Spec-Verification (β = {s.beta}, τ = {s.tau:g}) also keeps drafts that are not the target's own "
            "choice (any in its top-β within τ of its best), so this text can differ from the target alone's: "
            "speed bought with agreement (Xia et al., §3.2).")


def settings_frame(trace: Trace) -> pd.DataFrame:
    """One row per setting that shaped the run: models, rule, draft, picking, budget and seed, and where the
    target ran; what the run did not use is left out (the JSON of the trace keeps every field)."""
    s = trace.settings
    rule = RULE_NAMES[s.rule] + (f": β = {s.beta}, τ = {s.tau:g}" if s.rule == "spec" else "")
    rows = [("target", trace.target), ("drafter", trace.drafter), ("verification", rule),
            ("draft", draft_shape(s) if not trace.drafter.startswith("none") else "none: the target alone"),
            ("tokens", picking(s)), ("at most", f"{s.max_new_tokens} new tokens"), ("seed", str(s.seed)),
            ("ran on", f"{trace.device} ({trace.dtype}), "
                       + (count(trace.threads, "torch thread") if trace.threads else "unrecorded torch threads")
                       + (": the drafter, the target on its server" if s.target_url else ""))]
    if s.first_target:
        rows.append(("first iteration", "a plain target step, before any draft"))
    if s.target_url:
        served = f", model {s.target_model}" if s.target_model else ""
        top = "all of p" if s.target_logprobs == 0 else f"its top {s.target_logprobs} log-probabilities"
        rows.append(("remote target", f"{s.target_url}{served}" + (f"; p read from {top}" if not s.greedy else "")))
    if s.target_latency_ms:
        per = "request" if s.target_url else "target pass"
        rows.append(("added latency", f"{s.target_latency_ms:g} ms per {per}"))
    if s.learn_costs:
        rows.append(("costs", "learnt from this run's own passes and drafting"))
    return pd.DataFrame(rows, columns=["setting", "value"])
