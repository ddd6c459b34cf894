"""`python -m specviz drafter-report`: trained EAGLE heads side by side on the corpus's held-out prompts.

Each head (the first-generation head and a newer one, on the very same prompts and seeds) runs in the
engine's decoder loop, kind by kind, greedy and at T = 0.7 (lossless sampling): α̂ and the acceptance
at each draft position of a γ chain (P(position i accepted | positions < i accepted), with the
iterations that reached it), and the accepted length — tokens per target pass — of that chain and of
a token tree. Also per head: the share of the target's greedy tokens outside its draft vocabulary (a
token outside it can never be drafted, so each one ends its iteration's run of acceptances), and from
its card the training curve, data and CPU time. Saved as JSON (format "specviz-drafter-report") and
Markdown side by side. The held-out prompts are read here only; no training step reads them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from specviz.arguments import at_least_one
from specviz.errors import SpecvizError

FORMAT = "specviz-drafter-report"
SHIPPED_HEAD = "assets/drafters/eagle-smollm2-135m.safetensors"


@dataclass(frozen=True)
class ReportSettings:
    per_kind: int = 6                   # held-out prompts of each kind
    max_new_tokens: int = 64
    gamma: int = 4                      # the chain's draft length
    tree: tuple[int, int, int] = (4, 2, 8)   # depth, top-k, node budget
    temperatures: tuple[float, ...] = (0.0, 0.7)
    seed: int = 0


def add_drafter_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--heads", nargs="+", default=[SHIPPED_HEAD],
                        help=f"EAGLE head weight files, each with its JSON card beside it (default: {SHIPPED_HEAD})")
    parser.add_argument("--per-kind", type=at_least_one, default=ReportSettings.per_kind,
                        help=f"held-out prompts of each kind (default {ReportSettings.per_kind})")
    parser.add_argument("--max-new-tokens", type=at_least_one, default=ReportSettings.max_new_tokens,
                        help="tokens each held-out prompt's run generates (default %(default)s)")
    parser.add_argument("--gamma", type=at_least_one, default=ReportSettings.gamma,
                        help="the chain's draft length (default %(default)s)")
    parser.add_argument("--tree", default="x".join(map(str, ReportSettings.tree)),
                        help="the token tree as DEPTHxTOPKxNODES (default %(default)s)")
    parser.add_argument("--temperatures", nargs="+", type=float, default=list(ReportSettings.temperatures),
                        help="the temperatures measured, 0 for greedy (default %(default)s)")
    parser.add_argument("--threads", type=at_least_one, default=1, help="CPU threads for torch (default 1)")
    parser.add_argument("--reuse", default=None, metavar="REPORT",
                        help="an earlier report's JSON of the same target and settings: its heads are kept as "
                             "measured there, before the --heads measured now")
    parser.add_argument("--out", default="benchmarks/drafter-v2",
                        help="writes OUT.json and OUT.md (default %(default)s)")


def run_drafter_report(args: argparse.Namespace) -> None:
    import torch

    from specviz.corpus.store import load_heldout
    from specviz.models import load_model
    from specviz.tree import parse_shape

    try:
        tree = parse_shape(args.tree)
    except SpecvizError as error:
        raise SpecvizError(f"--tree: {error}") from None
    if missing := [h for h in args.heads if not Path(h).is_file()]:
        raise SpecvizError(f"no head at {', '.join(missing)}")
    torch.set_num_threads(args.threads)
    settings = ReportSettings(args.per_kind, args.max_new_tokens, args.gamma, tree, tuple(args.temperatures))
    heldout = load_heldout()
    target = load_model(None)
    kept = earlier_heads(Path(args.reuse), target.name, settings_record(settings, by_kind(heldout, args.per_kind))) \
        if args.reuse else []
    out, command = Path(args.out), shlex.join(["python", "-m", "specviz", *sys.argv[1:]])
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(report: dict) -> None:   # after every head: a stopped run keeps those done (--reuse OUT.json goes on)
        report = {**report, "command": command}
        out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
        out.with_suffix(".md").write_text(markdown(report))
        print(f"saved {out.with_suffix('.json')} and {out.with_suffix('.md')} ({len(report['heads'])} heads)")

    drafter_report(target, [Path(h) for h in args.heads], heldout, settings, progress=print, kept=kept, save=save)


def by_kind(heldout: list[dict], per_kind: int) -> dict[str, list[list[dict]]]:
    """The first `per_kind` held-out conversations of each kind, in the file's order of kinds."""
    kinds: dict[str, list[list[dict]]] = {}
    for prompt in heldout:
        chosen = kinds.setdefault(prompt["kind"], [])
        if len(chosen) < per_kind:
            chosen.append(prompt["messages"])
    return kinds


def settings_record(settings: ReportSettings, prompts: dict[str, list]) -> dict:
    """The settings as a report keeps them: two reports' rows compare only when these are equal."""
    return {"per_kind": settings.per_kind, "max_new_tokens": settings.max_new_tokens, "gamma": settings.gamma,
            "tree": "x".join(map(str, settings.tree)), "temperatures": list(settings.temperatures),
            "seed": settings.seed, "prompts": {kind: len(p) for kind, p in prompts.items()}}


def earlier_heads(path: Path, target: str, settings: dict) -> list[dict]:
    """The heads of the earlier report at `path`, which must have been measured on `target` with `settings`."""
    from specviz.trace import read_json

    report = read_json(path, "drafter report")
    if not isinstance(report, dict) or report.get("format") != FORMAT:
        raise SpecvizError(f"{path} is not a drafter report (format {FORMAT!r})")
    if report.get("target") != target:
        raise SpecvizError(f"{path} measured heads of {report.get('target')!r}, not of {target!r}")
    earlier = report.get("settings", {})
    differ = sorted(k for k in settings.keys() | earlier.keys() if settings.get(k) != earlier.get(k))
    if differ:
        raise SpecvizError(f"{path} was measured with other settings ({', '.join(differ)}): its heads do not "
                           "compare with these; give the same settings or measure every head again")
    return report["heads"]


