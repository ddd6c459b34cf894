"""A study as tables: one row per run, and a β × τ grid as SpecDec's Table 4 (Xia et al.).

In Table 4 Xia et al. report Tok. (mean accepted tokens per iteration) and BLEU against references; a grid
study's reference is the target's own greedy output, and the agreement is the token match rate.
"""

from __future__ import annotations

import pandas as pd
from pandas.io.formats.style import Styler

from specviz.settings import RULE_NAMES
from specviz.study import Study

ROW_HELP = {  # what each column of `rows_frame` means, for the table's headers
    "tokens": "tokens generated: sampled runs stop at the end of sequence at different places",
    "tokens/s": "tokens over the run's wall time, the prompt's prefill included",
    "speedup": "tokens/s over the target alone's (the baseline row)",
    "α̂": "drafts accepted / drafts verified",
    "c": "one draft step's time over one target step's (none for drafters with no forward pass)",
    "tokens / iteration": "tokens emitted per target pass: accepted drafts plus the correction or bonus",
    "match": "positions where the output equals the baseline's: 100% for greedy runs; lossless sampling draws "
             "other random numbers, so its text differs while its distribution stays the target's",
    "wall time (s)": "the whole run, prefill included",
}
FORMATS = {"tokens/s": "{:.1f}", "speedup": "{:.2f}×", "α̂": "{:.2f}", "c": "{:.3f}", "tokens / iteration": "{:.2f}",
           "match": "{:.0%}", "wall time (s)": "{:.2f}"}


def rows_frame(study: Study) -> pd.DataFrame:
    """One row per run, the baseline first: what varied, then the run's numbers."""
    return pd.DataFrame([{"run": row.name, "tokens": row.tokens, "tokens/s": row.tokens_per_s,
                          "speedup": row.speedup, "α̂": row.alpha, "c": row.c,
                          "tokens / iteration": row.accepted_length, "match": row.match_rate,
                          "wall time (s)": row.wall_time} for row in study.rows()])


def study_setup(study: Study) -> str:
    """What a study's runs share: the prompt, and the settings that no variant changed."""
    varied = {key for v in study.variants for key in v.varied}
    run = study.variants[0].trace if study.variants else study.baseline
    s = run.settings
    prompt = " ".join(study.baseline.prompt.split())
    shared = [f"the prompt “{prompt if len(prompt) <= 80 else prompt[:79] + '…'}”"]
    shared += [f"drafter {run.drafter}"] if "drafter" not in varied else []
    shared += [f"γ = {s.gamma}"] if "gamma" not in varied else []
    shared += [RULE_NAMES[s.rule] + (f" at temperature {s.temperature:g}" if s.rule == "sampling" else "")]
    return f"Runs on {', '.join(shared)}, at most {s.max_new_tokens} new tokens each."


def rows_table(study: Study) -> Styler:
    """`rows_frame` as it reads on a page: rounded, with a dash where a number does not apply."""
    return rows_frame(study).style.format(FORMATS, na_rep="—").hide(axis="index")


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
