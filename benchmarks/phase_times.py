"""Draft shapes as the decoder runs them, beside the prices the sizing gives them: tokens an iteration and
seconds an iteration, predicted and measured, the seconds split into the decoder's phases.

The adaptive policy and the static sizer pick shapes by those predictions, so a shape priced too cheaply or
credited with too many tokens is picked where it loses. A fixed shape is priced by `tree_size.predict` from the
pair's sizing at each iteration's context, an adaptive run's iteration by the choice that drafted it (E, and
the gain over the target alone's predicted time); the policy's own search and learning run outside the three
phases. Each prompt runs every shape at every temperature in turn (one training-split prompt of each corpus
kind, 48 tokens, lookup+eagle, one thread, no early end, recording off); the first prompt runs once more
beforehand, untimed. Usage, from the repository root:

    PYTHONPATH=.:benchmarks python benchmarks/phase_times.py --seed 5957 --shapes 1,2,3,2x2x4,2x3x6,adaptive,chains

prints one row per temperature and shape: iterations (the first, the prompt's prefill, left out), tokens an
iteration predicted and written, milliseconds an iteration predicted and measured (the mean), and the median
milliseconds of the draft, verify and sample phases and of what lies outside them. A shape is γ (a chain),
depth x top-k x nodes, `adaptive` (the default: adaptive trees) or `chains` (adaptive chains).
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from dataclasses import replace

from accepted_counts import default_pair
from constant_ab import corpus_prompts

from specviz import tree_size
from specviz.decoder import generate
from specviz.settings import DecodeSettings
from specviz.sizing import prepare
from specviz.tree_size import DEPTHS


def settings_of(text: str, temperature: float, adaptive: DecodeSettings) -> DecodeSettings:
    """'3' -> a chain of 3; '2x3x6' -> depth 2, top-3, 6 nodes; 'adaptive' -> the default's resolved settings
    (`adaptive`); 'chains' -> those searching chains only."""
    if text in ("adaptive", "chains"):
        return replace(adaptive, temperature=temperature, branches=1 if text == "chains" else adaptive.branches)
    parts = [int(x) for x in text.split("x")]
    gamma, branches, nodes = (parts[0], 1, parts[0]) if len(parts) == 1 else parts
    return DecodeSettings(temperature=temperature, max_new_tokens=48, gamma=gamma, branches=branches, nodes=nodes,
                          record=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=5957, help="the training-split prompts' seed (default 5957)")
    parser.add_argument("--shapes", default="1,2,3,2x2x4,2x3x6,adaptive,chains")
    parser.add_argument("--temperatures", default="0,0.7")
    args = parser.parse_args()
    temperatures = [float(t) for t in args.temperatures.split(",")]
    target, drafter = default_pair()
    prepared = prepare(target, drafter, DecodeSettings(max_new_tokens=48, record=False, adaptive=True,
                                                       auto_size=True, gamma=max(DEPTHS)))
    sizing = prepared.sizing
    prompts = corpus_prompts(1, args.seed, target)
    rows: dict[tuple[float, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for turn, prompt in enumerate([prompts[0], *prompts]):
        for temperature in temperatures:
            for name in args.shapes.split(","):
                settings = settings_of(name, temperature, prepared.settings)
                trace = generate(target, drafter, prompt.text, settings, sizing=sizing)
                if turn == 0:
                    continue
                row, context, elapsed = rows[temperature, name], len(trace.prompt_ids), 0.0
                for i, it in enumerate(trace.iterations):
                    seconds, elapsed = it.elapsed - elapsed, it.elapsed
                    if i > 0:
                        priced = sizing.cost.at_context(context)
                        alone = tree_size.predict(sizing.acceptance, priced, 0, 1, 0)
                        c = it.choice or tree_size.predict(sizing.acceptance, priced, settings.gamma,
                                                           settings.branches, settings.nodes)
                        e = c.expected_tokens
                        gain = c.gain if it.choice else c.tokens_per_s / alone.tokens_per_s
                        row["E"].append(e)
                        row["T"].append(e / (gain * alone.tokens_per_s))
                        row["tokens"].append(len(it.emitted_ids))
                        row["seconds"].append(seconds)
                        row["draft"].append(it.draft_time)
                        row["verify"].append(it.verify_time)
                        row["sample"].append(it.sample_time)
                        row["outside"].append(seconds - it.draft_time - it.verify_time - it.sample_time)
                    context += len(it.emitted_ids)
    a = sizing.acceptance
    print(f"sizing: overhead {1e3 * a.overhead:.2f} ms, drafter step {1e3 * a.draft_step:.2f} ms (tree "
          f"{1e3 * (a.tree_step or a.draft_step):.2f}), verify " +
          " ".join(f"{m}:{1e3 * sizing.cost.at(m):.1f}" for m in range(1, 9)) + f" ms over {sizing.cost.context}")
    print("T    shape   its  E pred  E got  ms pred  ms got  tokens/s  draft  verify  sample  outside")
    for (temperature, name), row in rows.items():
        ms = {key: 1e3 * statistics.median(row[key]) for key in ("draft", "verify", "sample", "outside")}
        print(f"{temperature:<4} {name:7s} {len(row['tokens']):4d}  {statistics.mean(row['E']):6.2f} "
              f"{statistics.mean(row['tokens']):6.2f}  {1e3 * statistics.mean(row['T']):7.1f} "
              f"{1e3 * statistics.mean(row['seconds']):7.1f}  {sum(row['tokens']) / sum(row['seconds']):8.2f}  "
              f"{ms['draft']:5.1f}  {ms['verify']:6.1f}  {ms['sample']:6.1f}  {ms['outside']:7.2f}")


if __name__ == "__main__":
    main()
