"""Growing the corpus: new prompts of every kind, answered by the target, saved as they finish.

A run is asked for N more answers. It splits them over the prompt kinds so that the whole corpus
moves towards `prompts.SHARES`, builds that many new training prompts (never one already in the
corpus), draws each answer greedily or sampled at a temperature between 0.7 and 1.0, and answers
them a batch of similar prompt lengths at a time. A multi-turn prompt is answered twice: first its
opening turn, then the conversation with that answer and the user's follow-up.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from specviz.corpus.answer import Ask, answer
from specviz.corpus.prompts import KINDS, SHARES, CorpusPrompt, build_prompts
from specviz.corpus.store import CORPUS_DIR, SHARDS, Record, digest, load_records, save_shard, shard_paths
from specviz.drafters.weights import fingerprint
from specviz.models import LoadedModel

TEMPERATURES = (0.7, 0.8, 0.9, 1.0)
FIRST_TURN_TOKENS = 256   # the opening answer of a multi-turn prompt


@dataclass(frozen=True)
class GrowSettings:
    answers: int
    max_new_tokens: int = 512
    batch_size: int = 16
    greedy_share: float = 0.4     # the rest are sampled at one of TEMPERATURES
    max_prompt_tokens: int = 2500
    seed: int = 0


def quotas(counts: Counter, more: int, shares: dict[str, float] = SHARES) -> dict[str, int]:
    """How many of `more` new answers each kind gets, so that the corpus's counts approach
    shares × total: each kind's shortfall, scaled to `more` by largest remainders."""
    total = sum(counts.values()) + more
    short = {k: max(0.0, shares[k] * total - counts.get(k, 0)) for k in shares}
    scale = more / sum(short.values()) if sum(short.values()) else 0.0
    exact = {k: v * scale for k, v in short.items()}
    given = {k: int(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: given[k] - exact[k])[: more - sum(given.values())]:
        given[k] += 1
    return given


def prompt_key(prompt: CorpusPrompt) -> str:
    """A prompt's identity: its messages and, for a multi-turn one, its follow-up."""
    return digest([*prompt.messages, {"follow_up": prompt.follow_up}])


def new_prompts(kind: str, n: int, seen: set[str], seed: int) -> list[CorpusPrompt]:
    """`n` training prompts of `kind` whose keys are not in `seen` (asking the builder for more
    with further seeds until there are enough, or it has nothing new)."""
    chosen: list[CorpusPrompt] = []
    for attempt in range(8):
        if len(chosen) >= n:
            break
        for prompt in build_prompts(kind, 2 * (n - len(chosen)) + 8, "train", seed * 1009 + attempt):
            key = prompt_key(prompt)
            if key not in seen and len(chosen) < n:
                seen.add(key)
                chosen.append(prompt)
    return chosen


def grow(target: LoadedModel, settings: GrowSettings, meta: dict, folder: Path = CORPUS_DIR,
         log: Callable[[str], None] = print) -> Path:
    """Answer `settings.answers` new prompts into a new shard of the corpus in `folder`; return its path."""
    existing = load_records(folder, target)
    seen = {r.digest for r in existing}
    counts = Counter(r.kind for r in existing)
    rng = random.Random(settings.seed * 7919 + len(shard_paths(folder)))
    plan = quotas(counts, settings.answers)
    log(f"corpus: {len(existing)} records; adding {settings.answers}: "
        + ", ".join(f"{k} {plan[k]}" for k in KINDS if plan[k]))
    prompts = [p for kind in KINDS if plan[kind]
               for p in new_prompts(kind, plan[kind], seen, rng.randrange(2**31))]
    rng.shuffle(prompts)  # kinds interleaved, so a run stopped early still has a mixture
    path = folder / SHARDS / f"{time.strftime('%Y%m%d-%H%M%S')}-{rng.randrange(16**6):06x}.npz"
    records: list[Record] = []
    saved, began, tokens, answerer = 0, time.perf_counter(), 0, fingerprint(target)
    with tqdm(total=len(prompts), desc="corpus answers", unit="prompt") as bar:
        try:
            for batch in batches(target, prompts, settings, rng):
                for prompt, ask, ids in zip(*batch):
                    records.append(_record(prompt, ask, ids))
                    tokens += len(ids)
                seconds = time.perf_counter() - began
                save_shard(path, records, {**meta, "target": target.name, "target_fingerprint": answerer,
                                           **vars(settings), "seconds": round(seconds, 1), "answer_tokens": tokens})
                saved = len(records)   # a stop inside save_shard leaves the shard before, never half of it
                bar.update(len(batch[0]))
                bar.set_postfix(tokens_per_s=f"{tokens / seconds:.0f}")
        except KeyboardInterrupt:
            log(f"stopped: {saved} finished answers kept in {path}" if saved else
                "stopped before the first batch finished: nothing written")
            raise
    log(f"wrote {len(records)} answers ({tokens} tokens) to {path} in {time.perf_counter() - began:.0f} s")
    return path


def batches(target: LoadedModel, prompts: list[CorpusPrompt], settings: GrowSettings, rng: random.Random):
    """Answered batches as (prompts, asks, answer ids): windows of 8 batches sorted by prompt length,
    so each batch pads little and the kinds stay mixed along the run."""
    window = 8 * settings.batch_size
    for start in range(0, len(prompts), window):
        chunk = prompts[start:start + window]
        asks = [_ask(target, m, settings, rng) for m in conversations(target, chunk, settings.batch_size)]
        order = sorted((i for i, a in enumerate(asks) if len(a.prompt) <= settings.max_prompt_tokens),
                       key=lambda i: len(asks[i].prompt))
        for b in range(0, len(order), settings.batch_size):
            picked = order[b:b + settings.batch_size]
            ids = answer(target, [asks[i] for i in picked], settings.max_new_tokens)
            yield [chunk[i] for i in picked], [asks[i] for i in picked], ids


def conversations(target: LoadedModel, prompts: list[CorpusPrompt], batch_size: int) -> list[tuple[dict, ...]]:
    """Each prompt's full messages: a multi-turn prompt gets the target's greedy answer to its opening
    turn, then its follow-up."""
    multi = [i for i, p in enumerate(prompts) if p.follow_up]
    messages = [p.messages for p in prompts]
    for b in range(0, len(multi), batch_size):
        picked = multi[b:b + batch_size]
        first = answer(target, [Ask(target.encode_prompt(list(prompts[i].messages))) for i in picked],
                       FIRST_TURN_TOKENS)
        for i, ids in zip(picked, first):
            reply = target.tokenizer.decode(ids, skip_special_tokens=True).strip()
            messages[i] = (*prompts[i].messages, {"role": "assistant", "content": reply},
                           {"role": "user", "content": prompts[i].follow_up})
    return messages


def _ask(target: LoadedModel, messages: tuple[dict, ...], settings: GrowSettings, rng: random.Random) -> Ask:
    greedy = rng.random() < settings.greedy_share
    return Ask(target.encode_prompt(list(messages)), 0.0 if greedy else rng.choice(TEMPERATURES),
               -1 if greedy else rng.randrange(2**31))


def _record(prompt: CorpusPrompt, ask: Ask, ids: list[int]) -> Record:
    return Record(np.array(ask.prompt + ids, dtype=np.uint16), len(ask.prompt), prompt.kind, prompt.source,
                  ask.temperature, ask.seed, prompt_key(prompt))
