"""Math: word problems and exercises asking for reasoning, each instance (its numbers and names) in one split."""

from __future__ import annotations

import random

from specviz.corpus.prompts.exercises import EXERCISES
from specviz.corpus.prompts.math_templates import instantiate
from specviz.corpus.prompts.phrasing import frame, instruct
from specviz.corpus.prompts.prompt import CorpusPrompt, ask
from specviz.corpus.prompts.splits import split_of
from specviz.corpus.prompts.word_problems import WORD_PROBLEMS

LEADS = (
    "", "", "", "Math problem: ", "Here's a question from my homework: ", "Word problem: ", "Help me solve this: ",
    "My daughter is stuck on this one. ", "Q: ", "Can you solve this? ", "I'm practising for an exam. ",
    "Here's a puzzle for you. ", "Problem:\n", "Quick math question: ", "I keep getting this wrong: ",
)
REASONING = (
    "Show your reasoning step by step.", "Explain each step.", "Think it through step by step, then give the final "
    "answer on its own line.", "Please show your working.", "Walk me through how to solve it.",
    "Give the answer first, then explain how you got it.", "Solve it and explain it the way a tutor would.",
    "Check your answer at the end.", "Explain your method so I can do similar ones myself.",
    "Let's think step by step.", "Show all the calculations.", "", "Be careful with the units.",
    "Write the final answer in bold.", "Use short numbered steps.",
)


def draw_math(rng: random.Random, split: str) -> CorpusPrompt:
    """A word problem (mostly) or exercise whose instance belongs to `split`."""
    problems = WORD_PROBLEMS if rng.random() < 0.75 else EXERCISES
    while True:
        text, key = instantiate(rng.choice(problems), rng)
        if split_of(key) == split:
            break
    body = f"{rng.choice(LEADS)}{text}"
    how = rng.choice(REASONING)
    if how:
        body = f"{how}\n\n{body}" if rng.random() < 0.15 else f"{body} {how}"
    return ask("math", instruct(frame(body, rng, chatter=0.25, casual=0.05, typos=0.03), rng, 0.08), key)
