"""Long writing: essays, blog posts, guides, reports, stories, letters and speeches of 400-1 000 words."""

from __future__ import annotations

import random
from functools import cache

from specviz.corpus.prompts.phrasing import frame, instruct
from specviz.corpus.prompts.prompt import CorpusPrompt, ask
from specviz.corpus.prompts.splits import split_of
from specviz.corpus.prompts.topics import addressed, slug, topics

PREMISES = (
    "a lighthouse keeper who finds a message in a bottle addressed to her", "a robot that learns to bake bread",
    "two strangers stuck in a lift during a power cut", "a village where it has not rained for ten years",
    "a child who can hear what houseplants think", "the last bookshop in a city of screens",
    "an astronaut returning to Earth after twenty years", "a detective who is afraid of the dark",
    "a street musician who plays one song every day at the same corner", "a cat that runs a small hotel",
    "a grandmother who enters a video game tournament", "a time traveller who can only go back five minutes",
    "a chef who loses his sense of taste", "a letter delivered forty years late",
    "a town that forgets one word every night",
    "a lost dog finding its way home across a city", "a painter who can only paint the future",
    "an old sailor teaching a teenager to read the stars", "the first day at a school on the Moon",
    "a beekeeper who discovers a queen bee that can talk", "two rival bakers forced to share a kitchen",
    "a map that redraws itself every morning", "a night-shift nurse and a mysterious patient",
    "a tree that has watched a town for three hundred years", "a girl who builds a boat in her backyard",
    "a museum guard who notices a painting has "
    "changed", "a family moving to a country where they don't speak the language",
    "a clockmaker who repairs a clock that runs backwards", "a train that never reaches its last station",
    "an inventor whose inventions only work when nobody is watching", "a fox and a crow who become business partners",
    "a snowstorm that traps a wedding party in a mountain hut", "a mail carrier in a town of ghosts",
    "a teenager who finds her grandfather's diary from the "
    "war", "a city where everyone sings instead of talking on Tuesdays",
    "a retired spy who runs a flower shop", "the last dragon living quietly as a librarian",
    "an explorer who finds a door in the middle of a desert", "a programmer whose code starts writing poems",
    "a football team of eighty-year-olds", "a boy who collects sounds in glass jars",
)
OCCASIONS = (
    "to a landlord asking them to fix a broken heater", "to a former teacher thanking them for their influence",
    "to a local council proposing a new bicycle lane", "to a friend who moved abroad, sharing news from home",
    "to a company complaining about a delayed order", "to a new neighbour introducing yourself",
    "to your future self, to be opened in ten years", "to a hiring manager explaining a career change",
    "to a newspaper editor about the closure of the town library", "of recommendation for a hard-working intern",
    "to a grandparent describing your first year at university", "to a customer apologising for a service outage",
    "of resignation that leaves on good terms", "to a sports club asking for sponsorship of a youth team",
    "to a school asking for more outdoor play time", "to an author explaining how their book changed your life",
    "to an insurance company disputing a rejected claim", "to parents announcing a school trip",
    "to a team celebrating the end of a difficult project", "to a mentor asking for advice about a big decision",
)
EVENTS = (
    "a high school graduation", "a retirement party for a colleague of thirty years",
    "the opening of a community garden",
    "a best friend's wedding", "the launch of a new product at a small company", "a charity fun run",
    "the first day of a new school year, from the head teacher", "an award ceremony for volunteers",
    "the anniversary of a local football club", "a farewell for a manager who is moving abroad",
    "a science fair for teenagers", "a town's centenary celebration", "a fundraising dinner for a children's hospital",
    "a team meeting after a hard quarter", "the opening night of a student theatre festival",
)
AUDIENCES = ("for a general audience", "for teenagers", "for busy professionals", "for a school newsletter",
             "for readers with no background in the subject", "for a company blog", "for a local magazine",
             "for university students", "for parents", "for retirees")
LENGTHS = ("about 400 words", "about 500 words", "around 600 words", "600-800 words", "roughly 800 words",
           "about 1,000 words", "at least 500 words", "between 700 and 900 words", "400 to 600 words")

