"""The benchmark results as Markdown: what BENCHMARKS.md holds."""

from __future__ import annotations

from specviz.bench.measure import BASELINE
from specviz.bench.methods import MethodSpec
from specviz.bench.report import ALL, BenchResult, Row, Spread


def to_markdown(result: BenchResult) -> str:
    m, s = result.machine, result.settings
    lines = [
        "## Results",
        "",
        f"- date: {result.date}",
        f"- machine: {m['device_name']} ({m['device']}), {m['platform']}, torch {m['torch']} with "
        f"{m['threads']} thread(s), transformers {m['transformers']}, dtype {m['dtype']}",
        f"- command: `{result.command}`",
        f"- target: {s['target']}; drafters: {', '.join(s['drafters'])}; γ {', '.join(map(str, s['gammas']))}; "
        f"temperature {s['temperature']}; max_new_tokens {s['max_new_tokens']}; "
        f"{s['repeats']} repeats after {s['warmup']} warm-up run(s) per method; "
        f"{s['prompts']} prompts ({', '.join(f'{k} {v}' for k, v in s['categories'].items())})",
        f"- memory: {s['memory_source']}",
        *(["- verify cost (one target pass over m new tokens / one token): " + ", ".join(
            f"{m} → {r:.2f}×" for m, r in zip(s['verify_cost']['sizes'], s['verify_cost']['relative']))]
          if s.get("verify_cost") else []),
        "",
        "### All prompts",
        "",
        "| method | tokens/s (min–max) | speedup (min–max) | α̂ | accepted length | c | recording overhead "
        "| vs transformers | memory MiB | failures |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result.rows:
        if row.category == ALL:
            lines.append(_line(row))
    categories = [c for c in dict.fromkeys(r.category for r in result.rows) if c != ALL]
    lines += ["", "### Speedup over the engine baseline by prompt category (median over repeats)", "",
              "| method | " + " | ".join(categories) + " |", "| --- |" + " --- |" * len(categories)]
    lines += _by_category(result, categories, "speedup", result.methods)
    base = {c: _find(result.rows, BASELINE, c).first_share for c in categories} \
        if any(r.method == BASELINE for r in result.rows) else {}
    if any(share is not None for share in base.values()):
        lines += ["", "### After the prompt's prefill", "",
                  "Speculation speeds up the tokens after the prompt's prefill, not the prefill itself. The first row "
                  "is the baseline's share of its time before its first token (f), the second the end-to-end ceiling "
                  "1/f that no drafter passes (Amdahl's law); below, each method's speedup over what follows every "
                  "run's first iteration (median over repeats).", "",
                  "| method | " + " | ".join(categories) + " |", "| --- |" + " --- |" * len(categories),
                  "| baseline: time before the first token | " + " | ".join(
                      "" if base[c] is None else f"{base[c]:.0%}" for c in categories) + " |",
                  "| end-to-end ceiling 1/f | " + " | ".join(
                      "" if not base[c] else f"{1 / base[c]:.2f}×" for c in categories) + " |"]
        lines += _by_category(result, categories, "after_first",
                              [s for s in result.methods if s.name != BASELINE and s.family != "hf"])
    gpu = ("" if result.machine.get("device") == "cpu" else " On a GPU it counts only the host's share: the "
           "kernels run on the device, and each method waits for them its own way (a synchronize may spin or "
           "sleep), so these ratios compare the host's work, not the runs.")
    lines += ["", "### The same ratios from CPU time", "",
              "Process CPU time counts this run's work only (summed over torch's threads, so it is cleanest with "
              f"one); the wall clock above also measures what the machine's other processes took.{gpu}", "",
              "| method | speedup (min–max) | recording overhead | vs transformers |", "| --- | --- | --- | --- |"]
    for row in result.rows:
        if row.category == ALL:
            lines.append(f"| {row.method} | {ratio_range(row.cpu_speedup)} | {_percent(row.cpu_overhead)} "
                         f"| {ratio_range(row.cpu_vs_hf)} |")
    app = [row for row in result.rows if row.category == ALL and row.engine_method]
    if app:
        lines += ["", "### The app's code path against the library", "",
                  "The same runs in the decoder process the app uses (`specviz/decoder_process.py`), streamed back and "
                  "rebuilt as the Generate page does, over the library's own run of the same drafter and γ in this "
                  "process; medians over repeats of the ratio, app over library.", "",
                  "| method | library method | tokens/s | verify time per iteration | draft time per iteration |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {row.method} | {row.engine_method} | {ratio_range(row.vs_engine)} "
                  f"| {ratio_range(row.verify_vs_engine)} | {ratio_range(row.draft_vs_engine)} |" for row in app]
    lines += ["", "### Targets (judged on wall-clock time; CPU time in brackets)", ""]
    for t in result.targets:
        mark = "met" if t.met else "MISSED"
        lines.append(f"- {t.name}: {_target_value(t.name, t.value)} ({_target_value(t.name, t.cpu_value)}) "
                     f"(goal {t.goal}) — **{mark}**")
    failures = [r for r in result.runs if r.matches is False]
    lines += ["", "### Greedy equality with the baseline", ""]
    if failures:
        lines += [f"- FAILED: {r.method} on {r.prompt} (repeat {r.repeat + 1}) differs at token {r.first_mismatch}"
                  for r in failures]
    elif s["greedy"]:
        lines.append(f"- all {len(result.runs)} timed runs produced the baseline's tokens exactly")
    else:
        lines.append("- not checked: sampling at temperature > 0")
    if result.notes:
        lines += ["", "### Notes", ""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def _line(row: Row) -> str:
    cells = [
        row.method,
        _rate(row.tokens_per_s),
        ratio_range(row.speedup),
        num(row.alpha, 3),
        num(row.accepted_length, 2),
        num(row.c, 3),
        _percent(row.overhead),
        f"{ratio_range(row.vs_hf)} vs {row.hf_method}" if row.vs_hf else "",
        num(row.memory_mb, 0),
        str(row.failures),
    ]
    return "| " + " | ".join(cells) + " |"


def _by_category(result: BenchResult, categories: list[str], ratio: str, methods: list[MethodSpec]) -> list[str]:
    """One table line per method: its `ratio` (a Row field) in each category."""
    return [f"| {spec.name} | " + " | ".join(ratio_range(getattr(_find(result.rows, spec.name, c), ratio))
                                            for c in categories) + " |" for spec in methods]


def _find(rows: list[Row], method: str, category: str) -> Row:
    return next(r for r in rows if r.method == method and r.category == category)


def _rate(s: Spread | None) -> str:
    return f"{s.median:.1f} ({s.low:.1f}–{s.high:.1f})" if s else ""


def ratio_range(s: Spread | None) -> str:
    """A median ratio with the range of the repeats it is the median of: 1.41× (1.30–1.52)."""
    return f"{s.median:.2f}× ({s.low:.2f}–{s.high:.2f})" if s else ""


def _percent(s: Spread | None) -> str:
    return f"{s.median:+.1%} ({s.low:+.1%}…{s.high:+.1%})" if s else ""


def _target_value(name: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.1%}" if "overhead" in name else f"{value:.2f}"


def num(value: float | None, digits: int) -> str:
    """A table cell: the value to `digits` places, or empty where there is none."""
    return "" if value is None else f"{value:.{digits}f}"
