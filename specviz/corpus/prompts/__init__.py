"""Prompts of every kind for the distillation corpus, built from templates, topics and real text on
this machine, each source of content in one split (train or held out).

    build_prompts("code", 100, "train", seed=0)   # 100 distinct coding prompts, the same every time

Kinds: chat (advice, explanations), multiturn (an opening and a follow-up), code (writing tasks and
editing real standard library code), math (word problems with reasoning), summarize (real passages),
rag (answering from numbered documents), translation (gettext catalogs, passages), rewrite
(copy-editing and tone), longform (essays, stories, letters, speeches).
"""

from __future__ import annotations

import random

from specviz.corpus.prompts.chat import draw_chat
from specviz.corpus.prompts.code_tasks import draw_code
from specviz.corpus.prompts.drawing import Drawer, collect
from specviz.corpus.prompts.longform import draw_longform
from specviz.corpus.prompts.math_problems import draw_math
from specviz.corpus.prompts.multiturn import draw_multiturn
from specviz.corpus.prompts.prompt import CorpusPrompt
from specviz.corpus.prompts.rag import draw_rag
from specviz.corpus.prompts.rewrite import draw_rewrite
from specviz.corpus.prompts.splits import SPLITS
from specviz.corpus.prompts.summarize import draw_summarize
from specviz.corpus.prompts.translation import draw_translation
from specviz.errors import SpecvizError

KINDS: tuple[str, ...] = ("chat", "multiturn", "code", "math", "summarize", "rag", "translation", "rewrite",
                          "longform")

# The share of each kind in the training data, roughly as people use assistants. Published studies of
# chat-assistant logs agree on the order: asking for advice and explanations ("how do I", "what is")
# is the largest single use; writing comes next, and most of it is editing, summarising or
# translating text the user brings rather than writing from nothing; coding is a large share of
# use by developers but a minority overall; tutoring and math, then translation, are smaller again.
# Conversations that go on past one turn are common, so multi-turn gets a share of its own (its
# openings are mostly chat, so advice and explanation make up over a third of all prompts), and
# answering from given documents stands for the retrieval-augmented assistants and search tools.
SHARES: dict[str, float] = {
    "chat": 0.28, "multiturn": 0.12, "code": 0.14, "math": 0.09, "summarize": 0.08, "rag": 0.07,
    "translation": 0.06, "rewrite": 0.09, "longform": 0.07,
}
DRAWERS: dict[str, Drawer] = {
    "chat": draw_chat, "multiturn": draw_multiturn, "code": draw_code, "math": draw_math,
    "summarize": draw_summarize, "rag": draw_rag, "translation": draw_translation, "rewrite": draw_rewrite,
    "longform": draw_longform,
}

__all__ = ["KINDS", "SHARES", "CorpusPrompt", "build_prompts"]


def build_prompts(kind: str, n: int, split: str, seed: int) -> list[CorpusPrompt]:
    """`n` distinct prompts of `kind` from the sources of `split` ("train" or "heldout"), the same
    for the same arguments on the same machine (fewer than `n` only if the sources run out)."""
    if kind not in KINDS:
        raise SpecvizError(f"unknown prompt kind {kind!r}; expected one of {', '.join(KINDS)}")
    if split not in SPLITS:
        raise SpecvizError(f"unknown split {split!r}; expected 'train' or 'heldout'")
    if not isinstance(n, int) or n < 0:
        raise SpecvizError(f"the number of prompts must be a whole number ≥ 0, not {n!r}")
    return collect(DRAWERS[kind], n, split, random.Random(f"{kind}:{split}:{seed}"))
