"""The knobs of one run, validated in one place."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from numbers import Integral, Real

from specviz.errors import SpecvizError

VERIFY_RULES = ("sampling", "greedy", "spec")
RULE_NAMES = {"sampling": "lossless sampling", "greedy": "greedy (argmax match)", "spec": "Spec-Verification (β, τ)"}


def rule_name(rule: str) -> str:
    """A verification rule's name inside a sentence: "lossless sampling", "greedy", "Spec-Verification"."""
    return RULE_NAMES[rule].split(" (")[0]

# What each field's annotation admits, and its name in an error (a bool is no number here, though Python's is an int).
KINDS = {"int": (Integral, "a whole number"), "float": (Real, "a number"), "bool": (bool, "true or false"),
         "str": (str, "text")}

MAX_GAMMA = 64
MAX_BRANCHES = 16
MAX_NODES = 256


@dataclass(frozen=True)
class DecodeSettings:
    """Settings shared by the drafter and the target.

    verify: "sampling" is lossless speculative sampling (Leviathan et al., Algorithm 1),
    "greedy" accepts while the draft equals the target's argmax (Petals), "spec" is SpecDec's
    Spec-Verification with `beta` and `tau` (Xia et al., eq. 8-9). Temperature 0 turns
    "sampling" into "greedy". With `draft_confidence` > 0 a drafter stops before a position whose
    most likely token has probability below it, so γ becomes a maximum (llama.cpp's p_min). The
    greedy rules draft with argmax and record p and q at temperature 1, so the pictures still show
    the models' beliefs.

    Token trees: `gamma` is the tree's depth, `branches` the children (the drafter's top-k) of each
    expanded node, `nodes` the budget N of nodes kept (0: no budget). `branches` 1 is a chain.
    With `auto_size` the run first replaces those three by the size `tree_size` predicts fastest
    for the target, drafter and machine. With `adaptive` the run chooses before every iteration the
    shape with the most expected tokens per second (`specviz.adaptive`), no draft at all included:
    `gamma` is then the deepest it may draft, `branches` the most children per node (1: chains only) and
    `nodes` the largest tree (0: the sizer's largest); with `auto_size` too, the sizer's whole range.
    With `learn_costs` too, it prices its drafts by the target's passes timed in this process and its own
    drafting time rather than by the costs measured once (`specviz.learnt_costs`).

    A remote target (`target_url`, `specviz.remote`): the server at that URL, serving `target_model`
    (empty: the one it serves), verifies; the local target lends its tokenizer (and to trained drafters
    its embeddings). Lossless sampling asks it for the top `target_logprobs` log-probabilities per
    position (0: the whole distribution, exact); `target_latency_ms` is then added to each request.
    """

    gamma: int = 4
    verify: str = "sampling"
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    beta: int = 3
    tau: float = 1.0
    seed: int = 0
    max_new_tokens: int = 64
    record: bool = True
    record_top_k: int = 10
    first_target: bool = False
    target_latency_ms: float = 0.0
    draft_confidence: float = 0.0
    branches: int = 1
    nodes: int = 0
    auto_size: bool = False
    adaptive: bool = False
    learn_costs: bool = False
    target_url: str = ""
    target_model: str = ""
    target_logprobs: int = 20
    target_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        for field in fields(self):
            value, (kind, noun) = getattr(self, field.name), KINDS[field.type]
            if not isinstance(value, kind) or (field.type != "bool" and isinstance(value, bool)):
                raise SpecvizError(f"{field.name} must be {noun}, got {value!r}")
        checks = [
            (1 <= self.gamma <= MAX_GAMMA, f"gamma must be between 1 and {MAX_GAMMA}, got {self.gamma}"),
            (self.verify in VERIFY_RULES, f"verify must be one of {', '.join(VERIFY_RULES)}, got {self.verify!r}"),
            (0 <= self.temperature < math.inf, f"temperature must be >= 0 and finite, got {self.temperature}"),
            (self.top_k >= 0, f"top_k must be >= 0 (0 = off), got {self.top_k}"),
            (0 < self.top_p <= 1, f"top_p must be in (0, 1], got {self.top_p}"),
            (self.beta >= 1, f"beta must be >= 1, got {self.beta}"),
            (self.tau >= 0, f"tau must be >= 0, got {self.tau}"),
            (self.max_new_tokens >= 1, f"max_new_tokens must be >= 1, got {self.max_new_tokens}"),
            (self.record_top_k >= 1, f"record_top_k must be >= 1, got {self.record_top_k}"),
            (0 <= self.target_latency_ms < math.inf,
             f"target_latency_ms must be >= 0 and finite, got {self.target_latency_ms}"),
            (abs(self.seed) < 2**63, f"seed must lie between -2^63 and 2^63, got {self.seed}"),
            (0 <= self.draft_confidence < 1, f"draft_confidence must be in [0, 1), got {self.draft_confidence}"),
            (1 <= self.branches <= MAX_BRANCHES, f"branches must be between 1 and {MAX_BRANCHES}, got {self.branches}"),
            (0 <= self.nodes <= MAX_NODES, f"nodes must be between 0 (no budget) and {MAX_NODES}, got {self.nodes}"),
            (self.target_logprobs >= 0, f"target_logprobs must be >= 0 (0 = all), got {self.target_logprobs}"),
            (0 < self.target_timeout_s < math.inf,
             f"target_timeout_s must be > 0 and finite, got {self.target_timeout_s}"),
            (not self.target_model or self.target_url, "target_model names a served model: give target_url too"),
            (not (self.auto_size and self.target_url),
             "the auto size measures a local target's passes: size the tree by hand for a remote target"),
            (not (self.adaptive and self.target_url),
             "adaptive drafting predicts from a local target's measured passes: fix the draft for a remote target"),
            (self.adaptive or not self.learn_costs, "learn_costs prices an adaptive run's drafts: set adaptive too"),
        ]
        for ok, message in checks:
            if not ok:
                raise SpecvizError(message)

    @property
    def rule(self) -> str:
        """The rule actually applied: sampling at temperature 0 is greedy."""
        if self.verify == "sampling" and self.temperature == 0:
            return "greedy"
        return self.verify

    @property
    def greedy(self) -> bool:
        return self.rule != "sampling"

    def to_dict(self) -> dict:
        return asdict(self)
