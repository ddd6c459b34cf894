"""`python -m specviz bench-remote`: a target served by a real engine, measured from this client.

For each added latency (slept before every request, as a slower network would add) and prompt, in
turn, with the order of methods rotating from one prompt to the next:
- the target alone, driven from here one request per token (what a Petals client does);
- speculative decoding with each drafter of its own, as a chain and, where asked, as a token tree
  (one request per leaf, sent together);
- the server's own generation in one request: the reference line, and the text every greedy run
  must reproduce.

Speedups are tokens/s over the target alone at the same latency, summed over the same prompts. A
greedy run that parts from the server's own generation is a near-tie when the server's top two
log-probabilities there are within NEAR_TIE nats (`divergence`: its batched verification pass need
not round like its one-token passes; on "def fibonacci(n):" the two passes part at a 0.40-nat gap);
any other divergence is a failure and leaves the run out of every number.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path

import torch

from specviz.arguments import at_least_one, number_list, output_file
from specviz.bench.command import command_line
from specviz.bench.llama_server import MODEL, llama_server
from specviz.bench.markdown import num
from specviz.bench.prompts import DEFAULT_PROMPTS, BenchPrompt, load_prompts
from specviz.decoder import Run
from specviz.device import Clock
from specviz.divergence import NEAR_TIE, parting
from specviz.drafters.base import Drafter
from specviz.errors import SpecvizError
from specviz.models import LoadedModel
from specviz.remote import RemoteError, RemoteTarget
from specviz.remote.target import pieces
from specviz.settings import DecodeSettings
from specviz.tree import parse_shape

ALONE = "target alone"
SERVER = "server generate"
CHAIN_GOAL = 1.3    # the tiny LM's chain over the target alone, at 100 ms added per request
GOAL_LATENCY = 100.0
FORMAT = "specviz-remote-bench"


@dataclass
class RemoteRun:
    method: str
    latency_ms: float
    prompt: str
    tokens: int
    seconds: float               # wall clock, from the first request to the last answer
    requests: int
    network: float               # seconds known to be network: the added latency at least
    iterations: int | None
    accepted: int | None
    evaluated: int | None
    diverged_at: int | None      # first token unlike the server's own generation (None: equal)
    gap: float | None            # nats between the server's top two there
    stopped: str | None = None   # why the run ended early (a text-only engine and a context it re-tokenises)

    @property
    def fails(self) -> bool:
        return self.stopped is not None or (
            self.diverged_at is not None and (self.gap is None or self.gap >= NEAR_TIE))


@dataclass
class RemoteRow:
    latency_ms: float
    method: str
    runs: int
    tokens_per_s: float | None
    speedup: float | None        # over the target alone at this latency, on the same prompts
    alpha: float | None
    accepted_length: float | None
    requests_per_token: float | None
    network_share: float | None
    near_ties: int
    failures: int
    stopped: int = 0


def add_remote_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target-url", default=None,
                        help="the server (default: start llama-cpp-python's server on the embedded GGUF on loopback)")
    parser.add_argument("--target-model", default="", help="the model name the server serves (default: its first)")
    parser.add_argument("--drafters", default="tiny,specdrafter,ngram,bigram",
                        help="comma-separated drafters of their own, each timed as a chain (default %(default)s)")
    parser.add_argument("--gamma", type=int, default=4, help="draft length of the chains (default 4)")
    parser.add_argument("--trees", default="tiny:3x2x6",
                        help="comma-separated KIND:DEPTHxTOPKxNODES token trees (default %(default)s; '' for none)")
    parser.add_argument("--latencies", default="0,20,100",
                        help="comma-separated milliseconds added to every request (default %(default)s)")
    parser.add_argument("--max-new-tokens", type=int, default=12, help="tokens per prompt (default 12)")
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS), help="prompt set JSON (default: the shipped one)")
    parser.add_argument("--categories", default="chat,code", help="comma-separated categories (default %(default)s)")
    parser.add_argument("--per-category", type=int, default=1, help="prompts per category (default 1)")
    parser.add_argument("--no-chat", action="store_true",
                        help="feed prompts as raw text, no chat template (shorter contexts, but the embedded model "
                             "then often writes \"\\n\" \"\\n\", which a text-only engine cannot take back)")
    parser.add_argument("--threads", type=at_least_one, default=1,
                        help="torch threads here and the server's (default 1)")
    parser.add_argument("--out", default="benchmarks/remote-target.json", type=output_file,
                        help="results JSON (default: %(default)s)")
    parser.add_argument("--markdown", default="benchmarks/remote-target.md", type=output_file,
                        help="results Markdown (default: %(default)s)")


def run_remote_bench(args: argparse.Namespace) -> None:
    from specviz.drafters import build_drafter
    from specviz.models import load_model

    if args.threads < 1 or args.max_new_tokens < 1:
        raise SpecvizError("--threads and --max-new-tokens must be >= 1")
    torch.set_num_threads(args.threads)
    latencies = number_list(args.latencies, "--latencies", float, low=0)
    prompts = load_prompts(args.prompts, args.categories.split(",") if args.categories else None,
                           args.per_category)
    target = load_model()
    drafters = {kind: build_drafter(kind, target) for kind in _kinds(args)}
    greedy = DecodeSettings(temperature=0.0, max_new_tokens=args.max_new_tokens, record=False,
                            target_model=args.target_model)
    methods: list[tuple[str, Drafter | None, DecodeSettings]] = [(ALONE, None, greedy)]
    methods += [(f"{k} γ={args.gamma}", drafters[k], replace(greedy, gamma=args.gamma))
                for k in args.drafters.split(",") if k]
    for kind, (depth, branches, nodes) in parse_trees(args.trees):
        methods.append((f"{kind} tree {depth}x{branches}x{nodes}", drafters[kind],
                        replace(greedy, gamma=depth, branches=branches, nodes=nodes)))
    with ExitStack() as stack:
        url, server = args.target_url, "a server at " + str(args.target_url)
        if url is None:
            url, _ = stack.enter_context(llama_server(threads=args.threads))
            server = (f"llama-cpp-python {metadata.version('llama-cpp-python')} on 127.0.0.1, the embedded GGUF, "
                      f"{args.threads} thread(s), --logits_all true")
        model = args.target_model or (MODEL if args.target_url is None else "")
        runs = measure(target, methods, prompts, latencies, url, model, not args.no_chat)
    rows = summarize(runs, [name for name, *_ in methods] + [SERVER], latencies)
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    result = {"format": FORMAT, "version": 1, "date": date,
              "command": command_line(), "server": server,
              "client": {"platform": platform.platform(terse=True), "torch": torch.__version__,
                         "threads": torch.get_num_threads(), "target": target.name},
              "settings": {"gamma": args.gamma, "max_new_tokens": args.max_new_tokens, "latencies_ms": latencies,
                           "prompts": [p.id for p in prompts], "chat": not args.no_chat, "near_tie_nats": NEAR_TIE},
              "rows": [asdict(r) for r in rows], "runs": [asdict(r) for r in runs]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    markdown = to_markdown(result, rows, runs)
    Path(args.markdown).write_text(markdown)
    print(markdown)
    print(f"results saved to {args.out} and {args.markdown}", file=sys.stderr)


def measure(target: LoadedModel, methods: list[tuple[str, Drafter | None, DecodeSettings]],
            prompts: list[BenchPrompt], latencies: list[float], url: str, model: str,
            chat: bool, log=sys.stderr) -> list[RemoteRun]:
    """Every method on every prompt at every latency, and the server's own generation; greedy runs
    are checked against the latter, token text for token text."""
    runs: list[RemoteRun] = []
    clock = Clock(target.device)
    texts = pieces(target.tokenizer, target.vocab_size)
    for latency in latencies:
        remote = RemoteTarget(url, model, target.tokenizer, target.vocab_size, k=1, latency_ms=latency,
                              device=target.device)
        for i, prompt in enumerate(prompts):
            prompt_ids = target.encode_prompt(prompt.text, chat=chat)
            start = clock.now()
            theirs = remote.complete(prompt_ids, methods[0][2].max_new_tokens)
            runs.append(RemoteRun(SERVER, latency, prompt.id, len(theirs), clock.now() - start, 1, remote.latency,
                                  None, None, None, None, None))
            shift = i % len(methods)
            for name, drafter, settings in methods[shift:] + methods[:shift]:
                run = Run(target, drafter, prompt.text, replace(settings, target_url=url, target_latency_ms=latency),
                          chat=chat)
                start = clock.now()
                for _ in run:
                    pass
                seconds, trace = clock.now() - start, run.trace
                ours = [texts[t] for t in trace.generated_ids if t not in target.eos_ids]
                at = parting(ours, theirs)
                gap = _gap(remote, prompt_ids + trace.generated_ids[:at]) if at is not None and not trace.stopped_by \
                    else None
                its = trace.iterations
                runs.append(RemoteRun(name, latency, prompt.id, len(trace.generated_ids), seconds, run.lm.requests,
                                      sum(it.network_time for it in its), len(its),
                                      sum(it.accepted for it in its), sum(it.evaluated for it in its), at, gap,
                                      trace.stopped_by))
            done = [r for r in runs if r.latency_ms == latency and r.prompt == prompt.id]
            print(f"[{latency:g} ms, {prompt.id}] tokens/s  " + "  ".join(
                f"{r.method}: {r.tokens / r.seconds:.2f}" for r in done), file=log, flush=True)
    return runs


def summarize(runs: list[RemoteRun], methods: list[str], latencies: list[float]) -> list[RemoteRow]:
    rows = []
    for latency in latencies:
        alone = {r.prompt: r for r in runs if r.latency_ms == latency and r.method == ALONE and not r.fails}
        for method in methods:
            mine = [r for r in runs if r.latency_ms == latency and r.method == method]
            good = [r for r in mine if not r.fails]
            paired = [r for r in good if r.prompt in alone]
            tokens, seconds = sum(r.tokens for r in good), sum(r.seconds for r in good)
            evaluated = sum(r.evaluated or 0 for r in good)
            iterations = sum(r.iterations or 0 for r in good)
            speedup = None
            if paired and method != ALONE:
                mine_rate = sum(r.tokens for r in paired) / sum(r.seconds for r in paired)
                theirs = [alone[r.prompt] for r in paired]
                speedup = mine_rate / (sum(r.tokens for r in theirs) / sum(r.seconds for r in theirs))
            rows.append(RemoteRow(
                latency, method, len(good), tokens / seconds if seconds else None, speedup,
                sum(r.accepted or 0 for r in good) / evaluated if evaluated else None,
                tokens / iterations if iterations else None,
                sum(r.requests for r in good) / tokens if tokens else None,
                sum(r.network for r in good) / seconds if seconds else None,
                sum(r.diverged_at is not None and not r.fails for r in mine),
                sum(r.fails and not r.stopped for r in mine), sum(r.stopped is not None for r in mine)))
    return rows


def to_markdown(result: dict, rows: list[RemoteRow], runs: list[RemoteRun]) -> str:
    s = result["settings"]
    latencies = s["latencies_ms"]
    methods = list(dict.fromkeys(r.method for r in rows))
    lines = [
        "# The remote target", "",
        "A target served by a real engine over HTTP, measured from this client: the target alone driven one "
        "request per token, speculative decoding with each drafter of its own (one request per verification; "
        "a token tree one request per leaf), and the server's own generation in one request. Every request "
        "waits the added latency first, as a slower network would add. Regenerate with the command below.", "",
        f"- date: {result['date']}",
        f"- command: `{result['command']}`",
        f"- server: {result['server']}",
        f"- client: {result['client']['platform']}, torch {result['client']['torch']} with "
        f"{result['client']['threads']} thread(s), drafters' tokenizer: {result['client']['target']}",
        f"- greedy, γ {s['gamma']}, {s['max_new_tokens']} new tokens, one pass over {len(s['prompts'])} prompts "
        f"({', '.join(s['prompts'])}), {'chat template' if s['chat'] else 'raw text, no chat template'}",
        "", "## Speedup over the target alone, by added latency", "",
        "| method | " + " | ".join(f"{x:g} ms" for x in latencies) + " |",
        "| --- |" + " --- |" * len(latencies)]
    for method in methods:
        if method == ALONE:
            continue
        cells = [_x(next(r for r in rows if r.method == method and r.latency_ms == x).speedup) for x in latencies]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += ["", "## Every row", "",
              "| added latency | method | tokens/s | speedup | α̂ | accepted length | requests per token "
              "| network share | near-ties | failures | stopped |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r.latency_ms:g} ms | {r.method} | {num(r.tokens_per_s, 2)} | {_x(r.speedup)} "
                     f"| {num(r.alpha, 3)} | {num(r.accepted_length, 2)} | {num(r.requests_per_token, 2)} "
                     f"| {_pct(r.network_share)} | {r.near_ties} | {r.failures} | {r.stopped} |")
    lines += ["", "## Targets", ""]
    for goal in targets(rows):
        lines.append(f"- {goal}")
    lines += ["", "## Greedy equality with the server's own generation", ""]
    checked = [r for r in runs if r.method != SERVER]
    exact = sum(r.diverged_at is None and not r.stopped for r in checked)
    lines.append(f"- {exact} of {len(checked)} speculative and client-driven runs wrote the server's own tokens "
                 "exactly")
    for r in runs:
        if r.stopped:
            lines.append(f"- stopped: {r.method} on {r.prompt} at {r.latency_ms:g} ms after {r.tokens} tokens: "
                         f"{r.stopped}")
    for r in (r for r in checked if r.diverged_at is not None and not r.stopped):
        kind = "near-tie" if not r.fails else "FAILED"
        lines.append(f"- {kind}: {r.method} on {r.prompt} at {r.latency_ms:g} ms parts at token {r.diverged_at} "
                     f"(top-two gap {num(r.gap, 2)} nats)")
    return "\n".join(lines) + "\n"


def targets(rows: list[RemoteRow]) -> list[str]:
    """The remote target's goals, met or missed, in words."""
    at = [r for r in rows if r.latency_ms == GOAL_LATENCY]
    chain = next((r for r in at if r.method.startswith("tiny γ=")), None)
    tree = next((r for r in at if r.method.startswith("tiny tree")), None)
    out = []
    if chain and chain.speedup is not None:
        met = "met" if chain.speedup >= CHAIN_GOAL else "MISSED"
        out.append(f"{chain.method} at {GOAL_LATENCY:g} ms: {chain.speedup:.2f}× the target alone "
                   f"(goal ≥ {CHAIN_GOAL}) — **{met}**")
    if chain and tree and chain.speedup is not None and tree.speedup is not None:
        met = "met" if tree.speedup > chain.speedup else "MISSED"
        out.append(f"{tree.method} at {GOAL_LATENCY:g} ms: {tree.speedup:.2f}× (goal: more than the chain's "
                   f"{chain.speedup:.2f}×) — **{met}**")
    return out or [f"no tiny rows at {GOAL_LATENCY:g} ms: nothing judged"]


def _gap(remote: RemoteTarget, ids: list[int]) -> float | None:
    """The server's top-two gap after ids, or None where it cannot be asked (a context it re-tokenises)."""
    try:
        return remote.top2_gap(ids)
    except RemoteError:
        return None


def _kinds(args: argparse.Namespace) -> list[str]:
    return list(dict.fromkeys([k for k in args.drafters.split(",") if k] + [k for k, _ in parse_trees(args.trees)]))


def parse_trees(spec: str) -> list[tuple[str, tuple[int, int, int]]]:
    out = []
    for item in (t.strip() for t in spec.split(",") if t.strip()):
        kind, _, shape = item.partition(":")
        try:
            out.append((kind, parse_shape(shape)))
        except SpecvizError:
            raise SpecvizError(f"--trees: {item!r} is not KIND:DEPTHxTOPKxNODES (e.g. tiny:4x2x8)") from None
    return out


def _x(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}×"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.1%}"