TOPIC_TEMPLATES: dict[str, tuple[str, ...]] = {
    "concept": (
        "Write a detailed essay of {length} on {x}.", "Write a blog post {audience} explaining {x}. Aim for {length}.",
        "Write an informative article about {x}, {length}, with a catchy title and subheadings.",
        "Write a report on {x} {audience}: introduction, main findings, conclusion. Length: {length}.",
        "Write a feature article about {x} that opens with a surprising fact. {Length}.",
        "Write the script of a ten-minute podcast episode about {x}, {length}.",
        "Write a long-form explainer about {x} that a curious reader would enjoy. Make it {length}.",
        "Write a chapter for a popular science book on {x}, {length}.",
    ),
    "howto": (
        "Write a comprehensive beginner's guide on how to {x_you}, with sections and practical tips. {Length}.",
        "Write a blog post titled 'How I learned to {x}', told in the first person. {Length}.",
        "Write a step-by-step tutorial on how to {x_you} {audience}, {length}.",
        "Write a detailed guide to help someone {x_them}, including a list of common mistakes. Length: {length}.",
        "Write a magazine article with ten tips to {x_you}. {Length}.",
    ),
    "debate": (
        "Write an argumentative essay about {x}, {length}. Take a clear position.",
        "Write an opinion piece for a newspaper on {x}, {length}.",
        "Write a balanced essay weighing the arguments about {x}. {Length}.",
        "Write a persuasive speech against {x}, {length}.", "Write a persuasive speech in favour of {x}, {length}.",
        "Write a debate brief on {x} with arguments for both sides and a conclusion, {length}.",
    ),
}
FREE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "premise": (
        "Write a short story of {length} about {x}.", "Write a story about {x}. Give it a twist ending. {Length}.",
        "Write a bedtime story for children about {x}, {length}.",
        "Write the first chapter of a novel about {x}. {Length}.",
        "Tell a funny story about {x} in {length}.",
        "Write a story told entirely in diary entries about {x}, {length}.",
        "Write a science-fiction story about {x}, {length}.",
    ),
    "occasion": (
        "Write a letter {x}. Make it {length} long.", "Write a formal letter {x}, {length}.",
        "Write a warm, heartfelt letter {x} ({length}).", "Draft a detailed email {x} ({length}).",
    ),
    "event": (
        "Write a speech for {x}, {length}.", "Write a funny but touching speech for {x}. {Length}.",
        "Write an inspiring address for {x}, {length}.",
    ),
}
FREE_SUBJECTS = {"premise": PREMISES, "occasion": OCCASIONS, "event": EVENTS}


@cache
def free_subjects(split: str, what: str) -> tuple[str, ...]:
    """The story premises, letter occasions or speech events of `split`."""
    return tuple(s for s in FREE_SUBJECTS[what] if split_of(f"{what}:{slug(s)}") == split)


def draw_longform(rng: random.Random, split: str) -> CorpusPrompt:
    """A long-writing task on a topic, premise, occasion or event of `split`."""
    length = rng.choice(LENGTHS)
    fill = {"length": length, "Length": length[:1].upper() + length[1:], "audience": rng.choice(AUDIENCES)}
    if rng.random() < 0.55:
        form = rng.choice(tuple(TOPIC_TEMPLATES))
        topic = rng.choice(topics(split, form))
        text = rng.choice(TOPIC_TEMPLATES[form]).format(x=topic.text, x_you=addressed(topic.text, "you"),
                                                        x_them=addressed(topic.text, "them"), **fill)
        source = topic.source
    else:
        what = rng.choice(tuple(FREE_TEMPLATES))
        subject = rng.choice(free_subjects(split, what))
        text, source = rng.choice(FREE_TEMPLATES[what]).format(x=subject, **fill), f"{what}:{slug(subject)}"
    return ask("longform", instruct(frame(text, rng, chatter=0.3, casual=0.05, brief=False), rng, 0.1, brief=False),
               source)
