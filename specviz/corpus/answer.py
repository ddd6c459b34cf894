"""The target answers a batch of prompts at once: the corpus's answers are the target's own.

Prompts are left-padded into one batch with a shared KV cache; each decoding step feeds every
unfinished row its last token. A row that reaches EOS (or `max_new_tokens`) leaves the batch and
the cache, so one long answer does not make the finished rows compute on (with answers of 20 to
512 tokens that halves the work). Each row draws its tokens with a generator of its own through the
Gumbel-max trick, argmax(logits / T + G) with G = −log(−log U), which samples softmax(logits / T)
exactly; so a row's answer depends on its seed, not on which rows shared its batch. T = 0 is greedy.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache

from specviz.models import LoadedModel


@dataclass(frozen=True)
class Ask:
    """One prompt to answer: its ids, the temperature (0 = greedy) and the row's sampling seed."""

    prompt: list[int]
    temperature: float = 0.0
    seed: int = 0


def _next_tokens(logits: torch.Tensor, asks: list[Ask], generators: list[torch.Generator | None]) -> torch.Tensor:
    """One token per row from logits [B, V]: argmax for greedy rows, Gumbel-max at T for the others."""
    logits = logits.float()
    noisy = []
    for row, ask, generator in zip(logits, asks, generators):
        if ask.temperature <= 0:
            noisy.append(row)
            continue
        u = torch.rand(row.shape, generator=generator, device=row.device).clamp_(min=1e-20)
        noisy.append(row / ask.temperature - torch.log(-torch.log(u)))
    return torch.stack(noisy).argmax(-1)


@torch.no_grad()
def answer(target: LoadedModel, asks: list[Ask], max_new_tokens: int) -> list[list[int]]:
    """The target's answer ids to each prompt (EOS included when it came), in the order asked."""
    model, device = target.model, target.device
    width = max(len(a.prompt) for a in asks)
    ids = torch.zeros(len(asks), width, dtype=torch.long, device=device)
    mask = torch.zeros_like(ids)
    for b, a in enumerate(asks):
        ids[b, width - len(a.prompt):] = torch.tensor(a.prompt, device=device)
        mask[b, width - len(a.prompt):] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache()
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   use_cache=True, logits_to_keep=1).logits[:, -1]
    generators = [torch.Generator(device).manual_seed(a.seed) if a.temperature > 0 else None for a in asks]
    answers: list[list[int]] = [[] for _ in asks]
    rows = list(range(len(asks)))   # the asks still in the batch, in batch order
    eos = torch.tensor(sorted(target.eos_ids), device=device)
    for step in range(max_new_tokens):
        token = _next_tokens(logits, [asks[r] for r in rows], [generators[r] for r in rows])
        for r, t in zip(rows, token.tolist()):
            answers[r].append(t)
        going = ~torch.isin(token, eos)
        if step == max_new_tokens - 1 or not bool(going.any()):
            break
        if not bool(going.all()):
            keep = going.nonzero().flatten()
            cache.batch_select_indices(keep)
            rows = [rows[i] for i in keep.tolist()]
            token, mask, positions = token[keep], mask[keep], positions[keep]
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        positions = positions[:, -1:] + 1
        logits = model(input_ids=token[:, None], attention_mask=mask, position_ids=positions,
                       past_key_values=cache, use_cache=True).logits[:, -1]
    return answers
