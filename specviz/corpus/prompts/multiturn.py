"""Multi-turn: an opening request (chat, code, math, writing, translation) and a follow-up that only
makes sense after the answer."""

from __future__ import annotations

import random
from dataclasses import replace

from specviz.corpus.prompts.chat import draw_chat
from specviz.corpus.prompts.code_tasks import draw_write
from specviz.corpus.prompts.longform import draw_longform
from specviz.corpus.prompts.math_problems import draw_math
from specviz.corpus.prompts.prompt import CorpusPrompt
from specviz.corpus.prompts.translation import draw_translation
from specviz.corpus.prompts.typos import add_typos

ANY = (
    "Can you make that shorter?", "Summarise your answer in one sentence.", "ok but why?", "Can you check your answer "
    "for mistakes?", "I don't get the part in the middle. Can you explain it differently?", "Could you go into more "
    "detail on the last part?", "Thanks! Can you say that again more simply?", "Why did you do it that way?",
)
CONSTRAINTS = ("I only had a weekend", "my budget were under $100", "I were explaining it to a child",
               "I lived in a very cold country", "I had no internet access", "I were doing it with a group of ten",
               "I had to finish by tomorrow", "I were a complete beginner", "I were 70 years old")
BY_KIND = {
    "chat": ("Give me a concrete example of the second point.", "Now explain it to a ten-year-old.", "Turn that into "
             "a table.", "What would you change if {constraint}?", "Can you expand on the first point?", "Which of "
             "those is the most important, and why?", "Are there any downsides you didn't mention?", "Can you put that "
             "as a numbered checklist?", "Thanks! And what should I avoid?", "Is that still true today?", "Rewrite "
             "that in a more formal tone.", "What's the most common mistake people make with this?", "Can you give me "
             "a source or a way to check that?", "Translate your answer into {lang}.", "Make it funnier.", "Now write "
             "it as a short email to my team.", "What questions should I ask next?", "Give me three follow-up "
             "exercises to practise this.", "That's too long, just the key points please.", "How would an expert "
             "disagree with what you said?", "Now make a version for social media."),
    "code": ("Add error handling to it.", "Now write unit tests for it.", "Can you make it faster?", "Rewrite it in "
             "{lang}.", "What's the time complexity?", "Explain the code line by line.", "Can you add type hints and "
             "docstrings?", "What happens with empty input?", "Refactor it into smaller functions.",
             "It fails when the input is very large. How would you fix that?", "Make it work without any libraries."),
    "math": ("Can you check that answer another way?", "What if all the numbers were doubled?", "Explain the second "
             "step again, more slowly.", "Can you give me a similar problem to try myself?", "Why did you multiply "
             "there instead of dividing?", "Is there a faster method?", "Now write it as one formula."),
    "longform": ("Make it about half as long.", "Give it a better title and opening line.", "Rewrite it for a "
                 "younger audience.", "Change the ending.", "Add a section with practical tips.", "Make the tone "
                 "more serious.", "Now write a three-sentence summary of it."),
    "translation": ("Is there a more informal way to say it?", "Can you explain the grammar of your translation?",
                    "How would you pronounce that?", "Now translate it back into English word for word.",
                    "Are there regional differences in how people would say this?"),
}
LANGS = ("Python", "JavaScript", "Go", "Rust", "Java", "C", "TypeScript")
SPOKEN = ("French", "Spanish", "German", "Italian", "Portuguese", "Japanese", "Chinese", "Russian")
OPENERS = ((draw_chat, 0.55), (draw_write, 0.15), (draw_math, 0.12), (draw_longform, 0.08), (draw_translation, 0.10))


def draw_multiturn(rng: random.Random, split: str) -> CorpusPrompt:
    """An opening prompt of `split` and a follow-up for after its answer."""
    draw = rng.choices([d for d, _ in OPENERS], [w for _, w in OPENERS])[0]
    opening = draw(rng, split)
    kind = "chat" if opening.source.startswith("question:") else opening.kind    # a question about code: no code yet
    follow_up = rng.choice(BY_KIND[kind] if rng.random() < 0.7 else ANY)
    follow_up = follow_up.format(constraint=rng.choice(CONSTRAINTS),
                                 lang=rng.choice(LANGS if opening.kind == "code" else SPOKEN))
    if rng.random() < 0.1:
        follow_up = add_typos(follow_up, rng, rate=0.05)
    return replace(opening, kind="multiturn", follow_up=follow_up)
