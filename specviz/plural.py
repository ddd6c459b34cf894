"""Counts written out in English: "1 token", "3 tokens"."""


def count(n: int, word: str) -> str:
    """A count with its noun, plural unless it is exactly one."""
    return f"{n} {word}{'s' * (n != 1)}"
