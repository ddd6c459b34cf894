"""Chat: advice, explanations, comparisons, recommendations and opinions on everyday topics."""

from __future__ import annotations

import random

from specviz.corpus.prompts.phrasing import frame, instruct
from specviz.corpus.prompts.prompt import CorpusPrompt, ask
from specviz.corpus.prompts.topics import Topic, addressed, topics

TEMPLATES: dict[str, tuple[str, ...]] = {
    "concept": (
        "What {is} {x}?", "Explain {x} to a beginner.", "Can you explain {x} in simple terms?", "How {does} {x} work?",
        "Why {does} {x} matter?", "I never really understood {x}. Could you walk me through it?",
        "Give me a short overview of {x}.", "What are the most common misconceptions about {x}?",
        "Explain {x} using an analogy.", "What should everyone know about {x}?",
        "I'm reading about {area} and keep running into {x}. What's the key idea?",
        "Write a quick explainer on {x} with one example.", "Tell me three interesting facts about {x}.",
        "How would you explain {x} to a twelve-year-old?", "What's the history behind {x}, briefly?",
        "My kid asked me about {x} and I had no idea what to say. Help?",
        "Summarize what scientists or experts currently think about {x}.",
        "What questions should I ask to really understand {x}?", "In two or three sentences: what is {x}?",
        "{Is} {x} something I should care about in daily life? Why or why not?",
        "explain {x} like i'm five", "Could you give me a clear definition of {x} and then an everyday example?",
    ),
    "howto": (
        "How do I {x}?", "What's the best way to {x}?", "Can you give me step-by-step instructions to {x}?",
        "I want to {x} but I don't know where to start. Any advice?",
        "What are common mistakes people make when they try to {x_them}?", "Give me a simple plan to {x} this month.",
        "Is it hard to {x}? What do I need?", "What tips do you have for someone trying to {x_them}?",
        "My friend says it's easy to {x}. How would you go about it?", "Write a checklist to help me {x}.",
        "I tried to {x} last week and it went badly. What should I do differently?",
        "how can i {x}", "What's a realistic timeline to {x}?",
        "I have very little time. What's the quickest way to {x}?",
        "Explain how to {x}, and warn me about anything risky.", "What do experts recommend if I want to {x}?",
    ),
    "pair": (
        "What's the difference between {x} and {y}?", "{x} vs {y}: which should I pick and why?",
        "How do {x} and {y} compare?", "Are {x} and {y} the same thing?",
        "Can you compare {x} and {y} in a short table?", "When would I choose {x} instead of {y}?",
        "People mix up {x} and {y}. Can you clear it up for me?",
        "Explain the main similarities and differences between {x} and {y}.",
        "difference between {x} and {y}?", "What does {x} have that {y} doesn't, and the other way round?",
    ),
    "pick": (
        "Can you recommend some {x}?", "What are some good {x}?", "I'm looking for {x}. Any suggestions?",
        "Give me five {x} and say why each is worth it.", "What {x} would you suggest for a complete beginner?",
        "List a few {x} with a one-line description of each.", "My budget is small. What {x} would you suggest?",
        "Suggest {x}, and tell me which one you'd start with.", "any recommendations for {x}?",
        "I need ideas: {x}. Go!",
    ),
    "debate": (
        "What are the pros and cons of {x}?", "What do you think about {x}?",
        "{Is} {x} a good idea? Give arguments on both sides.",
        "Some people love {x}, others hate it. What's the case for each side?",
        "Make the strongest case for and against {x}.", "How has the debate about {x} changed in recent years?",
        "My friend and I disagree about {x}. Can you give me a balanced view?",
        "What does the evidence say about {x}?", "Write a short balanced summary of the arguments about {x}.",
        "Should I support {x}? Help me think it through.",
    ),
}
FORMS = tuple(TEMPLATES)


def chat_ask(topic: Topic, rng: random.Random) -> str:
    """One chat question about `topic`, not yet framed."""
    template = rng.choice(TEMPLATES[topic.form])
    verbs = {"is": "are", "Is": "Are", "does": "do"} if topic.plural else {"is": "is", "Is": "Is", "does": "does"}
    text = template.format(x=topic.text, x_them=addressed(topic.text, "them"), y=topic.other, area=topic.area,
                           **verbs)
    return text[:1].upper() + text[1:] if template.startswith("{") else text


def draw_topic(rng: random.Random, split: str) -> Topic:
    """A topic of `split`, its form drawn in proportion to how many templates it has."""
    form = rng.choices(FORMS, weights=[len(TEMPLATES[f]) for f in FORMS])[0]
    return rng.choice(topics(split, form))


def draw_chat(rng: random.Random, split: str) -> CorpusPrompt:
    """A chat prompt on a topic of `split`."""
    topic = draw_topic(rng, split)
    return ask("chat", instruct(frame(chat_ask(topic, rng), rng), rng), topic.source)
