"""Held-out acceptance measured the way it is used: the engine's own decoder loop.

α̂ = accepted / evaluated draft positions and the accepted length (tokens per iteration,
bonus/correction included) over a set of held-out prompts, pooled over all their iterations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from specviz.decoder import generate
from specviz.drafters.base import Drafter
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings


@dataclass
class Acceptance:
    temperature: float
    gamma: int
    prompts: int
    alpha: float
    accepted_length: float
    tokens: int

    def to_dict(self) -> dict:
        return asdict(self)


def acceptance(target: LoadedModel, drafter: Drafter, prompts: list[str], temperature: float, gamma: int = 4,
               max_new_tokens: int = 64, seed: int = 0) -> Acceptance:
    """Pooled α̂ and accepted length of `drafter` on `prompts` (lossless sampling, or greedy at T=0)."""
    settings = DecodeSettings(gamma=gamma, temperature=temperature, max_new_tokens=max_new_tokens,
                              seed=seed, record=False)
    accepted = evaluated = tokens = iterations = 0
    for prompt in prompts:
        trace = generate(target, drafter, prompt, settings)
        accepted += sum(it.accepted for it in trace.iterations)
        evaluated += sum(it.evaluated for it in trace.iterations)
        tokens += len(trace.generated_ids)
        iterations += len(trace.iterations)
    return Acceptance(temperature, gamma, len(prompts), accepted / max(evaluated, 1), tokens / max(iterations, 1),
                      tokens)
