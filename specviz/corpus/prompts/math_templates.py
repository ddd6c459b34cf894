"""Math problem templates: a text with named slots, each filled from a range, a list of words or a
rule over the slots drawn before it; people are named from a varied list."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

NAMES = (
    "Aisha", "Ben", "Carmen", "Dmitri", "Elena", "Farid", "Grace", "Hiroshi", "Ines", "Jamal", "Kofi", "Lena",
    "Mateo", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen", "Ximena",
    "Yusuf", "Zoe", "Amara", "Bruno", "Chloe", "Diego", "Emeka", "Fatima", "Gustav", "Hana", "Ivan", "Julia",
    "Kenji", "Leila", "Marco", "Noor", "Olga", "Pablo", "Rania", "Samir", "Tomasz", "Valentina", "Wanjiru", "Yara",
)

Slot = tuple | Callable[[dict, random.Random], object]


@dataclass(frozen=True)
class Problem:
    """A problem template. slots: name -> (low, high[, step]) for a number (floats give floats),
    a tuple of words to choose from, or a function of the slots before it and the generator.
    {A}, {B} and {C} are always three different people's names."""

    id: str
    text: str
    slots: dict[str, Slot] = field(default_factory=dict)


def instantiate(problem: Problem, rng: random.Random) -> tuple[str, str]:
    """The problem's text with its slots filled, and a key naming this instance."""
    people = dict(zip("ABC", rng.sample(NAMES, 3)))
    values: dict[str, object] = {}
    for name, slot in problem.slots.items():
        values[name] = _fill(slot, values, rng)
    key = f"math:{problem.id}:" + ",".join(f"{k}={v}" for k, v in values.items())
    return problem.text.format(**people, **values), key


def _fill(slot: Slot, values: dict, rng: random.Random) -> object:
    if callable(slot):
        return slot(values, rng)
    if isinstance(slot[0], str):
        return rng.choice(slot)
    low, high, step = (*slot, 1) if len(slot) == 2 else slot
    count = round((high - low) / step)
    value = low + step * rng.randint(0, count)
    if isinstance(value, float):
        value = round(value, 2)
        return int(value) if value.is_integer() else value
    return value
