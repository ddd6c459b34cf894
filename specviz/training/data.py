"""Distillation data: the target answers a prompt set, and we keep what a drafter learns from.

Sequence-level distillation (SpecDec, Xia et al.; DistillSpec, Zhou et al.): the target writes
greedy answers to the shipped prompts, and optionally further answers sampled from its own
distribution (T = 1), which give more distinct contexts per prompt; for every answer position we
cache once the target's top-k next-token log-probs (for KL(p_target ‖ p_draft)) and its last
hidden state, the feature an EAGLE head reads (Li et al. 2024). Prompts are left-padded and
decoded as one batch with a shared KV cache, which is several times faster than one sequence at
a time.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import DynamicCache

from specviz.files import write_whole
from specviz.models import LoadedModel, cache_dir

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "assets" / "prompts"


@dataclass
class Sample:
    """One prompt + target answer.

    tokens [L]: prompt then answer. features [L-1, H] fp16: the target's last hidden state at
    every position that was fed (the final token never is). top_ids / top_logp [A, K]: the
    target's k most likely next tokens at the A positions that predict the answer tokens.
    """

    tokens: torch.Tensor
    n_prompt: int
    features: torch.Tensor
    top_ids: torch.Tensor
    top_logp: torch.Tensor

    @property
    def n_answer(self) -> int:
        return len(self.tokens) - self.n_prompt


def load_prompts(split: str) -> list[str]:
    """The shipped prompts of one split ("train" or "heldout")."""
    return json.loads((PROMPTS_DIR / f"{split}.json").read_text())["prompts"]


@torch.no_grad()
def answer_batch(target: LoadedModel, prompts: list[list[int]], max_new_tokens: int, top_k: int,
                 generator: torch.Generator | None = None) -> list[Sample]:
    """Answers to a batch of tokenized prompts with their features and top-k log-probs: greedy, or
    sampled at T = 1 with `generator`."""
    model, device = target.model, target.device
    width = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), width, dtype=torch.long, device=device)
    mask = torch.zeros_like(ids)
    for b, p in enumerate(prompts):
        ids[b, width - len(p):] = torch.tensor(p)
        mask[b, width - len(p):] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache()
    hidden = model.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                         past_key_values=cache, use_cache=True).last_hidden_state
    feats = [[hidden[b, width - len(p):]] for b, p in enumerate(prompts)]
    answers, tops, logps = [[] for _ in prompts], [[] for _ in prompts], [[] for _ in prompts]
    done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    eos = torch.tensor(sorted(target.eos_ids), device=device)
    last = hidden[:, -1]
    for step in range(max_new_tokens):
        logp = torch.log_softmax(model.lm_head(last).float(), dim=-1)
        top = logp.topk(top_k, dim=-1)
        token = top.indices[:, 0] if generator is None else torch.multinomial(logp.exp(), 1, generator=generator)[:, 0]
        for b in torch.nonzero(~done).flatten().tolist():
            answers[b].append(int(token[b]))
            tops[b].append(top.indices[b])
            logps[b].append(top.values[b])
        done |= torch.isin(token, eos)
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        positions = positions[:, -1:] + 1
        last = model.model(input_ids=token[:, None], attention_mask=mask, position_ids=positions,
                           past_key_values=cache, use_cache=True).last_hidden_state[:, -1]
        for b in torch.nonzero(~done).flatten().tolist():
            feats[b].append(last[b:b + 1])
    return [Sample(tokens=torch.tensor(p + a, dtype=torch.int32), n_prompt=len(p),
                   features=torch.cat(f)[: len(p) + len(a) - 1].half(),
                   top_ids=torch.stack(t).int(), top_logp=torch.stack(lp).half())
            for p, a, f, t, lp in zip(prompts, answers, feats, tops, logps)]


def answer_in_batches(target: LoadedModel, prompts: list[str], max_new_tokens: int = 128, top_k: int = 20,
                      batch_size: int = 32, seed: int | None = None) -> Iterator[tuple[list[str], list[Sample]]]:
    """Target answers to `prompts` (chat template applied), a batch of similar prompt lengths at a
    time: greedy, or sampled at T = 1 when `seed` is given (each batch seeded from `seed` and its
    prompts, so the same batch gets the same answers again)."""
    encoded = [target.encode_prompt(p) for p in prompts]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    with tqdm(total=len(encoded), desc="target answers" + ("" if seed is None else f" (sampled, seed {seed})"),
              unit="prompt") as bar:
        for start in range(0, len(order), batch_size):
            picked = order[start:start + batch_size]
            chunk = [prompts[i] for i in picked]
            generator = None
            if seed is not None:
                generator = torch.Generator(target.device).manual_seed(int(_digest([seed, *chunk]), 16) % 2**63)
            yield chunk, answer_batch(target, [encoded[i] for i in picked], max_new_tokens, top_k, generator)
            bar.update(len(chunk))


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


@dataclass
class Answers:
    """The samples of a split, in prompt order, and the target time spent answering them: the sum
    of their shares of their batches' wall time (None for any loaded without a recorded time)."""

    samples: list[Sample]
    seconds: float | None


def cached_samples(target: LoadedModel, split: str, fingerprint: str, max_new_tokens: int = 128,
                   top_k: int = 20, batch_size: int = 64, seed: int | None = None, limit: int = 0) -> Answers:
    """`answer_in_batches` for a shipped split (its first `limit` prompts when > 0), in prompt
    order, cached on disk one batch at a time.

    The cache maps prompt -> sample per target and settings (greedy, or sampled with `seed`), so an
    interrupted run keeps the batches it finished and prompts added to a split later are the only
    ones the target answers.
    """
    prompts = load_prompts(split)[: limit or None]
    sampled = "" if seed is None else f"-sampled{seed}"
    folder = cache_dir() / "training" / f"answers-{fingerprint}-{max_new_tokens}-{top_k}{sampled}"
    answers, seconds = {}, {}
    for shard in sorted(folder.glob("*.pt")):
        for d in torch.load(shard):
            prompt = d.pop("prompt")
            seconds[prompt] = d.pop("seconds")
            answers[prompt] = Sample(**d)
    missing = [p for p in dict.fromkeys(prompts) if p not in answers]
    if missing:
        folder.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        for chunk, samples in answer_in_batches(target, missing, max_new_tokens, top_k, batch_size, seed):
            share = (time.perf_counter() - began) / len(chunk)
            name = _digest(chunk)
            kept = [{"prompt": p, "seconds": share, **vars(s)} for p, s in zip(chunk, samples)]
            write_whole(folder / f"{name}.pt", lambda temporary, kept=kept: torch.save(kept, temporary))
            answers.update(zip(chunk, samples))
            seconds.update(dict.fromkeys(chunk, share))
            began = time.perf_counter()
    times = [seconds[p] for p in prompts]
    return Answers([answers[p] for p in prompts], None if None in times else sum(times))