def outside_share(vocab: list[int], tokens: list[int]) -> float | None:
    """The share of `tokens` not in the draft vocabulary `vocab` (None for no tokens)."""
    inside = set(vocab)
    return sum(t not in inside for t in tokens) / len(tokens) if tokens else None


def drafter_report(target, heads: list[Path], heldout: list[dict], settings: ReportSettings,
                   progress=lambda line: None, kept: list[dict] = (), save=lambda report: None) -> dict:
    """Every head measured on the same held-out prompts (see the module's docstring), after the `kept`
    heads of an earlier report; the report so far is handed to `save` after each head."""
    from specviz.drafters import load_trained
    from specviz.settings import DecodeSettings
    from specviz.training.evaluate import held_out_traces, pooled

    prompts = by_kind(heldout, settings.per_kind)
    depth, top_k, nodes = settings.tree
    shapes = {"chain": dict(gamma=settings.gamma), "tree": dict(gamma=depth, branches=top_k, nodes=nodes)}
    report = {"format": FORMAT, "version": 1, "target": target.name, "settings": settings_record(settings, prompts),
              "heads": list(kept)}
    for path in heads:
        if not path.exists():
            raise SpecvizError(f"no head at {path}")
        drafter = load_trained("eagle", target, path)
        card_path = path.with_suffix(".json")
        card = json.loads(card_path.read_text()) if card_path.exists() else {}
        rows, greedy_tokens = [], []
        for temperature in settings.temperatures:
            for kind, conversations in prompts.items():
                row = {"kind": kind, "temperature": temperature}
                for shape, size in shapes.items():
                    decode = DecodeSettings(temperature=temperature, max_new_tokens=settings.max_new_tokens,
                                            seed=settings.seed, record=False, **size)
                    traces = held_out_traces(target, drafter, conversations, decode)
                    row[shape] = pooled(traces, temperature, size["gamma"]).to_dict()
                    if temperature == 0 and shape == "chain":   # greedy: the target's own tokens
                        greedy_tokens += [t for trace in traces for t in trace.generated_ids]
                rows.append(row)
                progress(f"{path.name} T={temperature:g} {kind}: α̂ {row['chain']['alpha']:.3f}, accepted length "
                         f"chain {row['chain']['accepted_length']:.2f}, tree {row['tree']['accepted_length']:.2f}")
        vocab = drafter.head.vocab.tolist()
        report["heads"].append({
            "weights": str(path), "name": drafter.name, "feature_layers": list(drafter.head.feature_layers),
            "layers": len(drafter.head.blocks),
            "draft_vocab": len(vocab), "greedy_tokens": len(greedy_tokens),
            "outside_draft_vocab": outside_share(vocab, greedy_tokens), "rows": rows,
            "card": {k: card.get(k) for k in ("data", "training", "wall_time_s", "threads", "command", "curve")}})
        save(report)
    return report


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(report: dict) -> str:
    s = report["settings"]
    lines = [f"# Drafter report: EAGLE heads on the corpus's held-out prompts ({report['target']})", "",
             f"Per kind {s['per_kind']} held-out prompts, {s['max_new_tokens']} new tokens each; "
             f"a γ={s['gamma']} chain and a {s['tree']} tree (depth × top-k × nodes); greedy at T=0, lossless "
             "sampling otherwise. Accepted length: tokens per target pass, the correction or bonus included.", ""]
    if report.get("command"):
        lines += ["```", report["command"], "```", ""]
    gamma = s["gamma"]
    lines += ["| head | T | kind | α̂ (chain) | " + " | ".join(f"pos {i + 1}" for i in range(gamma))
              + " | accepted length, chain | accepted length, tree |",
              "|" + "---|" * (gamma + 6)]
    for head in report["heads"]:
        for row in head["rows"]:
            c, t = row["chain"], row["tree"]
            positions = " | ".join(_f(a) for a in c["by_position"])
            lines.append(f"| {head['name']} | {row['temperature']:g} | {row['kind']} | {c['alpha']:.3f} | {positions} "
                         f"| {c['accepted_length']:.2f} | {t['accepted_length']:.2f} |")
    lines += ["", "| head | feature layers | decoder layers | draft vocabulary | target's greedy tokens outside it |",
              "|---|---|---|---|---|"]
    for head in report["heads"]:
        outside = head["outside_draft_vocab"]
        lines.append(f"| {head['name']} | {head['feature_layers']} | {head.get('layers', 1)} | {head['draft_vocab']} | "
                     f"{'–' if outside is None else f'{outside:.1%}'} of {head['greedy_tokens']} |")
    for head in report["heads"]:
        card = head["card"]
        if not card.get("curve"):
            continue
        lines += ["", f"## Training of {head['name']}", ""]
        if card.get("command"):
            lines += ["```", card["command"], "```", ""]
        lines.append(f"Data: `{json.dumps(card.get('data'))}`. Wall time (s): `{json.dumps(card.get('wall_time_s'))}`, "
                     f"{card.get('threads')} torch thread(s).")
        keys = sorted({k for point in card["curve"] for k in point if k.startswith("val_top1")})
        lines += ["", "| step | seconds | train loss | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 3)]
        for point in card["curve"]:
            lines.append(f"| {point['step']} | {_f(point.get('seconds'), 0)} | {_f(point.get('train_loss'))} | "
                         + " | ".join(_f(point.get(k), 3) for k in keys) + " |")
    return "\n".join(lines) + "\n"
