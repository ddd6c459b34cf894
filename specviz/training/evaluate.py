"""Held-out acceptance measured the way it is used: the engine's own decoder loop.

α̂ = accepted / evaluated draft positions, the accepted length (tokens per iteration,
bonus/correction included) and the acceptance at each draft position (P(position i accepted |
positions < i accepted)) with the number of iterations that reached the position (the rate's
denominator: round(rate × reached) is the accepted count, so rates pool across rows and draw as
histograms), over a set of held-out prompts, pooled over all their iterations (`python -m specviz
acceptance` prints them for every drafter on a prompt set). Rows written before `reached_by_position`
was added (the shipped drafter cards' `heldout_acceptance`) lack it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from specviz.decoder import generate
from specviz.drafters.base import Drafter
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings
from specviz.trace import Trace, position_counts


@dataclass
class Acceptance:
    temperature: float
    gamma: int
    prompts: int
    alpha: float
    accepted_length: float
    tokens: int
    by_position: list[float | None] = field(default_factory=list)   # None: no iteration reached the position
    reached_by_position: list[int] = field(default_factory=list)    # iterations that tested each position

    def to_dict(self) -> dict:
        return asdict(self)


def held_out_traces(target: LoadedModel, drafter: Drafter, prompts: list[str | list[dict]],
                    settings: DecodeSettings) -> list[Trace]:
    """One unrecorded run of `drafter` per prompt (a user's text or a conversation)."""
    return [generate(target, drafter, prompt, settings) for prompt in prompts]


def pooled(traces: list[Trace], temperature: float, gamma: int) -> Acceptance:
    """α̂, accepted length and acceptance by position (by depth, for trees) pooled over `traces`."""
    its = [it for trace in traces for it in trace.iterations]
    tokens = sum(len(trace.generated_ids) for trace in traces)
    accepted, evaluated = sum(it.accepted for it in its), sum(it.evaluated for it in its)
    reached, passed = position_counts(its, gamma)
    return Acceptance(temperature, gamma, len(traces), accepted / max(evaluated, 1), tokens / max(len(its), 1),
                      tokens, [round(p / r, 4) if r else None for p, r in zip(passed, reached)], reached)


def chain_settings(temperature: float, gamma: int = 4, max_new_tokens: int = 64, seed: int = 0) -> DecodeSettings:
    """An unrecorded γ-chain run (lossless sampling, or greedy at T=0), as acceptance is measured."""
    return DecodeSettings(gamma=gamma, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, record=False)


def acceptance(target: LoadedModel, drafter: Drafter, prompts: list[str], temperature: float, gamma: int = 4,
               max_new_tokens: int = 64, seed: int = 0) -> Acceptance:
    """Pooled α̂ and accepted length of `drafter` on `prompts` (lossless sampling, or greedy at T=0)."""
    settings = chain_settings(temperature, gamma, max_new_tokens, seed)
    return pooled(held_out_traces(target, drafter, prompts, settings), temperature, gamma)
