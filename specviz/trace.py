"""The trace: everything one run decided, as plain records that save to JSON.

Schema (version 7), top level:
  format "specviz-trace", version, prompt, prompt_ids, target, drafter, device, dtype,
  settings (DecodeSettings), iterations [Iteration], generated_ids, text, wall_time, summary,
  threads (torch CPU threads of the process that ran it; 0 if unknown), waited (seconds the run
  queued behind other runs before it started: not part of wall_time; both added in version 1, a
  file without them loads with 0), stopped_by (why the run stopped before its end, e.g. the host's run-time
  limit; null when it ran to EOS or max_new_tokens or was stopped by its user; optional, added in version 2),
  block (positions the drafter drafts in one pass: a parallel drafter's block, 0 for one a pass, which
  the analytic curves price as one drafter step; added in version 6, a file without it loads with the
  deepest draft one drafter pass made, 0 if none), context (prompt_ids as text: the prompt as the target
  read it, its chat template and system prompt included; added in version 7, a file without it loads with "").
Iteration: index, drafted, accepted, emitted_ids, drafts [DraftStep], final FinalToken | null,
  draft_time, verify_time, sample_time, draft_calls (seconds; drafter forward passes), unsure
  (the drafter stopped before γ: its most likely token fell below settings.draft_confidence),
  elapsed (seconds from the run's start to the end of the iteration, when its tokens were committed:
  the prefill and the recording included, read after the device finished; added in version 3, a
  version 1 or 2 file loads with it derived from the cumulative phase times scaled to wall_time),
  network_time (seconds of verify_time spent on the network: the simulated or added latency, and for a
  remote target that reports its compute time the rest of the round trip), server_time (a remote
  target's own compute time, where it reports one; else null), p_unknown (a remote target that
  returned p's top-k only, under lossless sampling: the largest mass of p outside what came back over
  the iteration's rows, which the verification renormalised away; null: p was known); the three added
  in version 4, a file without them loads with 0, null, null. unsent (lossless sampling against a
  remote target that takes only text: drafts drawn from q that it could not be sent and were left out,
  which makes the run approximate; added in version 7, a file without it loads with 0). choice (an
  adaptive run's: the shape the policy chose before the iteration and what it predicted, `Choice`; null
  for a fixed shape; added in version 5, a file without it loads with null).
  `drafts` are the nodes of the iteration's token tree (a chain in order, or parents before children).
DraftStep: position (the node's depth, 1-based), token_id, token, q, p (the target's, after the
  node's parent), ratio (what the test compared with u: p(x)/q(x), with p' for a sibling tried after a
  rejected one and q = 1 for a picked node), u, verdict ("accepted": on the accepted path | "rejected": tested and
  refused | "unverified": never reached), rule, beta = Σ min(p, q), p_top (p after the parent),
  q_top, residual_top, residual_mass (the distribution left after this node was rejected,
  norm(max(0, p' - q)), and its mass before normalising; rejected nodes under the sampling rule),
  parent (index of the parent node in `drafts`, -1 for the root's children; null: the node before
  it, as in a chain), sampled (false: picked by rank, tested as a one-hot q). Version 2 added
  parent and sampled; a version 1 file loads as chains.
FinalToken: kind ("correction" | "bonus" | "target"), token_id, token, sampled_from
  ("residual" | "p" | "argmax p"), top (TopK of that distribution).
Choice: gamma (the depth chosen; 0: no draft), branches, nodes, expected_tokens (E), gain (predicted
  tokens/s over the target alone's), alpha (the running estimate of depth 1's acceptance when it was
  chosen), probe (drafted to learn rather than predicted faster), situation (what the drafter knew of
  its chances before drafting, e.g. prompt lookup's "match 3", whose estimates chose; "" for one table;
  a file without it loads with ""), costs (a run that learns its costs: the factors it priced by, the
  verify pass's a and b and the drafter step's, `specviz.learnt_costs`; empty otherwise or in an older file).
TopK: ids, tokens, probs.
`summary` is recomputed from the iterations on load; it is saved for readers of the file.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import pandas as pd

from specviz.errors import SpecvizError
from specviz.files import write_whole
from specviz.plural import count
from specviz.settings import DecodeSettings
from specviz.tree import children, depths, is_chain

FORMAT = "specviz-trace"
VERSION = 7
MAX_BYTES = 64 * 2**20  # a larger trace or study file is refused before it is parsed


@dataclass
class TopK:
    ids: list[int]
    tokens: list[str]
    probs: list[float]


@dataclass
class DraftStep:
    position: int
    token_id: int
    token: str
    q: float
    p: float
    ratio: float | None
    u: float | None
    verdict: str
    rule: str
    beta: float
    p_top: TopK | None = None
    q_top: TopK | None = None
    residual_top: TopK | None = None
    residual_mass: float | None = None
    parent: int | None = None
    sampled: bool = True


@dataclass
class FinalToken:
    kind: str
    token_id: int
    token: str
    sampled_from: str
    top: TopK | None = None


@dataclass(frozen=True)
class Choice:
    """The draft shape an adaptive policy chose before an iteration, and the prediction that chose it
    (`specviz.adaptive`)."""

    gamma: int                 # depth; 0: no draft, one plain target step
    branches: int
    nodes: int
    expected_tokens: float     # E: tokens per iteration predicted
    gain: float                # predicted tokens/s over the target alone's
    alpha: float               # the estimate of depth 1's acceptance (the drafter's first guess, drawn) when chosen
    probe: bool = False        # drafted to learn, not because it was predicted faster
    situation: str = ""        # what the drafter knew before drafting (`Drafter.situation`), whose estimates chose
    costs: tuple[float, ...] = ()   # learnt costs (`learnt_costs`): the factors (a, b, drafter step) it priced by


@dataclass
class Iteration:
    index: int
    drafted: int
    accepted: int
    emitted_ids: list[int]
    drafts: list[DraftStep] = field(default_factory=list)
    final: FinalToken | None = None
    draft_time: float = 0.0
    verify_time: float = 0.0
    sample_time: float = 0.0
    draft_calls: int = 0
    unsure: bool = False
    elapsed: float | None = None  # None: not recorded (an iteration built by hand)
    network_time: float = 0.0
    server_time: float | None = None
    p_unknown: float | None = None
    unsent: int = 0
    choice: Choice | None = None

    @property
    def parents(self) -> list[int]:
        """The tree of `drafts`: each node's parent, -1 for the root's children."""
        return [i - 1 if d.parent is None else d.parent for i, d in enumerate(self.drafts)]

    @property
    def path(self) -> list[int]:
        """The accepted nodes, the root's child first (parents come before children in `drafts`)."""
        return [i for i, d in enumerate(self.drafts) if d.verdict == "accepted"]

    @property
    def tested_levels(self) -> list[list[int]]:
        """The nodes tested at each depth of the accepted path, in node order: the root's children, then
        each accepted node's; the last level holds the rejection that ended the path, if any."""
        kids, node, levels = children(self.parents), -1, []
        while True:
            tried = [k for k in kids.get(node, []) if self.drafts[k].verdict != "unverified"]
            if not tried:
                return levels
            levels.append(tried)
            kept = [k for k in tried if self.drafts[k].verdict == "accepted"]
            if not kept:
                return levels
            node = kept[0]

    @property
    def one_pass(self) -> bool:
        """The draft reached depth 2 or more in a single drafter pass: a block drafted in parallel
        (blockwise heads, Spec-Drafter), not token by token."""
        return self.draft_calls == 1 and max(depths(self.parents), default=0) >= 2

    @property
    def evaluated(self) -> int:
        """Positions whose test decided something: the accepted ones plus the first rejection."""
        return self.accepted + (1 if self.final is not None and self.final.kind == "correction" else 0)


