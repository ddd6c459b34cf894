"""Benchmarks: the engine's speculative decoding against its baseline and transformers' generate.

prompts (the prompt set) -> methods (what is timed) -> measure (interleaved runs) -> report
(medians, ratios, targets, JSON) -> markdown (BENCHMARKS.md); command is the CLI entry.
"""

from specviz.bench.command import add_bench_arguments, run_bench
from specviz.bench.report import BenchResult, Row, Spread, Target

__all__ = ["BenchResult", "Row", "Spread", "Target", "add_bench_arguments", "run_bench"]
