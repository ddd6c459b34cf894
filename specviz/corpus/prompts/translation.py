"""Translation: program messages and their translations from the gettext catalogs, into and out of
English and between two other languages, and English paragraphs from the passages."""

from __future__ import annotations

import random
from functools import cache

from specviz.corpus.prompts.catalogs import LANGUAGES, Message, messages
from specviz.corpus.prompts.passages import draw_passage
from specviz.corpus.prompts.phrasing import frame, instruct
from specviz.corpus.prompts.prompt import CorpusPrompt, ask
from specviz.corpus.prompts.splits import split_of
from specviz.errors import SpecvizError

MAJOR = ("French", "Spanish", "German", "Italian", "Portuguese", "Chinese", "Japanese", "Russian")

INTO = (
    "Translate to {lang}: {text}", "How do you say \"{text}\" in {lang}?", "Please translate the following sentence "
    "into {lang}.\n\n{text}", "Translate this software message into {lang}, keeping it natural: \"{text}\"",
    "I'm localizing an app. What's a good {lang} translation for: {text}", "{lang} translation please: {text}",
    "Can you put this into {lang}? {text}", "Translate into {lang} and give a word-by-word gloss:\n{text}",
    "English: {text}\n{lang}:",
    "What's the {lang} for \"{text}\"? Give a formal and an informal version if they differ.",
    "Translate the text below into {lang}.\n\nText: {text}", "my {lang} is rusty, how would I write this: {text}",
)
OUT_OF = (
    "What does this {lang} sentence mean? {text}", "Translate from {lang} to English: {text}",
    "Translate into English:\n{text}", "My colleague wrote this in {lang}: \"{text}\" What does it say?",
    "Explain this {lang} text in English and point out any tricky words: {text}", "{lang}: {text}\nEnglish:",
    "I saw this message on my computer and it's in {lang}. What does it mean? \"{text}\"",
    "Can you translate this to English and tell me which language it is? {text}",
)
BETWEEN = (
    "Translate this {lang} sentence into {other}: {text}", "Here is a {lang} sentence: \"{text}\" How would you say "
    "the same thing in {other}?", "{lang} to {other}, please: {text}",
)
CHECK = (
    "Is this a correct {lang} translation of \"{english}\"?\n\n{text}", "I translated \"{english}\" into {lang} as "
    "\"{text}\". Is that right? How could it be improved?", "Check my {lang}: \"{english}\" -> \"{text}\"",
)
BATCH = ("Translate each of these into {lang}:\n{items}", "Give the {lang} translation of each line:\n{items}",
         "Please translate these interface strings into {lang}, keeping them short:\n{items}")
PARAGRAPH = ("Translate this paragraph into {lang}:\n\n{text}", "Can you translate the following into {lang}? Keep "
             "the technical terms accurate.\n\n{text}", "Translate to {lang}, in a natural style:\n\n\"{text}\"",
             "Please give me this text in {lang}:\n\n{text}")


@cache
def messages_of(language: str, split: str) -> tuple[Message, ...]:
    return tuple(m for m in messages(language) if split_of(m.key) == split)


@cache
def by_english(language: str, split: str) -> dict[str, Message]:
    return {m.english: m for m in messages_of(language, split)}


@cache
def languages(split: str) -> tuple[str, ...]:
    """The languages with catalog messages in `split` on this machine."""
    return tuple(lang for lang in LANGUAGES if messages_of(lang, split))


def draw_translation(rng: random.Random, split: str) -> CorpusPrompt:
    """A translation prompt of `split`: mostly catalog messages, some passage paragraphs."""
    found = languages(split)
    if not found or rng.random() < 0.15:
        return _paragraph(rng, split)
    lang = rng.choices(found, [3 if lang in MAJOR else 1 for lang in found])[0]
    pool = messages_of(lang, split)
    message = rng.choice(pool)
    how = rng.random()
    if how < 0.4:
        text = rng.choice(INTO).format(lang=lang, text=message.english)
    elif how < 0.7:
        text = rng.choice(OUT_OF).format(lang=lang, text=message.translation)
    elif how < 0.8 and (others := [o for o in found if o != lang and message.english in by_english(o, split)]):
        text = rng.choice(BETWEEN).format(lang=lang, other=rng.choice(others), text=message.translation)
    elif how < 0.9:
        shown = message if rng.random() < 0.6 else rng.choice(pool)   # sometimes another message's translation
        text = rng.choice(CHECK).format(lang=lang, english=message.english, text=shown.translation)
    else:
        picked = [message, *rng.sample(pool, min(len(pool), rng.randint(2, 5)))]
        items = "\n".join(f"{i}. {m.english}" for i, m in enumerate(dict.fromkeys(picked), 1))
        text = rng.choice(BATCH).format(lang=lang, items=items)
    text = frame(text, rng, chatter=0.25, casual=0.05, typos=0.0, asks=False)
    return ask("translation", instruct(text, rng, 0.05), message.source)


def _paragraph(rng: random.Random, split: str) -> CorpusPrompt:
    """An English paragraph from the passages, to translate."""
    try:
        document, text = draw_passage(rng, split, 150, 900, {"license": 0.3, "copyright": 0.5}, prose=True)
    except SpecvizError as error:
        raise SpecvizError(f"no translation sources on this machine: no catalogs in {LANGUAGES} and {error}") from None
    lang = rng.choice(MAJOR) if rng.random() < 0.8 else rng.choice(tuple(LANGUAGES))
    return ask("translation", rng.choice(PARAGRAPH).format(lang=lang, text=text), document.source)