def position_counts(iterations: list[Iteration], gamma: int) -> tuple[list[int], list[int]]:
    """For draft positions 1..γ: how many iterations tested the position (every position before it
    accepted), and how many of those accepted it."""
    reached, passed = [0] * gamma, [0] * gamma
    for it in iterations:
        for i in range(min(it.evaluated, gamma)):
            reached[i] += 1
            passed[i] += i < it.accepted
    return reached, passed


@dataclass
class Summary:
    tokens: int
    iterations: int
    wall_time: float
    tokens_per_s: float
    alpha: float | None               # α̂ = accepted / tested drafts (the accepted, and each iteration's rejection)
    expected_alpha: float | None      # E[β] over the same drafts of chains (`expected_alpha`)
    accepted_length: float            # tokens emitted per iteration, correction / bonus included
    position_acceptance: list[float | None]   # P(accept position i | positions < i accepted)
    accepted_histogram: list[int]     # iterations that accepted 0..γ drafts
    c: float | None                   # one drafter step's time / one verify pass's (`cost_coefficient`)
    draft_time: float
    verify_time: float
    sample_time: float


@dataclass
class Trace:
    prompt: str
    prompt_ids: list[int]
    target: str
    drafter: str
    settings: DecodeSettings
    device: str = "cpu"
    dtype: str = "float32"
    iterations: list[Iteration] = field(default_factory=list)
    generated_ids: list[int] = field(default_factory=list)
    text: str = ""
    wall_time: float = 0.0
    threads: int = 0
    waited: float = 0.0
    stopped_by: str | None = None
    block: int = 0   # positions the drafter drafts in one pass (a parallel drafter, `Drafter.block`); 0: one a pass
    context: str = ""   # prompt_ids as text: the prompt as the target read it, its chat template included

    @property
    def approximate(self) -> float | None:
        """Lossless sampling against a remote target that returned only p's top-k: the largest mass of p
        it left out in any iteration (the verdicts then follow p renormalised on the top-k); None: p was known."""
        masses = [it.p_unknown for it in self.iterations if it.p_unknown is not None]
        return max(masses) if masses else None

    @property
    def unsent(self) -> int:
        """Drafts drawn from q that a text-only remote target could not be sent (`RemoteTarget.sendable`)."""
        return sum(it.unsent for it in self.iterations)

    def summary(self) -> Summary:
        its = self.iterations
        gamma = self.settings.gamma
        tokens = len(self.generated_ids)
        evaluated = sum(it.evaluated for it in its)
        accepted = sum(it.accepted for it in its)
        reached, passed = position_counts(its, gamma)
        histogram = [0] * (gamma + 1)
        for it in its:
            if it.drafted:
                histogram[min(it.accepted, gamma)] += 1
        draft_time = sum(it.draft_time for it in its)
        verify_time = sum(it.verify_time for it in its)
        return Summary(
            tokens=tokens, iterations=len(its), wall_time=self.wall_time,
            tokens_per_s=tokens / self.wall_time if self.wall_time else 0.0,
            alpha=accepted / evaluated if evaluated else None, expected_alpha=expected_alpha(its),
            accepted_length=tokens / len(its) if its else 0.0,
            position_acceptance=[p / r if r else None for p, r in zip(passed, reached)],
            accepted_histogram=histogram, c=cost_coefficient(its), draft_time=draft_time, verify_time=verify_time,
            sample_time=sum(it.sample_time for it in its))

    def commit_times(self) -> list[float]:
        """When each iteration's tokens were committed, in seconds from the run's start: as recorded, or
        derived from the phase times (`derived_elapsed`) where an iteration does not say."""
        if all(it.elapsed is not None for it in self.iterations):
            return [it.elapsed for it in self.iterations]
        return derived_elapsed(self.iterations, self.wall_time)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["settings"] = self.settings.to_dict()
        data["summary"] = asdict(self.summary())
        return {"format": FORMAT, "version": VERSION, **data}

    def save(self, path: str | Path) -> None:
        write_whole(Path(path), lambda temporary: temporary.write_text(json.dumps(self.to_dict())))

    def iterations_frame(self) -> pd.DataFrame:
        """One row per iteration, its phases' times in milliseconds."""
        return pd.DataFrame([{
            "iteration": it.index, "drafted": it.drafted, "accepted": it.accepted,
            "emitted": len(it.emitted_ids), "final token": it.final.kind if it.final else None,
            "draft (ms)": 1000 * it.draft_time, "verify (ms)": 1000 * it.verify_time,
            "sample (ms)": 1000 * it.sample_time} for it in self.iterations])

    def drafts_frame(self) -> pd.DataFrame:
        """One row per drafted position."""
        return pd.DataFrame([{
            "iteration": it.index, "position": d.position, "token_id": d.token_id, "token": d.token,
            "q": d.q, "p": d.p, "ratio": d.ratio, "u": d.u, "verdict": d.verdict, "rule": d.rule,
            "beta": d.beta} for it in self.iterations for d in it.drafts])


