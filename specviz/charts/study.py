"""A study as tables: one row per run, and a β × τ grid as SpecDec's Table 4 (Xia et al.).

In Table 4 Xia et al. report Tok. (mean accepted tokens per iteration) and BLEU against references; a grid
study's reference is the target's own greedy output, and the agreement is the token match rate.
"""

from __future__ import annotations

import pandas as pd
from pandas.io.formats.style import Styler

from specviz.settings import RULE_NAMES
from specviz.study import Row, Study
from specviz.trace import Trace

ROW_HELP = {  # what each column of `rows_frame` means, for the table's headers
    "tokens": "tokens generated: sampled runs stop at the end of sequence at different places",
    "tokens/s": "tokens over the run's wall time, the prompt's prefill included",
    "speedup": "tokens/s over the target alone's (the baseline row); the median over the rounds when repeated",
    "min–max": "the lowest and highest speedup over the rounds, each against the baseline's run of its round",
    "α̂": "drafts accepted / drafts tested: the accepted ones, and each iteration's first rejected one",
    "c": "one drafter step's time over one verify pass's, the prompt's first passes left out (none for drafters "
         "with no forward pass)",
    "tokens / iteration": "tokens emitted per target pass: accepted drafts plus the correction or bonus",
    "match": "positions where the output equals the baseline's: 100% for greedy runs, less where Spec-Verification "
             "kept tokens the target would not have chosen; none for lossless sampling, whose text follows other "
             "random numbers while its distribution stays the target's",
    "BLEU": "BLEU-4 of the output against the baseline's: the wording they share wherever it stands (a position "
            "match stops counting at the first difference, which shifts the rest); SpecDec's Table 4 scores "
            "against reference translations",
    "wall time (s)": "the whole run, prefill included",
}
SHOWN_PAIRS = 3   # the spread note names the closest pairs of runs whose bars overlap, and counts the rest
FORMATS = {"tokens/s": "{:.1f}", "speedup": "{:.2f}×", "α̂": "{:.2f}", "c": "{:.3f}", "tokens / iteration": "{:.2f}",
           "match": "{:.0%}", "BLEU": "{:.2f}", "wall time (s)": "{:.2f}"}


def rows_frame(study: Study) -> pd.DataFrame:
    """One row per run, the baseline first: what varied, then the run's numbers (`text_agreement`)."""
    return pd.DataFrame([{"run": row.name, "tokens": row.tokens, "tokens/s": row.tokens_per_s,
                          "speedup": row.speedup, "min–max": _spread(row.speedup_low, row.speedup_high),
                          "α̂": row.alpha, "c": row.c, "tokens / iteration": row.accepted_length,
                          **dict(zip(("match", "BLEU"), text_agreement(row, run))),
                          "wall time (s)": row.wall_time} for row, run in zip(study.rows(), study.traces())])


def text_agreement(row: Row, run: Trace) -> tuple[float | None, float | None]:
    """A run's match and BLEU with the baseline's output; none for a sampled run, whose text follows other random
    numbers than the baseline's, so that they say nothing of its quality."""
    return (None, None) if run.settings.rule == "sampling" else (row.match_rate, row.bleu)


def _spread(low: float | None, high: float | None) -> str | None:
    return f"{low:.2f}–{high:.2f}×" if low is not None and high is not None else None


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


def spread_note(study: Study) -> tuple[bool, str]:
    """Whether a study's repeats tell its runs apart, as (warn, sentence), after why it stopped early if it
    did (a warning too)."""
    warn, note = _order_note(study)
    if study.stopped_by:
        return True, f"Stopped early by {study.stopped_by}: these are the runs it finished before that. {note}"
    return warn, note


def _order_note(study: Study) -> tuple[bool, str]:
    """Warn when the min–max spread of two runs' speedups over their rounds overlaps although their medians
    differ (the order drawn between them is then not measured); a study timed once says that its spread is
    unknown."""
    rows = sorted((r for r in study.rows()[1:] if r.speedup is not None), key=lambda r: r.speedup)
    spread = [r for r in rows if r.speedup_low is not None]
    if not rows:
        return False, ""
    if not spread:
        return True, ("Each point was timed once: how far a repeat would move it is unknown, so close points may "
                      "swap places. Repeat the runs (interleaved) to see their spread.")
    widest = max((r.speedup_high - r.speedup_low) / r.speedup for r in spread)
    close = [(a, b) for a, b in zip(rows, rows[1:]) if None not in (a.speedup_high, b.speedup_low)
             and b.speedup_low <= a.speedup_high]
    rounds = min(r.rounds for r in spread)
    if not close:
        return False, (f"Timed {rounds}× each, interleaved: every run's spread (at most {widest:.0%} of its median, "
                       "min to max) is smaller than the differences drawn, so their order holds.")
    apart = sorted(((b.speedup - a.speedup) / a.speedup, a.name, b.name) for a, b in close)   # the closest first
    pairs = "; ".join(f"{a} and {b}, {gap:.1%} apart" for gap, a, b in apart[:SHOWN_PAIRS])
    more = f"; and {len(apart) - SHOWN_PAIRS} more" if len(apart) > SHOWN_PAIRS else ""
    return True, (f"Timed {rounds}× each, interleaved, the runs spread by up to {widest:.0%} of their median (min to "
                  f"max), more than some differences drawn ({pairs}{more}): their order is not measured. Repeat on a "
                  "quieter machine or with more rounds before reading it.")


def rows_table(study: Study) -> Styler:
    """`rows_frame` as it reads on a page: rounded, with a dash where a number does not apply."""
    return rows_frame(study).style.format(FORMATS, na_rep="—").hide(axis="index")


def grid_frame(study: Study) -> pd.DataFrame:
    """Cells "Tok. / BLEU / speedup" for each variant that varied β and τ, as SpecDec's Table 4 ("mean accepted
    tokens and BLEU score"), BLEU against the target's greedy output; the speedup with its rounds' min–max when
    timed in rounds."""
    rows: dict[float, dict[str, str]] = {}
    for row in study.rows()[1:]:
        beta, tau = row.varied.get("beta"), row.varied.get("tau")
        if beta is None or tau is None:
            continue
        spread = f" ({row.speedup_low:.2f}–{row.speedup_high:.2f})" if row.speedup_low is not None else ""
        speed = f" / {row.speedup:.2f}×{spread}" if row.speedup is not None else ""
        rows.setdefault(tau, {})[f"top-{beta} (β = {beta})"] = (
            f"{row.accepted_length:.2f} / {row.bleu:.2f}{speed}")
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "τ"
    return frame
