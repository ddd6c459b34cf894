"""The race: the target alone against speculative decoding on the same prompt and seed, replayed from a
comparison study at the measured pace.

The two runs never ran at the same time (they would have shared the processor and slowed each other):
they ran one after the other, and each iteration recorded when its tokens were committed
(`Iteration.elapsed`), so either run's state at any moment of the race can be rebuilt from its trace.
"""

from __future__ import annotations

import bisect
import html
import itertools
import statistics
from dataclasses import dataclass, replace

import plotly.graph_objects as go

from specviz.charts.style import ACCEPT_COLOR, KINDS, layout, range_bars
from specviz.charts.text import colored_text
from specviz.divergence import describe, first_divergence, parting
from specviz.study import Study, token_match_rate
from specviz.trace import Trace


@dataclass(frozen=True)
class Runner:
    """How one side of the race is drawn: its name, its colour and, for grey projectors, its lane's top
    border style and its line's width (a dashed staircase reads as broken)."""

    title: str
    color: str
    border: str
    width: int


TARGET_ALONE = Runner("Target alone", KINDS["target"].color, "dashed", 3)
SPECULATIVE = Runner("Speculative decoding", ACCEPT_COLOR, "solid", 6)


def runners(study: Study) -> list[tuple[Runner, Trace]]:
    """The two sides of a comparison study: the target alone, then the speculative run."""
    return [(TARGET_ALONE, study.baseline), (SPECULATIVE, study.variants[0].trace)]


def duration(study: Study) -> float:
    """Seconds until the slower run finished: how long the race lasts."""
    return max(trace.wall_time for _, trace in runners(study))


def iterations_done(trace: Trace, t: float) -> int:
    """Iterations whose tokens were committed by `t` seconds after the run started."""
    return bisect.bisect_right(trace.commit_times(), t)


def committed(trace: Trace, t: float) -> int:
    """Tokens committed by `t` seconds after the run started."""
    return sum(len(it.emitted_ids) for it in trace.iterations[: iterations_done(trace, t)])


def lane(runner: Runner, trace: Trace, t: float, show_rejected: bool = True) -> str:
    """HTML of one side at race time `t`: its clock, tokens committed, tokens/s, a progress bar and the
    text so far in the token-kind colours. Large type, for a projector."""
    done, tokens = iterations_done(trace, t), committed(trace, t)
    clock = min(t, trace.wall_time)
    finished = t >= trace.wall_time
    rate = f"{tokens / clock:.1f}" if clock > 0 else "–"
    share = 100 * tokens / len(trace.generated_ids) if trace.generated_ids else 100
    status = "✓ finished" if finished else "● running"
    count = f"{tokens} token{'' if tokens == 1 else 's'}"
    models = html.escape(trace.target if trace.drafter.startswith("none") else f"{trace.target} ← {trace.drafter}")
    text = colored_text(replace(trace, iterations=trace.iterations[:done]), show_rejected)
    return (
        f'<div class="specviz-race-lane" style="border-top: 8px {runner.border} {runner.color}; padding-top: 0.6rem;">'
        f'<div style="font-size: 1.6rem; font-weight: 700; color: {runner.color};">{html.escape(runner.title)} '
        f'<span style="font-size: 1.1rem; font-weight: 400;">{status}</span></div>'
        f'<div title="{models}" style="font-size: 0.95rem; color: #555; white-space: nowrap; overflow: hidden; '
        f'text-overflow: ellipsis;">{models}</div>'
        f'<div style="display: flex; flex-wrap: wrap; gap: 0 1.6rem; align-items: baseline; '
        f'font-variant-numeric: tabular-nums;">'
        f'<span class="race-clock" style="font-size: 3.4rem; font-weight: 700; white-space: nowrap;">'
        f'{clock:.1f} s</span><span class="race-tokens" style="font-size: 2.2rem; font-weight: 700; '
        f'white-space: nowrap;">{count}</span></div>'
        f'<div class="race-rate" style="font-size: 1.5rem; font-variant-numeric: tabular-nums; white-space: nowrap;">'
        f'{rate} tokens/s</div>'
        f'<div style="height: 12px; background: #e6e6e6; border-radius: 6px; margin: 0.3rem 0 0.6rem;">'
        f'<div style="height: 12px; width: {share:.1f}%; background: {runner.color}; border-radius: 6px;"></div></div>'
        f'{text}</div>')


