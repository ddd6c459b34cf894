"""Other processes' CPU use while something is timed: is a measurement to be trusted?

The sizing (the target's verify-cost curve, the drafter's step) is measured once per machine and kept, so
a measurement taken while other work ran prices every later run's drafts wrongly. On this project's 2-core
machine, with a second one-thread decoder running beside it, a one-thread target pass over 1 to 4 new
tokens took 61 ms where it takes 51 ms alone, and the process's own CPU share stayed at 100%: the cost is
shared caches and memory bandwidth, not time-slicing, so only the others' use shows it. Hence the machine's
busy CPU time (steal included: a virtual machine's neighbours) less this process's own, over the wall time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import psutil

BUSY_CORES = 0.25   # other processes' mean CPU use, in cores, above which a timing is suspect


def _busy_seconds() -> float:
    """The machine's CPU seconds spent on anything but idling, all cores together."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def _own_seconds() -> float:
    own = psutil.Process().cpu_times()
    return own.user + own.system


@dataclass
class Contention:
    """Started when a measurement starts; `others` when it ends."""

    wall: float = field(default_factory=time.perf_counter)
    busy: float = field(default_factory=_busy_seconds)
    own: float = field(default_factory=_own_seconds)

    def others(self) -> float:
        """Mean cores other processes kept busy since the start."""
        wall = time.perf_counter() - self.wall
        others = (_busy_seconds() - self.busy) - (_own_seconds() - self.own)
        return max(0.0, others / wall) if wall > 0 else 0.0


def warning(what: str, others: float | None) -> str | None:
    """A one-line warning when `others` (cores, `Contention.others`) says `what` was timed on a busy machine."""
    if others is None or others <= BUSY_CORES:
        return None
    return (f"{what} was measured while other processes kept {others:.1f} of {psutil.cpu_count()} cores busy, so "
            f"its times may be too slow: take it again on an idle machine (python -m specviz sizing --again)")
