"""Realistic typing mistakes: swapped, dropped and doubled letters, common misspellings, lost apostrophes."""

from __future__ import annotations

import random
import re

MISSPELLINGS = {
    "receive": "recieve", "separate": "seperate", "definitely": "definately", "occurred": "occured",
    "until": "untill", "which": "wich", "a lot": "alot", "necessary": "neccessary", "their": "there",
    "its": "it's", "your": "you're", "than": "then", "because": "becuase", "beginning": "begining",
    "believe": "beleive", "environment": "enviroment", "government": "goverment", "really": "realy",
    "different": "diffrent", "tomorrow": "tommorow", "probably": "probly", "especially": "expecially",
    "address": "adress", "accommodate": "accomodate", "argument": "arguement", "calendar": "calender",
    "library": "libary", "February": "Febuary", "grammar": "grammer", "restaurant": "restaraunt",
    "successful": "succesful", "weird": "wierd", "whether": "wether", "could have": "could of",
    "should have": "should of", "already": "allready", "software": "sofware", "license": "lisence",
    "information": "infomation", "available": "availible", "following": "folowing", "version": "verison",
}
CONTRACTIONS = ("don't", "can't", "won't", "isn't", "doesn't", "I'm", "it's", "that's", "I've", "you're")
_WORD = re.compile(r"[A-Za-z]{4,}")


def add_typos(text: str, rng: random.Random, rate: float = 0.03) -> str:
    """`text` with about `rate` of its longer words mistyped (at least one mistake when `rate` > 0)."""
    words = list(_WORD.finditer(text))
    if not words or rate <= 0:
        return text
    count = max(1, round(rate * len(words)))
    chosen = sorted(rng.sample(words, min(count, len(words))), key=lambda m: m.start(), reverse=True)
    for match in chosen:
        text = text[:match.start()] + _mistype(match.group(), rng) + text[match.end():]
    return _misspell(text, rng)


def _mistype(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    how = rng.random()
    if how < 0.35:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if how < 0.65:
        return word[:i] + word[i + 1:]
    if how < 0.85:
        return word[:i] + word[i] + word[i:]
    neighbour = "qwertyuiopasdfghjklzxcvbnm"
    return word[:i] + rng.choice(neighbour) + word[i + 1:]


def _misspell(text: str, rng: random.Random) -> str:
    """Maybe one common misspelling and one lost apostrophe."""
    found = [w for w in MISSPELLINGS if re.search(rf"\b{re.escape(w)}\b", text)]
    if found and rng.random() < 0.6:
        word = rng.choice(found)
        text = re.sub(rf"\b{re.escape(word)}\b", MISSPELLINGS[word], text, count=1)
    lost = [c for c in CONTRACTIONS if c in text]
    if lost and rng.random() < 0.5:
        word = rng.choice(lost)
        text = text.replace(word, word.replace("'", ""), 1)
    return text