def race_chart(study: Study) -> go.Figure:
    """Tokens committed over time by both runs of a comparison study (a step at each iteration's end),
    the measured speedup annotated where the speculative run finished. A study timed in several rounds
    adds each side's median finish with its rounds' min–max as an error bar, and the speedup's range."""
    fig = go.Figure()
    for (runner, trace), seconds in zip(runners(study), (study.baseline_seconds, study.variants[0].seconds)):
        counts = list(itertools.accumulate(len(it.emitted_ids) for it in trace.iterations))
        total = counts[-1] if counts else 0
        fig.add_scatter(x=[0.0, *trace.commit_times(), trace.wall_time], y=[0, *counts, total], mode="lines",
                        line_shape="hv", line={"color": runner.color, "width": runner.width},
                        name=f"{runner.title}: {total} tokens in {trace.wall_time:.1f} s")
        if len(seconds) > 1:
            middle = statistics.median(seconds)
            fig.add_scatter(x=[middle], y=[total], mode="markers", marker={"size": 12, "color": runner.color},
                            error_x=range_bars([middle], [min(seconds)], [max(seconds)], runner.color, width=12),
                            name=f"{runner.title}: median {middle:.1f} s, {min(seconds):.1f}–{max(seconds):.1f} s "
                                 f"over {len(seconds)} rounds")
    speculative = study.variants[0].trace
    speedup = study.speedup(speculative)
    ratios = study.paired(speculative)
    spread = f"<br>({min(ratios):.2f}–{max(ratios):.2f}× over {len(ratios)} rounds)" if len(ratios) > 1 else ""
    # in the plot's empty top-left corner (the steps rise to the right), where no chart width can clip it
    fig.add_annotation(x=0.02, y=0.98, xref="paper", yref="paper", xanchor="left", yanchor="top", showarrow=False,
                       align="left", text="speedup n/a" if speedup is None else
                       f"<b>{speedup:.2f}×</b> the target alone's tokens/s{spread}",
                       font={"size": 18, "color": "#111111"}, bgcolor="white")
    # the legend's four entries stack at a narrow width: room for them under the axis title
    return layout(fig, "Tokens over time", height=560, margin={"b": 190}, legend={"y": -0.25},
                  xaxis_title="seconds since the run started", yaxis_title="tokens committed")


def agreement(study: Study) -> tuple[bool, str]:
    """Whether both runs wrote the same tokens, and a sentence saying so (or why they may differ)."""
    base, speculative = study.baseline.generated_ids, study.variants[0].trace.generated_ids
    if base == speculative:
        return True, "Identical output ✓: speculative decoding wrote exactly the target's tokens, only sooner."
    first = parting(speculative, base)
    settings = study.variants[0].trace.settings
    where = f"The outputs differ from token {first + 1} on"
    if settings.rule == "sampling":
        return False, (f"{where}: both runs sampled with seed {settings.seed}, but speculative decoding spends its "
                       "random draws differently (drafts, the test u, residuals), so the draws differ. Each text is "
                       "still a sample of the target's distribution (see the losslessness experiment on Theory).")
    if settings.rule == "spec":
        return False, (f"{where}: Spec-Verification (β, τ) keeps drafts close to the target's top-1 without being "
                       f"it; {token_match_rate(speculative, base):.0%} of the positions agree.")
    parted = first_divergence(study.variants[0].trace, study.baseline) if settings.temperature == 0 else None
    if parted is not None:
        return False, describe(parted, study.baseline.dtype)
    return False, (f"{where}: greedy verification should reproduce the target token for token. The target scored "
                   "several positions in one pass, so a near-tie between two tokens can round the other way.")
