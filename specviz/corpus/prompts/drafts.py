"""Everyday drafts people ask to have rewritten: notes, e-mails, messages, reviews, announcements,
with names, days, places and things filled in."""

from __future__ import annotations

import random

from specviz.corpus.prompts.math_templates import NAMES

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TIMES = ("9am", "10:30", "noon", "2pm", "half past three", "5pm", "7 in the evening")
PLACES = ("the community centre", "the office on the third floor", "the park by the river", "the library",
          "our usual cafe", "the school hall", "the meeting room B", "my place")
THINGS = ("the quarterly report", "the new website", "the budget spreadsheet", "the garden project", "the team "
          "offsite", "the book club list", "the product launch", "the charity bake sale", "the kitchen renovation")

DRAFTS = (
    "hi {name2}, just wanted to let you know i cant make it on {day} for {thing}, something came up at home. can we "
    "move it to next week? sorry about that, i know its short notice",
    "Dear {name2}, I am writing to inform you that {thing} will be delayed. We had some problems with the supplier "
    "and it is not possible to finish before {day}. We will keep you updated. Regards, {name}",
    "Team - reminder that we meet at {place} on {day} at {time}. Bring your laptops. Also please read the doc about "
    "{thing} before, it's important, we will decide things in the meeting",
    "So I tried this restaurant last night and honestly it was ok. The food was good but we waited like 40 minutes "
    "for a table even though we booked and the waiter forgot our drinks twice. Would maybe go again for lunch",
    "Hey neighbours! Some of us are organising a clean up at {place} on {day} at {time}. Gloves and bags provided. "
    "Kids welcome. Afterwards theres coffee and cake. Let {name} know if you can come!!",
    "{name2}, thanks so much for helping with {thing} last week, really couldnt have done it without you. "
    "Let me buy you lunch sometime? I owe you one",
    "To whom it may concern, the heating in my flat has not worked since {day}. I reported it twice and nobody "
    "came. It is very cold and I have a small child. Please send somebody as soon as possible.",
    "Our product helps small businesses manage there invoices. It is easy to use and it saves time. You can try it "
    "free for 30 days. We think you will like it alot.",
    "I'm applying for the assistant position. I have worked three years in retail and I'm good with people and "
    "computers. I learn fast and I'm reliable. I would love to work at your company.",
    "Update on {thing}: most of the work is done, the testing is still not finished, and we are waiting on {name2} "
    "for the final numbers. Should be ready by {day} if nothing goes wrong.",
    "hey everyone, the wifi password changed, its on the fridge. also pls dont leave dishes in the sink over night, "
    "we had ants again. thx - {name}",
    "Thank you for your order! Unfortunately one item is out of stock. We will send the rest now and the missing "
    "item when it arrives, which should be around {day}. Sorry for the inconvenience.",
    "Minutes: we discussed {thing}. {name} will contact the venue. {name2} said the budget is tight. We agreed to "
    "meet again {day}. Nobody volunteered for the newsletter.",
    "Dear parents, the school trip to the science museum is on {day}. Children need a packed lunch and a coat. "
    "The bus leaves at {time} sharp so please don't be late. Any questions ask {name}.",
    "I would like to return the shoes I bought last week. They are too small and the colour is different from the "
    "picture on the website. I still have the receipt. How do I send them back?",
    "Congrats on the new job {name2}!!! So happy for you, you totally deserve it. We need to celebrate, drinks "
    "at {place} on {day}?",
    "Hi {name2}, could you please review {thing} before {day}? I think the numbers in section two are wrong but "
    "I'm not sure. Let me know what you think. Thanks, {name}",
    "Lost cat! Grey with white paws, answers to Pepper. Last seen near {place} on {day}. She is friendly but shy. "
    "Please call {name} if you see her. Reward.",
    "Our volunteers did amazing work this year. We planted 200 trees, organised 12 events and raised money for "
    "the food bank. Thank you all, and we hope to see you again next year.",
    "The meeting about {thing} is cancelled, because half the team is sick. We'll find a new date. In the meantime "
    "send me your questions by email.",
)


def draw_draft(rng: random.Random) -> tuple[str, str]:
    """A draft with its slots filled, and a key naming this instance."""
    index = rng.randrange(len(DRAFTS))
    name, name2 = rng.sample(NAMES, 2)
    fill = {"name": name, "name2": name2, "day": rng.choice(DAYS), "time": rng.choice(TIMES),
            "place": rng.choice(PLACES), "thing": rng.choice(THINGS)}
    text = DRAFTS[index].format(**fill)
    return text, f"draft:{index}:" + ",".join(fill.values())
