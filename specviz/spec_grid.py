"""SpecDec Table 4 on the current prompt: real runs with Spec-Verification over a grid of β and τ.

Xia et al. report, per (β, τ), the mean accepted tokens per iteration (Tok.) and BLEU against the
references. Here the reference is the target's own greedy output, and the agreement is the token
match rate: the share of positions where the two outputs hold the same token.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import pandas as pd

from specviz.decoder import generate
from specviz.drafters.base import Drafter
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings


@dataclass
class GridCell:
    beta: int | None           # None: the target alone with greedy decoding (the reference)
    tau: float | None
    tokens_per_iteration: float
    match_rate: float
    speedup: float | None      # tokens/s over the reference run's


def token_match_rate(output: list[int], reference: list[int]) -> float:
    """Positions holding the same token, over the longer of the two outputs."""
    longest = max(len(output), len(reference))
    return sum(a == b for a, b in zip(output, reference)) / longest if longest else 1.0


def spec_grid(target: LoadedModel, drafter: Drafter, prompt: str, settings: DecodeSettings,
              betas: list[int], taus: list[float]) -> Iterator[GridCell]:
    """Yield the greedy reference, then one cell per (β, τ), each as soon as its run ends."""
    ref = generate(target, None, prompt, replace(settings, verify="greedy"))
    ref_speed = ref.summary().tokens_per_s
    yield GridCell(None, None, ref.summary().accepted_length, 1.0, None)
    for beta in betas:
        for tau in taus:
            trace = generate(target, drafter, prompt, replace(settings, verify="spec", beta=beta, tau=tau))
            s = trace.summary()
            yield GridCell(beta, tau, s.accepted_length, token_match_rate(trace.generated_ids, ref.generated_ids),
                           s.tokens_per_s / ref_speed if ref_speed else None)


def grid_frame(cells: list[GridCell]) -> pd.DataFrame:
    """Table 4 layout: one row per τ, one column per β, cells "Tok. / match % / speedup"."""
    rows: dict[float, dict[str, str]] = {}
    for cell in cells:
        if cell.beta is None:
            continue
        speed = f" / {cell.speedup:.2f}×" if cell.speedup is not None else ""
        rows.setdefault(cell.tau, {})[f"top-{cell.beta} (β = {cell.beta})"] = (
            f"{cell.tokens_per_iteration:.2f} / {cell.match_rate:.0%}{speed}")
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "τ"
    return frame
