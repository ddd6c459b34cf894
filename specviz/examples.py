"""The class pack: runs of the embedded model chosen to teach, shipped in assets/examples/.

Each example is one saved trace or study, so the app has something on every page before any
model loads, and on a host with no model at all. `python -m specviz examples` (or `make
examples`) runs them all again on this machine and rewrites the files; the first example is the
one the app opens on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from specviz.drafters import STANDALONE_KINDS
from specviz.errors import SpecvizError
from specviz.settings import DecodeSettings
from specviz.study import Study, load_record
from specviz.trace import Trace

FOLDER = Path(__file__).resolve().parent.parent / "assets" / "examples"
CHAT = "What makes a good teacher? Answer in three sentences."
RENAME = ("Rename the function mean_and_spread to summary everywhere in this code and return the whole code:\n"
          "def mean_and_spread(values):\n    if not values:\n        raise ValueError('no values')\n"
          "    mean = sum(values) / len(values)\n    spread = max(values) - min(values)\n    return mean, spread\n\n\n"
          "def normalise(values):\n    mean, spread = mean_and_spread(values)\n"
          "    return [(v - mean) / spread for v in values]")
CODE = "Write a Python function that returns the n-th Fibonacci number, with a docstring."
SAMPLED = DecodeSettings(gamma=4, temperature=0.7, max_new_tokens=96)
GREEDY = DecodeSettings(gamma=4, verify="greedy", temperature=0.0, max_new_tokens=64)


@dataclass(frozen=True)
class Example:
    name: str                  # the file's stem under assets/examples/
    title: str                 # what the app's switch shows
    teaches: str               # one sentence for the class
    prompt: str
    drafter: str               # a kind from specviz.drafters.DRAFTER_KINDS
    settings: DecodeSettings
    study: str = ""            # "" for a single run, else "comparison", "gamma sweep" or "grid"
    values: dict = field(default_factory=dict)   # the sweep's or grid's values
    rounds: int = 1            # a study's runs are each timed this often, interleaved
    adaptive: bool = False     # a sweep's last run: adaptive chains up to the largest γ

    @property
    def path(self) -> Path:
        return FOLDER / f"{self.name}.json"


PACK = (
    Example("sampled-chat", "A sampled chat answer: accepted drafts, corrections, bonus tokens",
            "Lossless speculative sampling with the trained EAGLE head: every test u ≤ min(1, p/q), every "
            "correction drawn from the residual, every bonus token.", CHAT, "eagle", replace(SAMPLED, gamma=2)),
    Example("copy-lookup", "Editing code: prompt lookup copies whole lines",
            "A drafter with no model at all: prompt lookup proposes the continuation of an earlier match, and "
            "copying text pays.", RENAME, "ngram", replace(GREEDY, gamma=8, max_new_tokens=96)),
    Example("greedy-race", "Greedy: the target alone against speculative decoding",
            "Greedy speculative decoding reproduces the target's own greedy text token for token, sooner: race "
            "the two runs, the app's default drafter choosing its draft before every iteration.", CHAT, "lookup+eagle",
            replace(GREEDY, auto_size=True, adaptive=True), study="comparison", rounds=3),
    Example("gamma-sweep", "A γ sweep: measured speedup beside Leviathan et al.'s curves",
            "How long a draft pays: measured speedup and tokens per iteration per γ, against S(γ) and E(γ) through "
            "the measured α̂ and c, and a run that chooses its draft length as it goes; greedy, so every run writes "
            "the target's own text and the points compare like for like.", CHAT, "eagle",
            GREEDY, study="gamma sweep", values={"gammas": [1, 2, 3, 4, 6, 8]},
            rounds=7, adaptive=True),
    Example("beta-tau-grid", "A β × τ grid: SpecDec's Table 4 on one prompt",
            "Spec-Verification trades agreement with the target's greedy output for accepted tokens: Tok. and "
            "BLEU per β and τ.", CODE, "eagle", replace(GREEDY, max_new_tokens=48), study="grid",
            values={"betas": [1, 3, 5], "taus": [1.0, 3.0, 5.0]}, rounds=3),
    Example("drafters", "Every drafter at γ = 4: acceptance by draft position, α̂ against c",
            "Which drafter pays: trained drafters that go token by token (EAGLE head, tiny LM) or a block in one pass "
            "(blockwise heads, Spec-Drafter), prompt lookup, count tables, each at the same γ, with how their "
            "acceptance decays along the draft and what a draft step costs.", CHAT, "eagle",
            replace(GREEDY, max_new_tokens=160), study="drafters", values={"kinds": list(STANDALONE_KINDS)}, rounds=3),
    Example("token-tree", "A token tree verified in one pass",
            "Prompt lookup's copy and the EAGLE head's guesses in one tree, tested with SpecInfer's multi-step "
            "rule: siblings in turn, the residual after each rejection.", CODE, "lookup+eagle",
            replace(SAMPLED, gamma=4, branches=2, nodes=10, max_new_tokens=64)),
)


def example(name: str) -> Example:
    return next(e for e in PACK if e.name == name)


def load_example(name: str) -> Trace | Study:
    """The saved run or study of the example `name`."""
    return load_record(example(name).path)


def build(out: Path = FOLDER, names: list[str] | None = None,
          say: Callable[[str], None] = lambda text: print(text, file=sys.stderr)) -> None:
    """Run the examples `names` (default: all) on the embedded target and save them under `out`."""
    unknown = set(names or []) - {e.name for e in PACK}
    if unknown:
        raise SpecvizError(f"no example named {', '.join(sorted(unknown))}; the pack has "
                           f"{', '.join(e.name for e in PACK)}")
    from specviz.decoder import generate
    from specviz.drafters import build_drafter
    from specviz.models import load_model
    from specviz.sizing import prepare
    from specviz.sweep import beta_tau_grid, drafter_comparison, gamma_sweep, run_study

    target = load_model()
    out.mkdir(parents=True, exist_ok=True)
    for e in (e for e in PACK if not names or e.name in names):
        drafter = build_drafter(e.drafter, target)
        warm = prepare(target, drafter, replace(e.settings, max_new_tokens=4))   # warm-up: first-call costs
        generate(target, drafter, e.prompt, warm.settings, sizing=warm.sizing)
        if e.study == "gamma sweep":
            runs = gamma_sweep(target, drafter, e.prompt, e.settings, e.values["gammas"], adaptive=e.adaptive,
                               repeats=e.rounds)
        elif e.study == "grid":
            runs = beta_tau_grid(target, drafter, e.prompt, e.settings, e.values["betas"], e.values["taus"],
                                 repeats=e.rounds)
        elif e.study == "drafters":
            runs = drafter_comparison(target, drafter, e.prompt, e.settings, e.values["kinds"], repeats=e.rounds)
        elif e.study == "comparison":
            runs = run_study(target, drafter, e.prompt, "comparison", e.settings, e.settings, [{}], repeats=e.rounds)
        else:
            runs = iter([generate(target, drafter, e.prompt, e.settings)])
        for record in runs:
            say(f"{e.name}: {len(record.variants) + 1 if isinstance(record, Study) else 1} run(s) done")
        record.save(out / f"{e.name}.json")
        say(f"saved {out / e.name}.json")
