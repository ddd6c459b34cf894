"""Arguments the commands share, refused in one line before any model loads: counts (argparse types) and
comma-separated lists."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

from specviz.errors import SpecvizError


def whole_number(low: int) -> Callable[[str], int]:
    """An argparse type for a whole number ≥ `low`."""
    def parse(text: str) -> int:
        if not text.strip().isdigit() or int(text) < low:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {low}, got {text}")
        return int(text)
    return parse


at_least_one = whole_number(1)     # steps, batch sizes, rounds, threads
at_least_zero = whole_number(0)    # counts where 0 means none or off


def drafter_kinds(text: str, flag: str = "--drafters") -> list[str]:
    """A comma-separated list of drafter kinds (`specviz.drafters.DRAFTER_KINDS`), refused in one line."""
    from specviz.drafters import DRAFTER_KINDS

    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in DRAFTER_KINDS]
    if unknown or not kinds:
        raise SpecvizError(f"{flag} takes drafter kinds separated by commas ({', '.join(DRAFTER_KINDS)}), got "
                           f"{text!r}")
    return kinds


def output_file(text: str) -> str:
    """An argparse type for a file a command writes when its work is done: checked before the work starts
    (not a folder, its folder made and writable), so that no result is lost to a path that cannot take it."""
    path = Path(text).expanduser()
    if path.is_dir() or text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{text} is a folder: name a file in it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise argparse.ArgumentTypeError(f"cannot make the folder {path.parent}: {error.strerror}") from None
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied")
    return str(path)


def number_list(text: str, flag: str, convert: Callable[[str], float] = int, low: float = 1,
                below: float = math.inf, empty: bool = False) -> list:
    """A comma-separated list of numbers from `low` up to (not including) `below` (whole numbers with `convert` =
    int), refused in one line; an empty list only where `empty` allows it."""
    kind = "whole numbers" if convert is int else "numbers"
    try:
        values = [convert(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SpecvizError(f"{flag} takes comma-separated {kind}, got {text!r}") from None
    if (not values and not empty) or any(not math.isfinite(v) or not low <= v < below for v in values):
        bound = "" if below == math.inf else f" and < {below:g}"
        raise SpecvizError(f"{flag} takes comma-separated {kind} >= {low:g}{bound}, got {text!r}")
    return values
