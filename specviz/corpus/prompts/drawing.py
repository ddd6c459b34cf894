"""Drawing distinct prompts: a kind's drawer is called until there are enough different ones."""

from __future__ import annotations

import random
from collections.abc import Callable

from specviz.corpus.prompts.prompt import CorpusPrompt

Drawer = Callable[[random.Random, str], CorpusPrompt]
ATTEMPTS_PER_PROMPT = 30


def collect(draw: Drawer, n: int, split: str, rng: random.Random) -> list[CorpusPrompt]:
    """`n` prompts from `draw(rng, split)`, none repeating another's messages and follow-up (fewer
    only when the drawer keeps repeating itself: its sources are nearly exhausted)."""
    prompts: list[CorpusPrompt] = []
    seen: set[tuple] = set()
    for _ in range(ATTEMPTS_PER_PROMPT * n + 100):
        if len(prompts) >= n:
            break
        prompt = draw(rng, split)
        key = (tuple(m["content"] for m in prompt.messages), prompt.follow_up)
        if key not in seen:
            seen.add(key)
            prompts.append(prompt)
    return prompts
