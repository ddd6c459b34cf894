"""Unigram and bigram drafters: count tables, the cheapest drafters there are.

Leviathan et al. (2023, "Fast Inference from Transformers via Speculative Decoding", §4) try
unigram and bigram models as the approximation model M_q beside small transformers: drafting is a
table lookup, so c ≈ 0, and even they speed T5-XXL up (a bigram model gives 1.25× on English to
German translation), though less than T5-small does. They are the floor any other drafter must
beat. Here the counts come from the target's own greedy answers to the training prompts
(`python -m specviz count-drafter`), so q estimates the target's own token statistics.

With c(x) the count of token x in those answers, N = Σₓ c(x), c(y, x) the count of x right after
token y, c(y) = Σₓ c(y, x), V the vocabulary size and k the add-k smoothing constant:

    unigram:  q(x)     = (c(x) + k) / (N + kV)
    bigram:   q(x | y) = (c(y, x) + k) / (c(y) + kV)   where y was seen as a context (c(y) > 0),
              q(x | y) = q(x)                          elsewhere: back off to the unigram.

Every token gets q > 0. log q goes through the run's warper (temperature, top-k, top-p) exactly
as the target's logits do, and `draft_loop` draws each draft from that warped q, so chains, token
trees and the confidence stop work as for the model drafters. No model runs: `calls` is 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from specviz.drafters.base import Draft, Drafter, draft_loop
from specviz.drafters.weights import DRAFTERS_DIR, load_weights, save_weights
from specviz.models import LoadedModel
from specviz.warpers import Warper

ORDERS = {"unigram": 1, "bigram": 2}   # kind -> n of the n-gram
SMOOTHING = 1e-4                        # default k


@dataclass
class CountTable:
    """How often each token occurs, and (order 2) how often each token follows each other token."""

    order: int
    vocab: int
    unigram: torch.Tensor                # [V] int64: c(x)
    contexts: torch.Tensor               # [m] int64: y of each bigram seen, sorted by (y, x); empty for order 1
    tokens: torch.Tensor                 # [m] int64: x
    counts: torch.Tensor                 # [m] int64: c(y, x) > 0

    @property
    def kind(self) -> str:
        return next(kind for kind, order in ORDERS.items() if order == self.order)

    @classmethod
    def count(cls, sequences: Iterable[tuple[list[int], int]], vocab: int, order: int) -> CountTable:
        """The counts of the tokens of each (sequence, start) from index `start` on (an answer after
        its prompt); for order 2 each is also counted after the token before it."""
        unigram = torch.zeros(vocab, dtype=torch.long)
        pairs = []
        for sequence, start in sequences:
            ids = torch.as_tensor(sequence, dtype=torch.long)
            unigram += torch.bincount(ids[start:], minlength=vocab)
            if order == 2:
                first = max(start, 1)
                pairs.append(ids[first - 1:-1] * vocab + ids[first:])
        keys, counts = torch.unique(torch.cat(pairs) if pairs else torch.empty(0, dtype=torch.long),
                                    return_counts=True)   # sorted, so each context's bigrams are contiguous
        return cls(order, vocab, unigram, keys // vocab, keys % vocab, counts)

    def state(self) -> dict[str, torch.Tensor]:
        """The table as int32 tensors, sparse: only tokens and bigrams that were seen."""
        seen = self.unigram.nonzero()[:, 0]
        arrays = {"unigram_tokens": seen, "unigram_counts": self.unigram[seen]}
        if self.order == 2:
            arrays |= {"bigram_contexts": self.contexts, "bigram_tokens": self.tokens, "bigram_counts": self.counts}
        return {name: array.int() for name, array in arrays.items()}

    @classmethod
    def from_state(cls, state: dict[str, torch.Tensor], order: int, vocab: int) -> CountTable:
        unigram = torch.zeros(vocab, dtype=torch.long)
        unigram[state["unigram_tokens"].long()] = state["unigram_counts"].long()
        empty = torch.empty(0, dtype=torch.int32)
        return cls(order, vocab, unigram, *(state.get(f"bigram_{name}", empty).long()
                                            for name in ("contexts", "tokens", "counts")))


class CountDrafter(Drafter):
    """Drafts from a `CountTable` with add-k smoothing (q as in the module docstring)."""

    def __init__(self, table: CountTable, device: torch.device, smoothing: float = SMOOTHING, name: str = ""):
        if not smoothing > 0:
            raise ValueError(f"add-k smoothing needs k > 0, got {smoothing}")
        self.name = name or table.kind
        self.vocab = table.vocab
        self.device = device
        self.prompt: list[int] = []
        spread = smoothing * table.vocab   # kV: the pseudo-counts added to every context
        self.unigram = (table.unigram.double() + smoothing).div(table.unigram.sum() + spread).log().float().to(device)
        context_counts = torch.zeros(table.vocab, dtype=torch.float64).index_add_(0, table.contexts,
                                                                                 table.counts.double())
        # context y's bigrams are [start[y], start[y + 1]) of the table's (sorted) arrays
        self.start = [0, *torch.bincount(table.contexts, minlength=table.vocab).cumsum(0).tolist()]
        self.unseen = (smoothing / (context_counts + spread)).log().tolist()   # log q(x | y) of a bigram never seen
        self.tokens = table.tokens.to(device)
        self.log_q_seen = ((table.counts.double() + smoothing) / (context_counts[table.contexts] + spread)).log() \
            .float().to(device)

    def begin(self, prompt_ids: list[int]) -> None:
        self.prompt = list(prompt_ids)

    def log_q(self, previous: list[int]) -> torch.Tensor:
        """log q(· | y) [m, V] for each context token y in `previous` [m] (the unigram's where y was never one)."""
        rows = self.unigram.repeat(len(previous), 1)
        for row, y in zip(rows, previous):
            lo, hi = self.start[y], self.start[y + 1]
            if hi > lo:
                row.fill_(self.unseen[y])
                row[self.tokens[lo:hi]] = self.log_q_seen[lo:hi]
        return rows

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        """`draft_loop` over the table: the root's context is the last token so far, each node's its own token."""
        last = generated[-1] if generated else self.prompt[-1]
        draft = draft_loop(self.log_q([last])[0], lambda tokens, _: self.log_q(tokens.tolist()), gamma, warper,
                           generator, confidence, branches, nodes)
        draft.calls = 0   # table lookups, no forward pass
        return draft


def default_table(kind: str) -> Path:
    """The shipped table of `kind` for the embedded target."""
    return DRAFTERS_DIR / f"{kind}-smollm2-135m.safetensors"


def save_counts(path: Path, table: CountTable, smoothing: float, target: LoadedModel) -> None:
    """Save the table beside its smoothing k, tied to `target`'s fingerprint like trained weights."""
    save_weights(path, table.state(), table.kind, {"vocab": table.vocab, "smoothing": smoothing}, target)


def load_counts(target: LoadedModel, kind: str, path: Path | str | None = None) -> CountDrafter:
    """The `kind` drafter of the table in `path` (default: the shipped one), refused unless built for `target`."""
    path = Path(path) if path else default_table(kind)
    state, config = load_weights(path, kind, target)
    table = CountTable.from_state(state, ORDERS[kind], config["vocab"])
    return CountDrafter(table, target.device, config["smoothing"], kind)
