"""Walking a Vega-Lite spec (a dict) in tests."""

from __future__ import annotations

from collections.abc import Iterator


def units(spec: dict) -> Iterator[dict]:
    """Every unit (single-mark) view of a Vega-Lite spec, nested in concats and layers."""
    for key in ("vconcat", "hconcat", "concat", "layer"):
        for child in spec.get(key, []):
            yield from units(child)
    if "mark" in spec:
        yield spec