def approximate_note(trace: Trace) -> str | None:
    """What a trace whose lossless sampling was not exact must say wherever it is shown; None: it was exact."""
    notes = []
    if trace.approximate is not None:
        notes.append(f"lossless sampling against a remote target that returned p's top-{trace.settings.target_logprobs}"
                     f" only: up to {trace.approximate:.1%} of p lay outside them, and the verdicts, corrections and "
                     "bonus tokens followed p renormalised on what came back (ask for the whole p to make it exact)")
    if trace.unsent:
        notes.append(f"{count(trace.unsent, 'draft')} drawn from q could not be sent to the "
                     "remote target, whose engine takes text its tokenizer would split otherwise, and were left "
                     "out: whether a draw is left out depends on the token drawn, which moves the output off p")
    return "; and ".join(notes) or None


def trace_from_dict(data: dict) -> Trace:
    """Rebuild a Trace from its JSON form; anything else raises SpecvizError."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SpecvizError("not a specviz trace (missing \"format\": \"specviz-trace\")")
    if data.get("version") not in range(1, VERSION + 1):
        raise SpecvizError(f"unsupported specviz trace version {data.get('version')!r} (expected 1 to {VERSION})")
    try:
        iterations = [_iteration(it) for it in data["iterations"]]
        if data["version"] < 3:  # before iterations recorded when they ended
            for it, elapsed in zip(iterations, derived_elapsed(iterations, float(data["wall_time"]))):
                it.elapsed = elapsed
        return Trace(
            prompt=data["prompt"], prompt_ids=list(data["prompt_ids"]), target=data["target"],
            drafter=data["drafter"], settings=_settings(data["settings"]),
            device=data["device"], dtype=data["dtype"], iterations=iterations,
            generated_ids=list(data["generated_ids"]), text=data["text"],
            wall_time=float(data["wall_time"]), threads=int(data.get("threads", 0)),
            waited=float(data.get("waited", 0.0)), stopped_by=data.get("stopped_by"),
            block=int(data["block"]) if "block" in data else drafted_in_one_pass(iterations),
            context=str(data.get("context", "")))
    except KeyError as error:
        raise SpecvizError(f"not a valid specviz trace: it has no field {error}") from error
    except (TypeError, ValueError, SpecvizError) as error:
        raise SpecvizError(f"not a valid specviz trace: {error}") from error


def _settings(data: dict) -> DecodeSettings:
    """A trace's settings, each field checked by DecodeSettings; one it does not have is named."""
    unknown = sorted(set(data) - {f.name for f in fields(DecodeSettings)})
    if unknown:
        raise SpecvizError(f"its settings have no field {unknown[0]!r}")
    return DecodeSettings(**data)


