"""Answering from given documents: three to six numbered chunks of the passages (one relevant, the
rest distractors, some from the same document) and a question written from the relevant one."""

from __future__ import annotations

import random
import re

from specviz.corpus.prompts.cleaning import is_heading
from specviz.corpus.prompts.passages import Document, draw_passage, is_prose, window
from specviz.corpus.prompts.phrasing import frame
from specviz.corpus.prompts.prompt import CorpusPrompt, ask

CHUNK_BANDS = ((300, 700), (500, 1_200), (900, 1_600))
MAX_CHARS = 7_500           # all documents together: under about 2 000 tokens
FAMILY_WEIGHTS = {"license": 0.3, "copyright": 0.7, "readme": 1.5, "pypi": 1.5, "stdlib": 1.5}
STOPWORDS = set("""a about above after again all also an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having here how
if in into is it its itself just may might more most must no nor not now of off on once only or other our out over
own same shall should so some such than that the their them then there these they this those through to too under
until up upon use used uses using very was we were what when where which while who whom why will with would you your
software program file files version see following without""".split())

TERMS = (   # (pattern, how telling a match is)
    (re.compile(r"`[^`\n]{3,30}`"), 4),
    (re.compile(r"\b[A-Za-z]\w*(?:[._]\w+)+\b"), 3),
    (re.compile(r"\b[A-Z][a-z]+[A-Z]\w*\b"), 3),
    (re.compile(r"(?<=[a-z,] )[A-Z][A-Za-z0-9-]{2,}\b"), 2),
    (re.compile(r"\b[a-z]{9,}\b"), 1),
)
QUESTIONS = (
    "According to the documents, what is {kw}?", "Which document mentions {kw}, and what does it say about it?",
    "What do the documents say about {kw}?", "Using only the documents, explain the role of {kw}.",
    "Based on the sources above, how does {kw} work?", "Where in the documents is {kw} discussed? Quote the relevant "
    "sentence.", "Summarize everything the documents say about {kw}.", "What is the purpose of {kw}, according to "
    "the sources?", "How is {kw} used, based on the documents?", "Do any of the documents explain {kw}? If so, which "
    "ones, and what do they say?", "What problem does {kw} solve, according to the documents?", "I'm confused about "
    "{kw}. What do these documents say?", "Which document would you read first to learn about {kw}, and why?",
)
HEADING_QUESTIONS = ("What does the section \"{heading}\" explain?", "According to the documents, what should I know "
                     "about \"{heading}\"?", "Which document covers {heading}, and what are its main points?",
                     "Explain the part titled \"{heading}\" in simpler words, using only the documents.")
TITLE_QUESTIONS = ("What do the documents tell us about {title}?", "According to the sources, what is {title} "
                   "used for?", "Which of these documents are about {title}?", "Summarize what the documents say "
                   "about {title}, citing document numbers.")
CLAIM_QUESTIONS = ("Is the following statement supported by the documents? \"{claim}\"", "True or false, according "
                   "to the documents: {claim}")
OVERVIEW_QUESTIONS = ("Give a one-line summary of each document.", "Which two documents are most closely related, "
                      "and why?", "Which documents are about software licensing, and which are not?")
INSTRUCTIONS = (
    "Answer the question using only the documents below. If the documents do not say, say so.",
    "Use the following sources to answer. Cite the document numbers you relied on, like [2].",
    "You are given several documents. Read them and answer the question at the end.",
    "Answer based on the context. If the answer is not in the context, reply that you don't know.", "",
    "Here are some search results. Answer the question, citing sources by number.",
    "Context documents follow. Answer concisely and do not use outside knowledge.",
)
HEADERS = ("[{i}] {text}", "Document {i}:\n{text}", "Source {i} ({title}):\n{text}", "### Doc {i}\n{text}",
           "<doc id=\"{i}\">\n{text}\n</doc>", "({i}) {text}")


def draw_rag(rng: random.Random, split: str) -> CorpusPrompt:
    """A question over 3-6 numbered documents of `split`; in about one prompt in seven the passage
    the question was written from is left out, and the answer is that the documents do not say."""
    low, high = rng.choice(CHUNK_BANDS)
    count = rng.randint(3, 6)
    answerable = rng.random() >= 1 / 7
    relevant, relevant_text = draw_passage(rng, split, low, high, FAMILY_WEIGHTS)
    chunks = [(relevant, relevant_text)] if answerable else []
    used = set(relevant_text.split("\n\n"))
    for _ in range(10 * count):
        if len(chunks) >= count:
            break
        same = window(relevant, rng, low, high) if answerable and rng.random() < 0.3 else ""
        document, text = (relevant, same) if same else draw_passage(rng, split, low, high, FAMILY_WEIGHTS)
        paragraphs = set(text.split("\n\n"))
        if sum(len(t) for _, t in chunks) + len(text) > MAX_CHARS:
            break
        if not used & paragraphs:        # no two documents overlap (fewer documents if they keep doing so)
            used |= paragraphs
            chunks.append((document, text))
    question = _question(relevant, relevant_text, rng, " ".join(t for _, t in chunks))
    rng.shuffle(chunks)
    header = rng.choice(HEADERS)
    body = "\n\n".join(header.format(i=i, text=text, title=doc.title) for i, (doc, text) in enumerate(chunks, 1))
    instruction = rng.choice(INSTRUCTIONS)
    question = frame(question, rng, chatter=0.2, casual=0.05, typos=0.04)
    if not answerable and "say so" not in instruction and "don't know" not in instruction:
        question += " If the documents do not say, say so."
    if rng.random() < 0.8:
        text = f"{instruction}\n\n{body}\n\nQuestion: {question}".strip()
    else:
        text = f"{question}\n\n{body}\n\n{instruction}".strip()
    return ask("rag", text, relevant.source)


def _question(document: Document, text: str, rng: random.Random, everything: str) -> str:
    """A question about `text`: on a heading in it, its document's title, a claim from it, a
    keyword found in few of the documents, or all of them."""
    headings = [p for p in text.split("\n\n") if is_heading(p)]
    how = rng.random()
    if headings and how < 0.2:
        return rng.choice(HEADING_QUESTIONS).format(heading=rng.choice(headings))
    if how < 0.35:
        return rng.choice(TITLE_QUESTIONS).format(title=document.title)
    sentences = [s for p in text.split("\n\n") if is_prose(p)
                 for s in re.split(r"(?<=[.!?])\s+", p) if 40 <= len(s) <= 200 and s[:1].isupper()]
    if sentences and how < 0.5:
        return rng.choice(CLAIM_QUESTIONS).format(claim=rng.choice(sentences))
    keyword = _keyword(text, everything, rng)
    if keyword and how < 0.93:
        return rng.choice(QUESTIONS).format(kw=keyword)
    return rng.choice(OVERVIEW_QUESTIONS)


def _keyword(text: str, everything: str, rng: random.Random) -> str:
    """A salient term of `text`, rare across all the documents: a name in backticks, a dotted or
    snake_case identifier, a CamelCase or capitalised name, else a long word."""
    scored: dict[str, int] = {}
    for pattern, score in TERMS:
        for term in pattern.findall(text):
            common = score == 2 and re.search(rf"\b{re.escape(term.lower())}\b", everything)   # "License", "Example"
            if term.lower().strip("`") not in STOPWORDS and not common:
                scored.setdefault(term, score)
    ranked = sorted(scored, key=lambda t: (-scored[t], everything.count(t), -len(t)))[:5]
    return rng.choice(ranked) if ranked else ""
