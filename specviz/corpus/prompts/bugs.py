"""Small realistic bugs put into working code: a flipped comparison, an off-by-one, a swapped
boolean operator or constant."""

from __future__ import annotations

import io
import random
import tokenize

SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "and": "or", "or": "and",
         "True": "False", "False": "True", "+": "-", "-": "+", "+=": "-=", "-=": "+="}


def inject_bug(source: str, rng: random.Random) -> str | None:
    """`source` with one operator, boolean constant or `± 1` changed (None when nothing fits or the
    code cannot be tokenized)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    candidates = [t for i, t in enumerate(tokens) if t.string in SWAPS and t.type in (tokenize.OP, tokenize.NAME)
                  and (t.string not in ("+", "-") or _before_one(tokens, i))]
    if not candidates:
        return None
    token = rng.choice(candidates)
    lines = source.splitlines(keepends=True)
    row, col = token.start
    line = lines[row - 1]
    lines[row - 1] = line[:col] + SWAPS[token.string] + line[token.end[1]:]
    return "".join(lines)


def _before_one(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """Whether a + or - is followed by the number 1 (an off-by-one is the classic bug)."""
    return i + 1 < len(tokens) and tokens[i + 1].string == "1"
