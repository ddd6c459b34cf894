"""Costs learnt from the clock: the kept verify-cost curve and drafter step corrected by what this process timed.

The verify-cost curve (`verify_cost`) is measured once per machine and kept; the machine's speed is
not. On one shared 2-core Xeon, bench runs hours apart that drafted token for token alike timed the
one-token pass at 75 to 151 ms against the kept curve's 90, and the default's passes at 1.10× to 1.40×
a one-token pass over the same shapes: a policy priced by the kept curve drafts as wide when wide passes
cost 40% more as when they cost 10% more.

So every verify pass a run makes on a target is logged (`PassLog`, one per loaded model: runs with
fixed shapes and the target alone teach it too), and an adaptive run that learns its costs reads the
log into two factors on the kept curve v(n, L) (seconds of a pass over n new tokens and L cached ones):

    t(n, L) ≈ a · v(1, L) + b · (v(n, L) − v(1, L))

`a` scales the one-token pass, `b` what each wider pass adds to it. Over v(1, L) this is a line,
r = a + b·z with r = t / v(1, L) and z = v(n, L) / v(1, L) − 1, fitted by least squares over the passes,
each older one weighted down by `MEMORY` per newer pass. Two priors hold it where passes are few: the kept
curve's speed (a = 1, worth `PRIOR_SPEED` passes) and its shape (b = a, worth `PRIOR_SHAPE` passes of
width z = `PRIOR_WIDTH`). So one-token passes alone scale the whole curve, and only passes of different
widths can tell it that wide passes got dearer than narrow ones. The priced curve is
a·v(1) + b·(v(n) − v(1)), non-decreasing for b ≥ 0.

The drafter's step is learnt by the run itself (`StepPrice`): the drafting time of its iterations over
the steps they took priced at the sizing's step, faded alike and started at 1 with the weight of
`PRIOR_STEPS` steps. With both, a machine that slows everything alike drafts nearly as before (the
iteration's fixed overhead is not rescaled), and one where only wide target passes got dearer drafts narrower.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # models keeps a PassLog per model and verify_cost times through models
    from specviz.verify_cost import VerifyCost

LOG = 512             # passes a target's log holds
MEMORY = 0.99         # a newer pass keeps this share of an older one's weight (about 100 passes: 10-20 s here)
PRIOR_SPEED = 1.0     # the kept curve's speed (a = 1) counts as this many passes
PRIOR_SHAPE = 3.0     # its shape (b = a) as this many passes ...
PRIOR_WIDTH = 0.3     # ... of this z (a 16-token pass adds 30-60% to a one-token one)
PRIOR_STEPS = 4.0     # the sizing's drafter step counts as this many steps


@dataclass(frozen=True)
class Pass:
    new: int          # tokens the pass computed: the drafts and the bonus position
    context: int      # tokens already cached
    threads: int
    seconds: float


@dataclass
class PassLog:
    """A target's latest verify passes in this process (`LOG` of them), oldest first; `total` ever logged."""

    passes: deque[Pass] = field(default_factory=lambda: deque(maxlen=LOG))
    total: int = 0

    def add(self, new: int, context: int, threads: int, seconds: float) -> None:
        self.passes.append(Pass(new, context, threads, seconds))
        self.total += 1

    def since(self, total: int) -> list[Pass]:
        """The passes logged after the first `total` (those the ring still holds)."""
        fresh = min(self.total - total, len(self.passes))
        return list(islice(self.passes, len(self.passes) - fresh, None)) if fresh > 0 else []


@dataclass
class PassPrice:
    """The faded least-squares sums of r = a + b·z over the passes read from `log`, against `cost`."""

    cost: VerifyCost
    log: PassLog
    read: int = 0            # the log's passes read so far
    weight: float = 0.0      # Σ w
    z: float = 0.0           # Σ w z
    zz: float = 0.0          # Σ w z²
    r: float = 0.0           # Σ w r
    zr: float = 0.0          # Σ w z r

    def learn(self) -> None:
        """Read the passes logged since the last call (those timed at the curve's thread count)."""
        fresh = [p for p in self.log.since(self.read) if p.threads == self.cost.threads]
        self.read = self.log.total
        for p in fresh:
            curve = self.cost.at_context(p.context)
            one = curve.at(1)
            z, r = curve.at(p.new) / one - 1.0, p.seconds / one
            self.weight, self.z, self.zz = MEMORY * self.weight + 1, MEMORY * self.z + z, MEMORY * self.zz + z * z
            self.r, self.zr = MEMORY * self.r + r, MEMORY * self.zr + z * r

    @property
    def factors(self) -> tuple[float, float]:
        """(a, b) solving the normal equations of Σ w (r − a − b z)² + S (a − 1)² + H Z² (b − a)², b kept ≥ 0."""
        speed, shape = PRIOR_SPEED, PRIOR_SHAPE * PRIOR_WIDTH ** 2
        s00, s01, s11 = self.weight + speed + shape, self.z - shape, self.zz + shape
        t0, t1 = self.r + speed, self.zr
        det = s00 * s11 - s01 * s01
        a, b = (t0 * s11 - s01 * t1) / det, (s00 * t1 - s01 * t0) / det
        if b < 0:   # a wider pass is never cheaper: the best line with b = 0
            a, b = t0 / (self.weight + speed), 0.0
        return a, b


def priced(curve: VerifyCost, a: float, b: float) -> VerifyCost:
    """`curve` with its one-token pass scaled by `a` and each wider pass's extra by `b`."""
    one = curve.seconds[0]
    return replace(curve, seconds=[a * one + b * (s - one) for s in curve.seconds])


@dataclass
class StepPrice:
    """Faded sums of the drafting seconds measured and of the same steps priced at the sizing's step."""

    measured: float = 0.0
    priced: float = 0.0

    def learn(self, seconds: float, steps_priced: float) -> None:
        self.measured = MEMORY * self.measured + seconds
        self.priced = MEMORY * self.priced + steps_priced

    def factor(self, step: float) -> float:
        """Measured over priced, `PRIOR_STEPS` steps of `step` seconds at factor 1 among them."""
        return (self.measured + PRIOR_STEPS * step) / (self.priced + PRIOR_STEPS * step) if step > 0 else 1.0
