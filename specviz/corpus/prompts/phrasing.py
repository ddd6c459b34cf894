"""How people phrase a request: greetings, thanks, asks about the answer's form, casual lower case,
the odd typo, and assistant instructions written around the whole message."""

from __future__ import annotations

import random

from specviz.corpus.prompts.typos import add_typos

OPENERS = (
    "Hi!", "Hey,", "Hello there.", "Quick question:", "Hope you can help.", "I've been wondering about this.",
    "Okay so", "Hi, I need some help.", "Good morning!", "Random question, but", "Can you help me with something?",
    "Hey there!", "So,", "Hello,", "I have a question.", "Hi again.", "Question for you:", "Help please!",
    "Not sure if you can help with this, but", "Something I've always wanted to know:",
)
CLOSERS = (
    "Thanks!", "Thank you in advance.", "Thanks a lot.", "Cheers", "Appreciate it!", "ty", "Thank you so much!",
    "Thanks in advance!", "Much appreciated.", "Any help is welcome.", "thx",
)
FORM_ASKS = (
    "Be as detailed as you can.", "Use simple language.", "No need for a long intro.", "Explain your reasoning.",
    "Include an example.", "Please use headings.", "Avoid jargon if you can.", "I'm a complete beginner.",
    "I already know the basics.", "Make it practical.", "Please number the steps.",
)
BRIEF_ASKS = (
    "Please be concise.", "Keep it short, please.", "Answer in a few bullet points.", "Give me the short version.",
    "One paragraph is enough.", "Keep it under 200 words.",
)
INSTRUCTIONS = (
    "You are a helpful assistant. Answer clearly and accurately.\n\n{ask}",
    "You are a friendly expert who explains things patiently.\n\n{ask}",
    "### Instruction\n{ask}\n\n### Response",
    "Act as a patient tutor. {ask}",
    "Respond in Markdown, with headings where they help.\n\n{ask}",
    "You are an assistant that always answers honestly, and says when it is unsure.\n\n{ask}",
    "Please think carefully before answering.\n\n{ask}",
    "[Context: I am preparing notes for myself.]\n{ask}",
    "Role: knowledgeable assistant\nGoal: help the user\n\n{ask}",
    "Request: {ask}\n\nConstraints: be accurate and use examples where they help.",
)
BRIEF_INSTRUCTIONS = (
    "Instructions: answer in plain English, in no more than 150 words.\n\nQuestion: {ask}",
    "System: You are a concise assistant. Do not add unnecessary details.\nUser: {ask}",
    "Task: {ask}\nFormat: a short answer followed by a brief explanation.",
    "Answer as if you were talking to a friend over coffee, in a few sentences. {ask}",
)


def frame(ask: str, rng: random.Random, *, chatter: float = 0.5, casual: float = 0.12, typos: float = 0.08,
          brief: bool = True, asks: bool = True) -> str:
    """`ask` as a person might write it: with a greeting, thanks or a word on the answer's form
    (probability `chatter`; `asks`: whether that word may be one), in casual lower case
    (`casual`), with a typo or two (`typos`). `brief`: the word may ask for a short answer (not for
    a task that sets its own length). A request ending in a colon, which the material follows,
    only gets a greeting."""
    text = ask
    if rng.random() < typos:
        text = add_typos(text, rng, rate=0.04)
    if rng.random() < casual:
        text = text.lower().rstrip("?.!") if rng.random() < 0.5 else text[:1].lower() + text[1:]
    if rng.random() < chatter:
        where = 0.0 if text.rstrip().endswith(":") else rng.random()
        if where < 0.4:
            text = f"{rng.choice(OPENERS)} {text}"
        elif where < 0.7 or not asks:
            text = f"{text} {rng.choice(CLOSERS)}"
        else:
            text = f"{text} {rng.choice(FORM_ASKS + BRIEF_ASKS if brief else FORM_ASKS)}"
    return text


def instruct(message: str, rng: random.Random, chance: float = 0.15, *, brief: bool = True) -> str:
    """The whole `message`, with probability `chance`, inside an assistant instruction of the kind
    people paste from prompt guides (`brief`: it may ask for a short answer)."""
    if rng.random() >= chance:
        return message
    return rng.choice(INSTRUCTIONS + BRIEF_INSTRUCTIONS if brief else INSTRUCTIONS).format(ask=message)


def lay_out(layout: str, ask: str, **material: str) -> str:
    """A request and its material in `layout`; a request that comes after the material and ends
    in a colon ("Make this more formal:") ends in a full stop instead."""
    if not layout.startswith("{ask}") and ask.endswith(":"):
        ask = ask[:-1] + "."
    return layout.format(ask=ask, **material)
