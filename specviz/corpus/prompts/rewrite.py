"""Rewriting: copy-editing, tone, simplifying, shortening and restructuring paragraphs of the
passages and everyday drafts; the fix-it requests get typos put in first."""

from __future__ import annotations

import random

from specviz.corpus.prompts.drafts import draw_draft
from specviz.corpus.prompts.passages import draw_passage
from specviz.corpus.prompts.phrasing import frame, instruct, lay_out
from specviz.corpus.prompts.prompt import CorpusPrompt, ask
from specviz.corpus.prompts.splits import split_of
from specviz.corpus.prompts.typos import add_typos

FIX = ("Fix the grammar and spelling in this paragraph:", "Proofread this and correct any mistakes:", "Please correct "
       "the typos in the text below, changing nothing else.", "Can you clean up the spelling and punctuation here?",
       "Correct this text and list the changes you made.", "fix my spelling pls", "Edit this for grammar, spelling "
       "and clarity:")
STYLE = (
    "Make this more formal:", "Rewrite this in a casual, friendly tone:", "Simplify this so a ten-year-old could "
    "understand it:", "Shorten this to about half its length:", "Turn this into a bulleted list:", "Paraphrase this "
    "paragraph without changing its meaning:", "Make this sound more confident:", "Rewrite this in plain English, "
    "avoiding jargon:", "Rewrite this as a short social media post (under 280 characters):", "Make this more "
    "concise:", "Rewrite this in the active voice:", "Make this sound more enthusiastic:", "Rewrite this so it is "
    "polite but firm:", "Give me three alternative versions of the first sentence, then rewrite the whole text.",
    "Rewrite this as an email to a customer:", "Turn this into a short dialogue between two people:", "Rewrite this "
    "for a README introduction:", "Rewrite this for an audience of non-native English speakers: short sentences, "
    "common words.", "Make this warmer and more personal:", "Rewrite this so it reads well aloud, as a short "
    "announcement:", "Improve the flow of this text without making it longer:", "Rewrite this in a more "
    "professional tone for a report:",
)
LAYOUTS = ("{ask}\n\n{text}", "{ask}\n\n\"{text}\"", "{text}\n\n{ask}", "{ask}\n---\n{text}\n---",
           "Original:\n{text}\n\nInstruction: {ask}")
FAMILY_WEIGHTS = {"license": 0.3, "copyright": 0.6, "readme": 1.5, "pypi": 1.5, "stdlib": 1.0}


def draw_rewrite(rng: random.Random, split: str) -> CorpusPrompt:
    """A rewriting request on a passage paragraph (mostly) or an everyday draft of `split`."""
    if rng.random() < 0.3:
        while True:
            text, source = draw_draft(rng)
            if split_of(source) == split:
                break
    else:
        document, text = draw_passage(rng, split, 200, 1_500, FAMILY_WEIGHTS, prose=True)
        source = document.source
    fixing = rng.random() < 0.35
    if fixing:
        text = add_typos(text, rng, rate=rng.uniform(0.03, 0.1))
    request = frame(rng.choice(FIX if fixing else STYLE), rng, chatter=0.25, casual=0.05, typos=0.0)
    return ask("rewrite", instruct(lay_out(rng.choice(LAYOUTS), request, text=text), rng, 0.05, brief=False), source)
