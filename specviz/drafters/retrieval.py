"""Retrieval: draft what followed the current context in a datastore of the target's own answers.

REST (He et al. 2024, "REST: Retrieval-Based Speculative Decoding", §3): find the longest suffix of
prompt + generated (up to `max_ngram` tokens) in a datastore with a suffix array, take the tokens that
followed each occurrence, and draft the most frequent of those continuations as a trie. No model runs:
drafting is a binary search and a count, so c ≈ 0, and the draft is as good as the datastore is like
the text being written. Here the datastore is the corpus's answers, which the target itself wrote
(`specviz.corpus`): the target's own phrasing, learned from no weights at all.

A node's value is how many occurrences its path continues; the tree grows best first (the most
frequent path is the chain), each node with its `branches` most frequent next tokens. Like prompt
lookup it has no distribution of its own: q is one-hot on each node's token, every node is picked,
and the lossless rule accepts x̃ with probability p(x̃) and otherwise removes it from p.

The suffix array here is sorted by each position's next `max_ngram` tokens only (a suffix array cut
at that depth), which is all a match of at most `max_ngram` tokens needs.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from specviz.corpus.store import CORPUS_DIR, Record, load_records, shard_paths, split_validation
from specviz.drafters.base import Draft, one_hot_draft
from specviz.drafters.suffix import SuffixDrafter
from specviz.drafters.weights import digest
from specviz.errors import SpecvizError
from specviz.models import LoadedModel
from specviz.warpers import Warper

SEPARATOR = np.iinfo(np.uint16).max   # ends each answer; no token of a vocabulary under 65 535 entries
MAX_NGRAM = 8      # the longest suffix searched for
HEADER = 8         # the prompt's last tokens kept before each answer: a run starts by matching them
OCCURRENCES = 256  # continuations counted at most (evenly spread over the match's range)


@dataclass
class Datastore:
    """Token sequences side by side, each ended by SEPARATOR, and their positions sorted by the
    `max_ngram` tokens from each on (`order`)."""

    tokens: np.ndarray   # [n + max_ngram] uint16, padded with SEPARATOR
    order: np.ndarray    # [n] int32
    max_ngram: int

    @classmethod
    def build(cls, sequences: list[np.ndarray], max_ngram: int = MAX_NGRAM) -> Datastore:
        end = np.array([SEPARATOR], np.uint16)
        tokens = np.concatenate([piece for s in sequences for piece in (s.astype(np.uint16), end)]
                                + [np.full(max_ngram, SEPARATOR, np.uint16)])
        n = len(tokens) - max_ngram
        order = np.lexsort([tokens[d:d + n] for d in reversed(range(max_ngram))]).astype(np.int32)
        return cls(tokens, order, max_ngram)

    def __post_init__(self):
        self._bytes = self.tokens.astype(">u2").tobytes()   # big-endian: bytes compare as token ids do

    def find(self, context: list[int], min_ngram: int = 1) -> tuple[int, np.ndarray]:
        """The longest suffix of `context` (max_ngram .. min_ngram tokens) found in the datastore, as its
        length n and the positions right after each occurrence (where continuations start); (0, []) if none."""
        for n in range(min(self.max_ngram, len(context)), min_ngram - 1, -1):
            pattern = np.array(context[-n:], dtype=">u2").tobytes()

            def key(p: np.int32, n: int = n) -> bytes:
                return self._bytes[2 * p: 2 * (p + n)]

            lo = bisect_left(self.order, pattern, key=key)
            hi = bisect_right(self.order, pattern, lo=lo, key=key)
            if hi > lo:
                spread = np.linspace(lo, hi - 1, min(hi - lo, OCCURRENCES)).astype(np.int64)
                return n, self.order[spread].astype(np.int64) + n
        return 0, np.zeros(0, np.int64)

    def tree(self, starts: np.ndarray, gamma: int, branches: int, nodes: int) -> tuple[list[int], list[int]]:
        """Tokens and parents of the trie of the continuations at `starts`, grown best first: the node
        continued by most occurrences is added next, with its `branches` most frequent next tokens
        queued, until `nodes` nodes (0: γ·branches) or depth γ."""
        tokens: list[int] = []
        parents: list[int] = []
        queue: list = []
        tie = itertools.count()

        def enqueue(parent: int, starts: np.ndarray, depth: int) -> None:
            if depth == gamma:
                return
            following = self.tokens[starts + depth]
            starts, following = starts[following != SEPARATOR], following[following != SEPARATOR]
            values, counts = np.unique(following, return_counts=True)
            for i in np.argsort(-counts, kind="stable")[:branches]:
                heapq.heappush(queue, (-counts[i], next(tie), parent, int(values[i]),
                                       starts[following == values[i]], depth + 1))

        enqueue(-1, starts, 0)
        while queue and len(tokens) < (nodes or gamma * branches):
            _, _, parent, token, continued, depth = heapq.heappop(queue)
            tokens.append(token)
            parents.append(parent)
            enqueue(len(tokens) - 1, continued, depth)
        return tokens, parents


def corpus_sequences(records: list[Record]) -> list[np.ndarray]:
    """Each record's answer after its prompt's last HEADER tokens (the chat template's turn opening)."""
    return [r.tokens[max(0, r.n_prompt - HEADER):] for r in records]


def corpus_digest(folder: Path = CORPUS_DIR) -> str:
    """A short hash of the corpus's shards (`Drafter.weights` of the drafter whose datastore they are)."""
    return hashlib.sha256("".join(digest(path) for path in shard_paths(folder)).encode()).hexdigest()[:12]


def corpus_datastore(folder: Path = CORPUS_DIR, target: LoadedModel | None = None) -> Datastore:
    """The datastore of the corpus's training answers (never its validation records, never the held-out
    prompts), refused for a target other than the one that wrote them (`load_records`)."""
    records = load_records(folder, target)
    if not records:
        raise SpecvizError(f"the retrieval drafter needs a corpus: no shards in {folder / 'shards'}")
    return Datastore.build(corpus_sequences(split_validation(records)[0]))


def retrieval_name(max_ngram: int = MAX_NGRAM) -> str:
    return f"retrieval (REST, n=1..{max_ngram})"


class RetrievalDrafter(SuffixDrafter):
    """Its situation is the length of the suffix found (on the corpus's validation prompts, greedy, the first
    token drafted after a 1-token match was the target's 19% of the time, after 4 tokens 40%, after the whole
    8-token window 56%)."""

    def __init__(self, datastore: Datastore, vocab: int, device: torch.device, weights: str = ""):
        self.name = retrieval_name(datastore.max_ngram)
        self.datastore, self.vocab, self.device, self.weights = datastore, vocab, device, weights
        self.begin([])

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        """The most frequent continuations as a trie; a one-hot q is never unsure, so `confidence`
        never stops it."""
        tree = self.datastore.tree(self.match(generated)[1], gamma, branches, nodes)
        return one_hot_draft(*tree, self.vocab, self.device)

    def lookup(self, generated: list[int]) -> tuple[int, np.ndarray]:
        tail = self.datastore.max_ngram
        return self.datastore.find(self.prompt[-tail:] + generated[-tail:])
