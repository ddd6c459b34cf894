"""A study as tables: one row per run, and a β × τ grid as SpecDec's Table 4 (Xia et al.).

In Table 4 Xia et al. report Tok. (mean accepted tokens per iteration) and BLEU against references; a grid
study's reference is the target's own greedy output, and the agreement is the token match rate.
"""

from __future__ import annotations

import pandas as pd

from specviz.study import Study


def rows_frame(study: Study) -> pd.DataFrame:
    """One row per run, the baseline first: what varied, then the run's numbers."""
    return pd.DataFrame([{"run": row.name, "tokens": row.tokens, "tokens/s": row.tokens_per_s,
                          "speedup": row.speedup, "α̂": row.alpha, "c": row.c,
                          "tokens / iteration": row.accepted_length, "match": row.match_rate,
                          "wall time (s)": row.wall_time} for row in study.rows()])


def grid_frame(study: Study) -> pd.DataFrame:
    """Cells "Tok. / match % / speedup" for each variant that varied β and τ."""
    rows: dict[float, dict[str, str]] = {}
    for row in study.rows()[1:]:
        beta, tau = row.varied.get("beta"), row.varied.get("tau")
        if beta is None or tau is None:
            continue
        speed = f" / {row.speedup:.2f}×" if row.speedup is not None else ""
        rows.setdefault(tau, {})[f"top-{beta} (β = {beta})"] = (
            f"{row.accepted_length:.2f} / {row.match_rate:.0%}{speed}")
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "τ"
    return frame
