"""What each serving engine takes and gives back for one verification call.

A verification sends the context and the drafted tokens, ids = x_1..x_n, and needs the target's
next-token log-probabilities after positions first..n-1 (0-based): one row per drafted token and
one after the last, where the bonus is drawn. An engine turns that into a request (`body`) and
reads the rows out of its answer (`rows`), each row a dict {token id: log p} of the tokens it
returned: its top-k, always with the token actually at the next position, so that p(drafted) is
exact whatever k is. Pure functions of the request and the response, one small class per engine,
written from each engine's own documented fields:

- vLLM, `POST /v1/completions` with a token-id prompt and `prompt_logprobs` (vLLM's extra
  parameter; row j of `prompt_logprobs` scores token j, so the row after position i is j = i + 1).
  The row after the last token is the one generated token's `top_logprobs`, keyed "token_id:N"
  when `return_tokens_as_token_ids` is set.
- SGLang, native `POST /generate` with `input_ids`, `return_logprob`, `logprob_start_len` and
  `top_logprobs_num`; `meta_info.input_top_logprobs` and `input_token_logprobs` start at
  `logprob_start_len`, whose own entry is None, and the row after the last token is
  `output_top_logprobs[0]`.
- llama-cpp-python's server, `POST /v1/completions` with `echo` and `logprobs`: text prompts only,
  answers keyed by token text. Its echo leaves out every BOS token, and its entry for the token
  after position i holds the distribution after position i + 1, so an entry's `top_logprobs` is the
  distribution after the token it names when the prompt starts with BOS (the echo drops that one)
  and after the token before it otherwise (the shift seen in its `token_logprobs`): both come out as
  "the entry at position i holds the row after i". The echoed `tokens` are checked against the ids
  meant, so nothing is tokenised twice unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specviz.errors import SpecvizError


class RemoteError(SpecvizError):
    """The remote target failed (unreachable, refused, timed out, died, or answered what cannot be
    used): a run stops where it was, keeping what it decided."""


ALL = 0  # k = ALL asks for the whole distribution


@dataclass
class Rows:
    """What a verification call returned: rows[r] = {token id: log p} after position first + r."""

    logprobs: list[dict[int, float]]
    server_time: float | None = None   # the server's own compute time, where it reports one


class VLLM:
    name = "vLLM"

    def body(self, model: str, ids: list[int], first: int, k: int, vocab: int) -> tuple[str, dict]:
        top = -1 if k == ALL else k
        return "/v1/completions", {
            "model": model, "prompt": ids, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": top,
            "logprobs": top, "return_tokens_as_token_ids": True, "add_special_tokens": False}

    def rows(self, response: dict, ids: list[int], first: int) -> Rows:
        choice = _only_choice(response)
        prompt = choice.get("prompt_logprobs")
        if not isinstance(prompt, list) or len(prompt) != len(ids):
            raise RemoteError("the vLLM server sent no prompt_logprobs for the ids sent (is it vLLM?)")
        rows = [{int(token): float(entry["logprob"]) for token, entry in prompt[i + 1].items()}
                for i in range(first, len(ids) - 1)]
        last = choice["logprobs"]["top_logprobs"][0]
        rows.append({int(str(key).removeprefix("token_id:")): float(value) for key, value in last.items()})
        return Rows(rows)

    def tokenize(self, model: str, text: str) -> tuple[str, dict, Callable[[dict], list[int]]]:
        return "/tokenize", {"model": model, "prompt": text, "add_special_tokens": False}, lambda r: r["tokens"]

    def detokenize(self, model: str, ids: list[int]) -> tuple[str, dict, Callable[[dict], str]]:
        return "/detokenize", {"model": model, "tokens": ids}, lambda r: r["prompt"]


class SGLang:
    name = "SGLang"

    def body(self, model: str, ids: list[int], first: int, k: int, vocab: int) -> tuple[str, dict]:
        return "/generate", {
            "input_ids": ids, "return_logprob": True, "logprob_start_len": first,
            "top_logprobs_num": vocab if k == ALL else k,
            "sampling_params": {"max_new_tokens": 1, "temperature": 0.0}}

    def rows(self, response: dict, ids: list[int], first: int) -> Rows:
        if isinstance(response, list):
            response = response[0]
        meta = response.get("meta_info") or {}
        top, actual = meta.get("input_top_logprobs"), meta.get("input_token_logprobs")
        if not isinstance(top, list) or len(top) != len(ids) - first:
            raise RemoteError("the SGLang server sent no input_top_logprobs for the ids sent (is it SGLang?)")
        rows = [_tuples(top[j]) | _tuples([actual[j]]) for j in range(1, len(top))]
        rows.append(_tuples(meta["output_top_logprobs"][0]) | _tuples([meta["output_token_logprobs"][0]]))
        return Rows(rows, meta.get("e2e_latency"))

    tokenize = VLLM.tokenize   # the same /tokenize request and answer

    def detokenize(self, model: str, ids: list[int]) -> tuple[str, dict, Callable[[dict], str]]:
        return "/detokenize", {"model": model, "tokens": ids}, lambda r: r["text"]


class LlamaCppPython:
    """llama-cpp-python's OpenAI-compatible server: text in, token texts out. `decode` turns ids into the
    text sent and `encode` text into ids; `pieces[i]` is token i's text as the server echoes it:
    nothing for a special token or a byte that ends no character. `ids_of` maps a text back to its
    token: the one token that has it, else the one the tokenizer makes of it (the only one a text can
    be sent as); the empty text, shared by all of the others, is read as `eos`, the only special
    token an answer emits. A text with neither is left out of the rows."""

    name = "llama-cpp-python"

    def __init__(self, decode: Callable[[list[int]], str], encode: Callable[[str], list[int]], pieces: list[str],
                 bos: int | None, special: frozenset[int] = frozenset(), eos: int | None = None):
        self.decode = decode
        self.pieces = ["" if i in special else piece.replace("\ufffd", "") for i, piece in enumerate(pieces)]
        self.bos = bos
        owners: dict[str, list[int]] = {}
        for i, piece in enumerate(self.pieces):
            owners.setdefault(piece, []).append(i)
        self.ids_of = {}
        for piece, ids in owners.items():
            made = encode(piece) if len(ids) > 1 and piece else ids
            if len(made) == 1 and made[0] in ids:
                self.ids_of[piece] = made[0]
        if eos is not None:
            self.ids_of[""] = eos

    def body(self, model: str, ids: list[int], first: int, k: int, vocab: int) -> tuple[str, dict]:
        if k == ALL:
            raise RemoteError("llama-cpp-python's server returns the top-k of every prompt position as text: "
                               "ask for at most 100 log-probabilities (--target-logprobs), not the whole p")
        return "/v1/completions", {"model": model, "prompt": self.decode(ids), "echo": True,
                                   "logprobs": k, "max_tokens": 1, "temperature": 0.0}

    def rows(self, response: dict, ids: list[int], first: int) -> Rows:
        """Entry e of the echo stands for the token `follows[kept[e]]` and holds the distribution after
        position kept[e]: the server skips every BOS token in its echo (and drops a leading one)."""
        logprobs = _only_choice(response).get("logprobs") or {}
        tokens, top = logprobs.get("tokens"), logprobs.get("top_logprobs")
        if not isinstance(tokens, list) or not isinstance(top, list):
            raise RemoteError("the server echoed no logprobs (a llama-cpp-python server needs --logits_all true)")
        follows = ids[1:] if ids and ids[0] == self.bos else ids
        kept = [i for i, token in enumerate(follows) if token != self.bos]
        if len(follows) < len(ids):
            kept.append(len(follows))   # the generated token's entry: the distribution after the last id
        meant = [self.pieces[follows[i]] for i in kept if i < len(follows)]
        if tokens[: len(meant)] != meant:
            at = next((i for i, (a, b) in enumerate(zip(tokens, meant)) if a != b), min(len(tokens), len(meant)))
            raise RemoteError(f"the server tokenised the text differently from the ids meant (echo entry {at}: "
                               f"{_show(tokens, at)} instead of {_show(meant, at)}); a text-only engine cannot take "
                               "these ids")
        if len(top) != len(kept):   # e.g. the server put a BOS of its own before the text: every row would shift
            raise RemoteError(f"the server echoed {len(top)} positions where {len(kept)} were meant; a text-only "
                               "engine cannot take these ids")
        entry = {i: e for e, i in enumerate(kept)}
        missing = [i for i in range(first, len(ids)) if i not in entry]
        if missing:
            raise RemoteError(f"the server's echo holds no distribution after position {missing[0]} (it skips "
                               "the BOS token there)")
        return Rows([self._ids(top[entry[i]]) for i in range(first, len(ids))])

    def _ids(self, row: dict[str, float] | None) -> dict[int, float]:
        """A row keyed by token text, keyed by id; a text shared by several tokens says nothing sure and is left out."""
        return {self.ids_of[text]: float(value) for text, value in (row or {}).items() if text in self.ids_of}

    def tokenize(self, model: str, text: str) -> tuple[str, dict, Callable[[dict], list[int]]]:
        return "/extras/tokenize", {"input": text}, lambda r: r["tokens"]

    def detokenize(self, model: str, ids: list[int]) -> tuple[str, dict, Callable[[dict], str]]:
        return "/extras/detokenize", {"tokens": ids}, lambda r: r["text"]


ENGINES = {"vllm": VLLM, "sglang": SGLang, "llama-cpp-python": LlamaCppPython}


def engine_of(models: dict) -> str:
    """Which engine answered `GET /v1/models`: by its cards' `owned_by` (vLLM and SGLang sign theirs;
    llama-cpp-python's say "me")."""
    owners = {card.get("owned_by") for card in models.get("data", []) if isinstance(card, dict)}
    for name in ("vllm", "sglang"):
        if name in owners:
            return name
    return "llama-cpp-python"


def _only_choice(response: dict) -> dict:
    choices = response.get("choices") if isinstance(response, dict) else None
    if not choices:
        raise RemoteError("the server's answer has no choices")
    return choices[0]


def _tuples(entries: list | None) -> dict[int, float]:
    """SGLang's (logprob, token id, text) entries as {id: logprob}; a None logprob is left out."""
    return {int(entry[1]): float(entry[0]) for entry in entries or [] if entry is not None and entry[0] is not None}


def _show(tokens: list[str], at: int) -> str:
    return repr(tokens[at]) if at < len(tokens) else "nothing"
