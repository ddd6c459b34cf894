"""Turning one iteration's tensors into trace records.

The full distributions stay on the device; only the numbers a picture needs (the drafted
token's p and q, top-k of p, q and the residual, β) are gathered there and moved in one go.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from specviz import tree
from specviz.drafters.base import Draft
from specviz.settings import DecodeSettings
from specviz.trace import DraftStep, FinalToken, Iteration, TopK
from specviz.verification import Verdict


def record_iteration(iteration: Iteration, p: torch.Tensor, draft: Draft, verdict: Verdict,
                     settings: DecodeSettings, text: Callable[[int], str]) -> Iteration:
    """Fill in the iteration's draft nodes and final token; trim what EOS or max_new_tokens cut off."""
    n = verdict.accepted
    emitted = len(iteration.emitted_ids)
    iteration.accepted = min(n, emitted)
    final_emitted = emitted > n
    last_rejected = None   # the sibling whose residual the correction was drawn from
    if final_emitted and verdict.recovered is not None:
        last_rejected = next(i for i in reversed(verdict.tested) if i not in verdict.path)
    if final_emitted:
        kind = "correction" if verdict.recovered is not None else ("bonus" if draft.tokens.numel() else "target")
        token = iteration.emitted_ids[-1]
        source = {"correction": "residual", "bonus": "p", "target": "p"}[kind]
        if settings.greedy:
            source = "argmax p"
        iteration.final = FinalToken(kind, token, text(token), source)
    if not settings.record:
        return iteration

    size, k = draft.tokens.numel(), settings.record_top_k
    rows = torch.arange(size, device=p.device)
    parent_rows = torch.tensor(draft.parents, dtype=torch.long, device=p.device) + 1  # each node's row of p
    q, p_node = draft.q, p[parent_rows]            # each node's q and its parent's p
    host = {
        "p": p_node[rows, draft.tokens], "q": q[rows, draft.tokens],
        "beta": torch.minimum(p_node, q).sum(dim=-1),
        "p_top": torch.topk(p, min(k, p.shape[-1]), dim=-1),
        "q_top": torch.topk(q, min(k, q.shape[-1]), dim=-1) if size else None,
        "u": verdict.u,
    }
    residuals = verdict.residuals
    if residuals:
        left = torch.stack(list(residuals.values()))
        host["residual_mass"] = left.sum(dim=-1)
        host["residual_top"] = torch.topk(left / left.sum(dim=-1, keepdim=True).clamp_min(1e-30), k)
    host = {key: _to_host(value) for key, value in host.items()}

    def top(pair, row: int) -> TopK:
        values, ids = pair
        return TopK(ids[row], [text(i) for i in ids[row]], values[row])

    depth = tree.depths(draft.parents)
    on_path = set(verdict.path[: iteration.accepted])
    shown = iteration.accepted + final_emitted   # deepest level whose tests show in the output
    rejected = {i for i in verdict.tested if i not in verdict.path
                and draft.parents[i] in on_path | {-1} and depth[i] <= shown}
    residual_row = {node: row for row, node in enumerate(residuals)}
    for i, (token, parent) in enumerate(zip(draft.tokens.tolist(), draft.parents)):
        p_i, q_i = host["p"][i], host["q"][i]
        tested_p = verdict.p_left.get(i, p_i)   # a sibling after a rejection was tested against p'
        q_test = q_i if draft.sampled[i] else 1.0
        verdict_i = "accepted" if i in on_path else "rejected" if i in rejected else "unverified"
        step = DraftStep(
            position=depth[i], token_id=token, token=text(token), q=q_i, p=p_i,
            ratio=tested_p / q_test if q_test > 0 else None, u=host["u"][i] if host["u"] is not None else None,
            verdict=verdict_i, rule=settings.rule, beta=host["beta"][i],
            p_top=top(host["p_top"], parent + 1), q_top=top(host["q_top"], i), parent=parent,
            sampled=draft.sampled[i])
        if i in residual_row and verdict_i == "rejected":
            step.residual_mass = host["residual_mass"][residual_row[i]]
            step.residual_top = top(host["residual_top"], residual_row[i])
        iteration.drafts.append(step)
    if iteration.final is not None:
        if last_rejected is not None and iteration.drafts[last_rejected].residual_top is not None:
            iteration.final.top = iteration.drafts[last_rejected].residual_top
        else:
            node = verdict.path[iteration.accepted - 1] if iteration.accepted else -1
            iteration.final.top = top(host["p_top"], node + 1)
    return iteration


def _to_host(value):
    """Tensors and topk results to Python lists/floats (one transfer each)."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return value.tolist()
    values, ids = value
    return values.tolist(), ids.tolist()
