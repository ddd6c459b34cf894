"""Turning one iteration's tensors into trace records.

The full distributions stay on the device; only the numbers a picture needs (the drafted
token's p and q, top-k of p, q and the residual, β) are gathered there and moved in one go.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from specviz.drafters.base import Draft
from specviz.settings import DecodeSettings
from specviz.trace import DraftStep, FinalToken, Iteration, TopK
from specviz.verification import Verdict


def record_iteration(iteration: Iteration, p: torch.Tensor, draft: Draft, verdict: Verdict,
                     settings: DecodeSettings, text: Callable[[int], str]) -> Iteration:
    """Fill in the iteration's drafts and final token; trim what EOS or max_new_tokens cut off."""
    n = verdict.accepted
    emitted = len(iteration.emitted_ids)
    iteration.accepted = min(n, emitted)
    final_emitted = emitted > n
    rejected = n if verdict.recovered is not None and final_emitted else None
    if final_emitted:
        kind = "correction" if verdict.recovered is not None else ("bonus" if draft.tokens.numel() else "target")
        token = iteration.emitted_ids[-1]
        source = {"correction": "residual", "bonus": "p", "target": "p"}[kind]
        if settings.greedy:
            source = "argmax p"
        iteration.final = FinalToken(kind, token, text(token), source)
    if not settings.record:
        return iteration

    gamma, k = draft.tokens.numel(), settings.record_top_k
    rows = torch.arange(gamma, device=p.device)
    q = draft.q
    host = {
        "p": p[rows, draft.tokens], "q": q[rows, draft.tokens],
        "beta": torch.minimum(p[:gamma], q).sum(dim=-1),
        "p_top": torch.topk(p, min(k, p.shape[-1]), dim=-1),
        "q_top": torch.topk(q, min(k, q.shape[-1]), dim=-1) if gamma else None,
        "u": verdict.u,
    }
    if rejected is not None and verdict.residual is not None:
        host["residual_mass"] = verdict.residual.sum()
        host["residual_top"] = torch.topk(verdict.residual / verdict.residual.sum().clamp_min(1e-30), k)
    host = {key: _to_host(value) for key, value in host.items()}

    def top(pair, row: int) -> TopK:
        values, ids = pair
        return TopK(ids[row], [text(i) for i in ids[row]], values[row])

    for i, token in enumerate(draft.tokens.tolist()):
        p_i, q_i = host["p"][i], host["q"][i]
        verdict_i = "accepted" if i < iteration.accepted else "rejected" if i == rejected else "unverified"
        step = DraftStep(
            position=i + 1, token_id=token, token=text(token), q=q_i, p=p_i,
            ratio=p_i / q_i if q_i > 0 else None, u=host["u"][i] if host["u"] is not None else None,
            verdict=verdict_i, rule=settings.rule, beta=host["beta"][i],
            p_top=top(host["p_top"], i), q_top=top(host["q_top"], i))
        if i == rejected and "residual_top" in host:
            step.residual_mass = host["residual_mass"]
            values, ids = host["residual_top"]
            step.residual_top = TopK(ids, [text(j) for j in ids], values)
        iteration.drafts.append(step)
    if iteration.final is not None:
        if rejected is not None and "residual_top" in host:
            iteration.final.top = iteration.drafts[rejected].residual_top
        else:
            iteration.final.top = top(host["p_top"], n if rejected is None else rejected)
    return iteration


def _to_host(value):
    """Tensors and topk results to Python lists/floats (one transfer each)."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return value.tolist()
    values, ids = value
    return values.tolist(), ids.tolist()