def expected_alpha(iterations: list[Iteration]) -> float | None:
    """Leviathan et al.'s α = E[β] (§3.1), over the drafts α̂ counts in the chains lossless sampling tested: β =
    Σ min(p, q) is the chance a draft drawn from q is kept (p(x̃) for a picked one, whose q is one-hot). α̂ counts
    the verdicts, each a flip of u; this averages the chances the flips were made with, so it moves less from
    run to run. None: no chain was tested by lossless sampling (a tree's depth passes when any child does)."""
    chances = [d.beta if d.sampled else d.p for it in iterations if is_chain(it.parents)
               for d in it.drafts if d.rule == "sampling" and d.verdict in ("accepted", "rejected")]
    return sum(chances) / len(chances) if chances else None


def cost_coefficient(iterations: list[Iteration]) -> float | None:
    """Leviathan et al.'s c, measured: the mean time of one drafter step over that of one verify pass of a draft
    (the paper's target run, which verifies γ + 1 tokens in the time of one step where compute is idle), over
    the iterations that drafted. Those up to the first that drafted are left out when later ones drafted: they
    read the prompt (the target's prefill; a draft model's, or an EAGLE head's window, in its first draft),
    which a long prompt makes many steps long. None: no drafter step was timed."""
    drafting = [i for i, it in enumerate(iterations) if it.draft_calls]
    steady = [iterations[i] for i in drafting[1:]] or [iterations[i] for i in drafting]
    calls = sum(it.draft_calls for it in steady)
    verify = sum(it.verify_time for it in steady)
    return (sum(it.draft_time for it in steady) / calls) / (verify / len(steady)) if calls and verify else None


