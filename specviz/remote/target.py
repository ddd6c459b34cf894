"""A target served elsewhere, by a real engine over HTTP: the Petals setting, where every target pass
is a network round trip, and the deployment question, what α̂ and what speedup a drafter would get
against the model actually served.

`RemoteTarget` stands where `kv_cache.CachedLM` stands for a local target: `logits(seq, last)`
returns the next-token logits at the last `last` positions of `seq`, here from one request per
verification (the server keeps its own KV cache). A token tree is sent as one request per leaf,
each the context plus the path to that leaf, all at once: no engine takes a tree attention mask.

What the wire carries decides what is exact (engines return log-probabilities, k per position):
greedy verification needs the top-1 and is exact; Spec-Verification needs the top-β and is exact
with k ≥ β; lossless sampling needs the whole p. With the whole p asked for (k = ALL) it is
exact; otherwise p is known on the top-k only, the rest is renormalised away, and the mass left
outside (`unknown`) goes into the trace, so the run says it is approximate. An engine that takes only
text cannot be sent a draft its tokenizer would split otherwise (`sendable`); where such a draft was
drawn from q, leaving it out depends on the draw, and that count (`unsent`) marks the run approximate too.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import torch
from transformers import PreTrainedTokenizerBase

from specviz.drafters.base import Draft, prune
from specviz.errors import SpecvizError
from specviz.remote.engines import ALL, ENGINES, LlamaCppPython, RemoteError, Rows, engine_of
from specviz.tree import children, is_chain

PROBE = "Speculative decoding drafts tokens, 42 of them; the target verifies: naïve café ✓."
SAMPLE_IDS = 16   # token texts compared with the server's, spread over the vocabulary


class RemoteTarget:
    def __init__(self, url: str, model: str, tokenizer: PreTrainedTokenizerBase, vocab: int, k: int,
                 timeout_s: float = 30.0, latency_ms: float = 0.0, device: torch.device | str = "cpu"):
        """Connect to the server at `url` (its `/v1/models` says which engine it is and what it serves),
        and check that it tokenises like `tokenizer`. `k`: log-probabilities asked per position (ALL:
        the whole distribution); `latency_ms`: added to every request, as a slower network would;
        `device`: where the run's drafts and generator are, which the logits join."""
        self.url = check_url(url)
        self.device = torch.device(device)
        self.tokenizer = tokenizer
        self.timeout = timeout_s
        self.latency = latency_ms / 1000.0
        self.vocab, self.k = vocab, k
        cards = self._call("GET", "/v1/models")
        served = [card.get("id") for card in cards.get("data", []) if isinstance(card, dict)]
        if not served:
            raise RemoteError(f"the server at {self.url} lists no models at /v1/models")
        if model and model not in served:
            raise RemoteError(f"the server at {self.url} serves {', '.join(map(str, served))}, not {model!r}")
        self.model = model or served[0]
        kind = engine_of(cards)
        encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
        self.engine = (LlamaCppPython(_decoder(tokenizer), encode, pieces(tokenizer, vocab), tokenizer.bos_token_id,
                                      frozenset(tokenizer.all_special_ids), tokenizer.eos_token_id)
                       if kind == "llama-cpp-python" else ENGINES[kind]())
        self._check_vocabulary(tokenizer)
        self.calls = 0           # verification passes (a tree's requests count once: they go together)
        self.requests = 0
        self.network = 0.0       # seconds of those passes known to be spent on the network
        self.server_time: float | None = None   # the last pass's compute on the server, where reported
        self.unknown: float | None = None       # the last pass's largest mass of p outside what came back
        self.unsent = 0          # the last draft's drawn nodes left out by `sendable` (with their subtrees)

    def start(self, prompt_ids: list[int]) -> list[int]:
        self.calls = self.requests = 0
        return list(prompt_ids)

    def logits(self, seq: list[int], last: int = 1, hidden: int = 0,
               parents: list[int] | None = None) -> torch.Tensor:
        """Log-probabilities as logits [last, V] (-inf where the server returned nothing) after the last
        `last` positions of seq; with a tree `parents`, row 0 after the context and row i + 1 after node i."""
        if hidden:
            raise SpecvizError("a remote target does not send its hidden states")
        if parents is None or is_chain(parents):
            asks = [(list(seq), len(seq) - last, list(range(last)))]
        else:
            lead, tree = len(seq) - len(parents), children(parents)
            asks = [(seq[:lead] + [seq[lead + i] for i in path], lead - 1, [0] + [i + 1 for i in path])
                    for path in _paths(tree)]
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(asks)) as pool:
            answers = list(pool.map(lambda ask: self._verify(*ask[:2]), asks))
        round_trip = time.perf_counter() - started
        out = torch.full((last, self.vocab), -math.inf)
        for (_, _, rows), answer in zip(asks, answers):
            for row, logprobs in zip(rows, answer.logprobs):
                ids = torch.tensor([i for i in logprobs if i < self.vocab], dtype=torch.long)
                out[row, ids] = torch.tensor([logprobs[i] for i in ids.tolist()])
        self.calls += 1
        self.requests += len(asks)
        times = [a.server_time for a in answers]
        self.server_time = None if None in times else max(times)
        self.network += self.latency + (round_trip - self.latency - self.server_time
                                        if self.server_time is not None else 0.0)
        self.unknown = None if self.k == ALL else max(
            max(0.0, 1.0 - sum(math.exp(v) for v in row.values())) for answer in answers for row in answer.logprobs)
        return out.to(self.device)

    def sendable(self, seq: list[int], draft: Draft) -> Draft:
        """The draft this engine can be sent (`sendable`); the drawn nodes it cut are kept in `unsent`."""
        if not isinstance(self.engine, LlamaCppPython):
            self.unsent = 0
            return draft
        draft, self.unsent = sendable(draft, seq, lambda ids: self.tokenizer(
            self.engine.decode(ids), add_special_tokens=False)["input_ids"] == ids)
        return draft

    def complete(self, prompt_ids: list[int], max_new_tokens: int) -> list[str]:
        """The server's own greedy continuation of the prompt (its generation, one request), as token
        texts: the reference a greedy speculative run through it must reproduce token for token."""
        engine = self.engine
        if self.latency:
            time.sleep(self.latency)
        if isinstance(engine, LlamaCppPython):
            answer = self._call("POST", "/v1/completions", {
                "model": self.model, "prompt": engine.decode(prompt_ids), "max_tokens": max_new_tokens,
                "temperature": 0.0, "repeat_penalty": 1.0, "logprobs": 1})   # its default penalty is 1.1
            return list(answer["choices"][0]["logprobs"]["tokens"])
        if engine.name == "vLLM":
            answer = self._call("POST", "/v1/completions", {
                "model": self.model, "prompt": prompt_ids, "max_tokens": max_new_tokens, "temperature": 0.0,
                "return_token_ids": True, "add_special_tokens": False})
            ids = answer["choices"][0]["token_ids"]
        else:
            answer = self._call("POST", "/generate", {
                "input_ids": prompt_ids, "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0.0}})
            ids = (answer[0] if isinstance(answer, list) else answer)["output_ids"]
        return [self.tokenizer.decode([i]) for i in ids]

    def top2_gap(self, ids: list[int]) -> float:
        """Nats between the server's two best log-probabilities after `ids`, from one batched pass: where
        its own one-token generation and a verification pass part, this says whether it was a near-tie."""
        asked, self.k = self.k, 2
        try:
            best = self.logits(ids, last=1)[0].topk(2).values
        finally:
            self.k = asked
        return float(best[0] - best[1])

    def _verify(self, ids: list[int], first: int) -> Rows:
        path, body = self.engine.body(self.model, ids, first, self.k, self.vocab)
        if self.latency:
            time.sleep(self.latency)
        return self.engine.rows(self._call("POST", path, body), ids, first)

    def _check_vocabulary(self, tokenizer: PreTrainedTokenizerBase) -> None:
        """Refuse a server that tokenises differently (llama.cpp's speculative example checks the
        same): a probe text's ids, and the texts of ids spread over the vocabulary up to its last."""
        path, body, read = self.engine.tokenize(self.model, PROBE)
        theirs, ours = self._call("POST", path, body), tokenizer(PROBE, add_special_tokens=False)["input_ids"]
        if read(theirs) != ours:
            raise RemoteError(f"the server at {self.url} tokenises differently from the local tokenizer "
                              f"({len(read(theirs))} ids for the probe text, {len(ours)} here): a different vocabulary")
        step = max(1, self.vocab // SAMPLE_IDS)
        special = set(tokenizer.all_special_ids)   # some servers detokenise these to nothing
        for i in sorted({*range(0, self.vocab, step), self.vocab - 1} - special):
            path, body, read = self.engine.detokenize(self.model, [i])
            text, mine = read(self._call("POST", path, body)), tokenizer.decode([i])
            if text.replace("\ufffd", "") != mine.replace("\ufffd", ""):
                raise RemoteError(f"the server at {self.url} has another vocabulary: token {i} is {text!r} "
                                  f"there and {mine!r} here")

    def _call(self, method: str, path: str, body: dict | None = None):
        """One request, its JSON answer; every failure becomes one line saying what went wrong."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as error:
            raise RemoteError(f"the target server refused {method} {path} (HTTP {error.code}): "
                              f"{_detail(error.read())}") from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, TimeoutError):
                raise RemoteError(f"the target server at {self.url} did not answer within {self.timeout:g} s") from None
            raise RemoteError(f"cannot reach the target server at {self.url}: {_reason(reason)}") from None
        except TimeoutError:
            raise RemoteError(f"the target server at {self.url} did not answer within {self.timeout:g} s") from None
        except (ConnectionError, http.client.HTTPException) as error:
            raise RemoteError(f"the connection to the target server at {self.url} broke: "
                              f"{_reason(error)}") from None
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise RemoteError(f"the target server's answer to {method} {path} is not JSON") from None


def check_url(url: str) -> str:
    """An http(s) URL with a host, without a trailing slash or `/v1`; anything else is refused."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecvizError(f"not a server URL: {url!r} (expected http://host:port)")
    try:
        _ = parts.port   # parsing it refuses a port that is not a number in range
    except ValueError:
        raise SpecvizError(f"not a server URL: {url!r} (bad port)") from None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/").removesuffix("/v1"), "", ""))


def sendable(draft: Draft, seq: list[int], reads_back: Callable[[list[int]], bool]) -> tuple[Draft, int]:
    """The draft an engine that takes only text can be sent, and how many nodes drawn from q it cut.

    Kept: the nodes whose ids, context and path included, read back as the same ids once their text is
    tokenised again (`reads_back`; a drafter may split text where the tokenizer would not, "\n" "\n" for
    "\n\n"); a node that does not, and its subtree, go. A node picked by rank is cut or kept whatever the
    target would say, so the kept ones are still tested exactly. A node drawn from q is not: cutting it
    where the draw fell on an unsendable token moves the output off p (with p = q = (½, ½) over {a, b}
    and b unsendable, b comes out ¼ of the time), so such cuts are counted and the run says it is approximate.
    """
    tokens, ok, keep, unsent = draft.tokens.tolist(), {-1: True}, [], 0
    for node, parent in enumerate(draft.parents):
        path, at = [], node
        while at != -1:
            path.append(tokens[at])
            at = draft.parents[at]
        ok[node] = ok[parent] and reads_back(seq + path[::-1])
        if ok[node]:
            keep.append(node)
        elif ok[parent] and draft.sampled[node]:
            unsent += 1
    if len(keep) == len(tokens):
        return draft, 0
    return Draft(draft.tokens[keep], draft.q[keep], draft.calls, draft.unsure, prune(draft.parents, keep),
                 [draft.sampled[i] for i in keep]), unsent


@lru_cache(maxsize=4)
def pieces(tokenizer: PreTrainedTokenizerBase, vocab: int) -> list[str]:
    """Each token's text, for engines that answer in text."""
    return [tokenizer.decode([i]) for i in range(vocab)]


def _decoder(tokenizer: PreTrainedTokenizerBase):
    return lambda ids: tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _paths(tree: dict[int, list[int]]) -> list[list[int]]:
    """Every root-to-leaf path of a tree given as {node: children} (-1 the root)."""
    paths, stack = [], [[c] for c in reversed(tree.get(-1, []))]
    while stack:
        path = stack.pop()
        kids = tree.get(path[-1], [])
        if not kids:
            paths.append(path)
        stack.extend(path + [c] for c in reversed(kids))
    return paths


def _detail(raw: bytes) -> str:
    """The first line of an error answer's message (FastAPI's `detail`, OpenAI's `error.message`)."""
    try:
        data = json.loads(raw)
        message = data.get("detail") or (data.get("error") or {}).get("message") or data
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        message = raw.decode("utf-8", "replace")
    text = json.dumps(message) if not isinstance(message, str) else message
    return (text.strip().splitlines() or ["no detail"])[0][:300]


def _reason(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    return str(getattr(reason, "strerror", None) or reason)
