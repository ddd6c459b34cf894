"""Summarising real passages: bullet points, one sentence, TL;DR, for a manager, key takeaways."""

from __future__ import annotations

import random

from specviz.corpus.prompts.passages import draw_passage
from specviz.corpus.prompts.phrasing import frame, instruct, lay_out
from specviz.corpus.prompts.prompt import CorpusPrompt, ask

BANDS = ((1_200, 2_500, 0.4), (2_500, 5_000, 0.4), (5_000, 8_000, 0.2))    # characters: about 300-2 000 tokens
FAMILY_WEIGHTS = {"license": 0.5, "copyright": 0.6, "readme": 1.5, "pypi": 1.5, "stdlib": 1.5}

ASKS = (
    "Summarize the following passage in {n} bullet points.", "TL;DR this:", "Give me a one-sentence summary of "
    "this text.", "Summarize this for a busy manager with no technical background.", "What are the key takeaways "
    "from this passage?", "Condense this into a short paragraph.", "Read this and tell me the main point.",
    "Write an executive summary (three or four sentences) of the text below.", "Extract the {n} most important "
    "facts from this text.", "Write a headline and a two-sentence summary for this.", "Summarise this in under "
    "{words} words.", "Explain what this text says as if you were telling a friend.", "Summarize the text below. "
    "Then list anything that is unclear or missing.", "Can you give me the gist of this?", "Create study notes "
    "from this passage: a summary, then key terms with definitions.", "Summarize each section of this text in one "
    "line.", "Boil this down to what a new user actually needs to know.", "Write a short abstract for this text.",
    "summarize pls", "I don't have time to read all of this. What does it say?", "Give me a summary with a "
    "'What', 'Why' and 'How' section.", "Turn this into a short FAQ of three to five questions and answers.",
    "Summarise the passage below in plain English, avoiding jargon.", "What is this text about, and who is it for?",
)
FAMILY_ASKS = {
    "license": ("Summarize this license in plain English: what am I allowed to do, and what must I do in return?",
                "Does this license let me use the software in a commercial product? Summarize the relevant parts.",
                "What are the main obligations in this license text? Keep it short."),
    "copyright": ("Summarize the licensing situation described here.", "What do these notes say about how the "
                  "package may be used and shared? Summarize briefly."),
    "readme": ("Summarize this README: what is the software for and how do I start using it?",
               "Summarize these package notes for a system administrator."),
    "pypi": ("What is this Python package for? Summarize its description.", "Summarize this project description "
             "and say who would find the package useful.", "Give me a three-bullet summary of this library's "
             "features."),
    "stdlib": ("Summarize this documentation for a developer who has never used {title}.", "Summarize what "
               "{title} provides, based on these docs.", "Write a cheat sheet summarizing the documentation below."),
}
LAYOUTS = ("{ask}\n\n{text}", "{ask}\n\n\"\"\"\n{text}\n\"\"\"", "{text}\n\n{ask}", "{ask}\n\n---\n{text}\n---",
           "Text:\n{text}\n\nTask: {ask}", "<document>\n{text}\n</document>\n\n{ask}", "{ask}\n\n```\n{text}\n```")


def draw_summarize(rng: random.Random, split: str) -> CorpusPrompt:
    """A request to summarise a passage of 300-2 000 tokens from a document of `split`."""
    low, high, _ = rng.choices(BANDS, [b[2] for b in BANDS])[0]
    document, text = draw_passage(rng, split, low, high, FAMILY_WEIGHTS)
    asks = FAMILY_ASKS[document.family] if rng.random() < 0.25 else ASKS
    request = rng.choice(asks).format(n=rng.randint(3, 7), words=rng.choice((50, 80, 100, 150)), title=document.title)
    request = frame(request, rng, chatter=0.3, casual=0.05)
    text = instruct(lay_out(rng.choice(LAYOUTS), request, text=text), rng, 0.08, brief=False)
    return ask("summarize", text, document.source)
