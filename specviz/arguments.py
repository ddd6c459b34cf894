"""Argument types the commands share: counts refused by argparse in one line, before any model loads."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(low: int) -> Callable[[str], int]:
    """An argparse type for a whole number ≥ `low`."""
    def parse(text: str) -> int:
        if not text.strip().isdigit() or int(text) < low:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {low}, got {text}")
        return int(text)
    return parse


at_least_one = whole_number(1)     # steps, batch sizes, rounds, threads
at_least_zero = whole_number(0)    # counts where 0 means none or off