def drafted_in_one_pass(iterations: list[Iteration]) -> int:
    """The deepest draft made in a single drafter pass (`Iteration.one_pass`), 0 if none: a trace saved before
    it recorded its drafter's block, read as a parallel drafter's block (exact once one draft filled it)."""
    return max((max(depths(it.parents)) for it in iterations if it.one_pass), default=0)


def derived_elapsed(iterations: list[Iteration], wall_time: float) -> list[float]:
    """Each iteration's end estimated from the cumulative phase times (equal steps if none was timed),
    scaled so that the last one ends at `wall_time`; for iterations that did not record `elapsed`."""
    steps = [it.draft_time + it.verify_time + it.sample_time for it in iterations]
    if not any(steps):
        steps = [1.0] * len(steps)
    total = sum(steps)
    return [min(wall_time, wall_time * done / total) for done in itertools.accumulate(steps)]


def load_trace(path: str | Path) -> Trace:
    return trace_from_dict(read_json(Path(path), "specviz trace"))


def read_json(source: Path | bytes, what: str) -> object:
    """The JSON in a file or in an upload's bytes; too large, unreadable or not JSON raises SpecvizError.
    Only JSON is ever read: nothing is unpickled or executed."""
    name = str(source) if isinstance(source, Path) else "the file"
    try:
        size = source.stat().st_size if isinstance(source, Path) else len(source)
        if size > MAX_BYTES:
            raise SpecvizError(f"not a {what}: {name} holds {size / 2**20:.0f} MiB, more than the "
                               f"{MAX_BYTES // 2**20} MiB a {what} may")
        return json.loads(source.read_bytes() if isinstance(source, Path) else source)
    except OSError as error:
        raise SpecvizError(f"not a {what}: {name} cannot be read ({error})") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SpecvizError(f"not a {what}: {name} is not JSON ({error})") from error
    except RecursionError:
        raise SpecvizError(f"not a {what}: {name} nests its JSON deeper than Python reads") from None


def _topk(data: dict | None) -> TopK | None:
    return TopK(**data) if data is not None else None


def _iteration(data: dict) -> Iteration:
    drafts = [DraftStep(**{**d, "p_top": _topk(d["p_top"]), "q_top": _topk(d["q_top"]),
                           "residual_top": _topk(d["residual_top"])}) for d in data["drafts"]]
    final = data["final"]
    if final is not None:
        final = FinalToken(**{**final, "top": _topk(final["top"])})
    choice = data.get("choice")
    return Iteration(**{**data, "drafts": drafts, "final": final,
                        "choice": Choice(**{**choice, "costs": tuple(choice.get("costs", ()))})
                        if choice is not None else None})


def text_segments(trace: Trace, include_rejected: bool = True) -> list[tuple[str, str]]:
    """The generated text as (piece, kind) in order of decision.

    kind: "accepted" (a draft the target kept), "rejected" (a draft it threw away; not part of
    the output), "correction" (drawn after a rejection), "bonus" (drawn after a fully accepted
    draft) or "target" (a plain target step).
    """
    pieces = []
    for it in trace.iterations:
        for node in _decision_order(it):
            step = it.drafts[node]
            if step.verdict == "accepted":
                pieces.append((step.token, "accepted"))
            elif step.verdict == "rejected" and include_rejected:
                pieces.append((step.token, "rejected"))
        if not it.drafts:  # recording off: only ids are known
            pieces.extend((str(i), "accepted") for i in it.emitted_ids[: it.accepted])
        if it.final is not None:
            pieces.append((it.final.token, it.final.kind))
    return pieces


def _decision_order(it: Iteration) -> list[int]:
    """Nodes that were decided, depth by depth: the rejected children of each accepted node (or of
    the root), then the accepted one, as the text reads."""
    return [k for level in it.tested_levels for verdict in ("rejected", "accepted") for k in level
            if it.drafts[k].verdict == verdict]
