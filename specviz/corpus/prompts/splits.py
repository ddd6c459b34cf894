"""Train or held out: every source of content belongs to one split, by a stable hash of its key.

A key names a unit of content (a topic, a document, a stdlib module, a catalog message, a math
problem's numbers), so held-out prompts never share one with training prompts, whatever their kind.
"""

from __future__ import annotations

import hashlib

SPLITS = ("train", "heldout")
HELDOUT_SHARE = 0.1


def digest(text: str, length: int = 10) -> str:
    """A short stable hex hash of `text` (the same on every machine and run)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def split_of(key: str) -> str:
    """The split `key` belongs to: "heldout" for about HELDOUT_SHARE of all keys, else "train"."""
    return "heldout" if int(digest("split:" + key, 8), 16) / 16**8 < HELDOUT_SHARE else "train"
