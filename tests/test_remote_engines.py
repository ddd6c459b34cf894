"""The engines' requests and answers, against responses written from each engine's documented format
(vLLM's CompletionResponse with prompt_logprobs, SGLang's /generate meta_info, llama-cpp-python's
echoed OpenAI logprobs), and the checks that need no server: URLs, the host's allowlist, the settings."""

from __future__ import annotations

import math

import pytest
import torch

from specviz import DecodeSettings, SpecvizError
from specviz.drafters.base import Draft
from specviz.limits import REMOTE_TARGETS, check_remote_allowed, remote_targets
from specviz.remote import check_url
from specviz.remote.engines import ALL, VLLM, LlamaCppPython, SGLang, engine_of
from specviz.remote.target import _paths, sendable
from specviz.tree import children

IDS = [1, 20, 21, 30, 31]   # context 1 20 21, then the drafts 30 31: rows after positions 2, 3, 4
FIRST = 2


def vllm_response() -> dict:
    def entry(logprob, rank):
        return {"logprob": logprob, "rank": rank, "decoded_token": None}
    return {"object": "text_completion", "choices": [{
        "index": 0, "text": "", "token_ids": [40],
        "prompt_logprobs": [None, {"20": entry(-3.0, 4), "7": entry(-0.1, 1)}, {"21": entry(-0.5, 1)},
                            {"30": entry(-0.2, 1), "8": entry(-2.0, 2)}, {"31": entry(-4.0, 3), "9": entry(-0.3, 1)}],
        "logprobs": {"tokens": ["token_id:40"], "token_logprobs": [-0.05], "text_offset": [0],
                     "top_logprobs": [{"token_id:40": -0.05, "token_id:41": -3.2}]}}]}


def test_vllm_sends_token_ids_and_reads_the_rows_after_each_position():
    path, body = VLLM().body("m", IDS, FIRST, 5, vocab=64)
    assert path == "/v1/completions" and body["prompt"] == IDS and body["prompt_logprobs"] == 5
    assert body["max_tokens"] == 1 and body["return_tokens_as_token_ids"] and not body["add_special_tokens"]
    assert VLLM().body("m", IDS, FIRST, ALL, vocab=64)[1]["prompt_logprobs"] == -1
    rows = VLLM().rows(vllm_response(), IDS, FIRST).logprobs
    assert rows == [{30: -0.2, 8: -2.0}, {31: -4.0, 9: -0.3}, {40: -0.05, 41: -3.2}]


def test_vllm_without_prompt_logprobs_is_refused():
    response = vllm_response()
    del response["choices"][0]["prompt_logprobs"]
    with pytest.raises(SpecvizError, match="no prompt_logprobs"):
        VLLM().rows(response, IDS, FIRST)


def sglang_response() -> dict:
    return {"text": "x", "output_ids": [40], "meta_info": {
        "input_token_logprobs": [[None, 21, None], [-0.2, 30, None], [-4.0, 31, None]],
        "input_top_logprobs": [None, [[-0.2, 30, None], [-2.0, 8, None]], [[-0.3, 9, None], [-1.5, 10, None]]],
        "output_token_logprobs": [[-0.05, 40, None]],
        "output_top_logprobs": [[[-0.05, 40, None], [-3.2, 41, None]]], "e2e_latency": 0.012}}


def test_sglang_starts_its_logprobs_at_the_first_row_and_adds_each_actual_token():
    path, body = SGLang().body("m", IDS, FIRST, 3, vocab=64)
    assert path == "/generate" and body["input_ids"] == IDS and body["logprob_start_len"] == FIRST
    assert body["top_logprobs_num"] == 3 and body["sampling_params"]["max_new_tokens"] == 1
    assert SGLang().body("m", IDS, FIRST, ALL, vocab=64)[1]["top_logprobs_num"] == 64
    rows = SGLang().rows(sglang_response(), IDS, FIRST)
    assert rows.logprobs == [{30: -0.2, 8: -2.0}, {9: -0.3, 10: -1.5, 31: -4.0}, {40: -0.05, 41: -3.2}]
    assert rows.server_time == 0.012


PIECES = [f"<{i}>" for i in range(64)]
PIECES[1] = "<s>"


def llama_cpp(bos: int | None = 1) -> LlamaCppPython:
    return LlamaCppPython(lambda ids: "".join(PIECES[i] for i in ids), lambda text: [], PIECES, bos)


def echo_response(tokens: list[str], top: list[dict | None]) -> dict:
    return {"choices": [{"text": "", "index": 0, "logprobs": {
        "tokens": tokens, "text_offset": list(range(len(tokens))), "token_logprobs": [None] * len(tokens),
        "top_logprobs": top}}]}


def test_llama_cpp_python_sends_text_and_reads_rows_keyed_by_token_text():
    path, body = llama_cpp().body("m", IDS, FIRST, 2, vocab=64)
    assert path == "/v1/completions" and body["prompt"] == "<s><20><21><30><31>" and body["echo"]
    assert body["logprobs"] == 2 and body["max_tokens"] == 1
    # A leading BOS is dropped from the echo: entry i is token i + 1, and top_logprobs[i] follows position i.
    tokens = ["<20>", "<21>", "<30>", "<31>", "<40>"]
    top = [None, {"<21>": -0.5}, {"<30>": -0.2, "<8>": -2.0}, {"<9>": -0.3, "<31>": -4.0}, {"<40>": -0.05}]
    rows = llama_cpp().rows(echo_response(tokens, top), IDS, FIRST).logprobs
    assert rows == [{30: -0.2, 8: -2.0}, {9: -0.3, 31: -4.0}, {40: -0.05}]


def test_llama_cpp_python_refuses_an_echo_tokenised_differently():
    tokens = ["<20>", "<21>", "<3>", "<0>", "<31>", "<40>"]   # the server split <30> in two
    with pytest.raises(SpecvizError, match="tokenised the text differently.*entry 2"):
        llama_cpp().rows(echo_response(tokens, [None] * 6), IDS, FIRST)


def test_llama_cpp_python_skips_every_bos_in_its_echo_and_a_row_it_skipped_is_refused():
    ids = [20, 1, 21, 30]   # no leading BOS: entry for position i holds the row after i, BOS positions left out
    tokens = ["<20>", "<21>", "<30>"]
    top = [None, {"<30>": -0.1}, {"<9>": -0.2}]
    assert llama_cpp().rows(echo_response(tokens, top), ids, 2).logprobs == [{30: -0.1}, {9: -0.2}]
    with pytest.raises(SpecvizError, match="no distribution after position 1"):
        llama_cpp().rows(echo_response(tokens, top), ids, 1)
    with pytest.raises(SpecvizError, match="echoed 4 positions where 3 were meant"):   # a BOS of its own
        llama_cpp().rows(echo_response(["<20>", "<21>", "<30>", "<9>"], [None] + top), ids, 2)


def test_llama_cpp_python_cannot_send_the_whole_distribution():
    with pytest.raises(SpecvizError, match="at most"):
        llama_cpp().body("m", IDS, FIRST, ALL, vocab=64)


def test_a_token_text_shared_by_two_ids_is_the_one_the_tokenizer_makes_of_it():
    pieces = [*PIECES[:10], "<9>", "<9>", *PIECES[12:]]   # ids 9, 10 and 11 all read "<9>"
    engine = LlamaCppPython(lambda ids: "", lambda text: [11], pieces, None)
    assert engine._ids({"<9>": -1.0, "<8>": -2.0}) == {11: -1.0, 8: -2.0}
    unknown = LlamaCppPython(lambda ids: "", lambda text: [3, 4], pieces, None)   # made of two tokens: left out
    assert unknown._ids({"<9>": -1.0, "<8>": -2.0}) == {8: -2.0}


def test_the_engine_is_told_by_who_owns_the_model_cards():
    assert engine_of({"data": [{"id": "m", "owned_by": "vllm"}]}) == "vllm"
    assert engine_of({"data": [{"id": "m", "owned_by": "sglang"}]}) == "sglang"
    assert engine_of({"data": [{"id": "m", "owned_by": "me"}]}) == "llama-cpp-python"


def test_a_tree_is_sent_as_its_root_to_leaf_paths():
    parents = [-1, -1, 0, 0, 1]
    assert _paths(children(parents)) == [[0, 2], [0, 3], [1, 4]]
    assert _paths(children([-1, 0, 1])) == [[0, 1, 2]]


def test_a_draft_text_cannot_carry_is_cut_and_a_drawn_one_counted():
    """Token 7 after token 7 reads back as another token (as "\n" "\n" reads back as "\n\n"). The tree:
    root children 7 (drawn) and 8 (picked by rank), 7's children 7 (drawn) and 9; 8's child 7 (drawn)."""
    draft = Draft(torch.tensor([7, 8, 7, 9, 7]), torch.zeros(5, 16), parents=[-1, -1, 0, 0, 1],
                  sampled=[True, False, True, True, True])
    reads_back = lambda ids: all(a != 7 or b != 7 for a, b in zip(ids, ids[1:]))  # noqa: E731
    kept, unsent = sendable(draft, [1, 2], reads_back)
    assert kept.tokens.tolist() == [7, 8, 9, 7] and kept.parents == [-1, -1, 0, 1]
    assert kept.sampled == [True, False, True, True] and unsent == 1
    kept, unsent = sendable(draft, [1, 7], reads_back)   # the context ends in 7: the first 7 goes, its subtree too
    assert kept.tokens.tolist() == [8, 7] and kept.parents == [-1, 0] and unsent == 1
    picked = Draft(draft.tokens, draft.q, parents=draft.parents, sampled=[False] * 5)
    assert sendable(picked, [1, 7], reads_back)[1] == 0   # a cut that does not depend on a draw is exact


@pytest.mark.parametrize("url", ["localhost:8000", "ftp://host", "http://", "http://host:port", ""])
def test_a_malformed_url_is_refused_in_one_line(url):
    with pytest.raises(SpecvizError, match="not a server URL") as error:
        check_url(url)
    assert "\n" not in str(error.value)


def test_urls_are_normalised():
    assert check_url(" http://127.0.0.1:8000/v1/ ") == "http://127.0.0.1:8000"
    assert check_url("https://gpu.example.org/serve") == "https://gpu.example.org/serve"


def test_the_app_allows_only_the_hosts_remote_targets(monkeypatch):
    monkeypatch.delenv(REMOTE_TARGETS, raising=False)
    assert remote_targets() == []
    with pytest.raises(SpecvizError, match="allows none"):
        check_remote_allowed("http://127.0.0.1:8000")
    monkeypatch.setenv(REMOTE_TARGETS, "http://127.0.0.1:8000/v1, http://10.0.0.2:30000")
    assert remote_targets() == ["http://127.0.0.1:8000", "http://10.0.0.2:30000"]
    check_remote_allowed("http://127.0.0.1:8000")
    with pytest.raises(SpecvizError, match="not a remote target this host allows"):
        check_remote_allowed("http://169.254.169.254")


def test_remote_settings_are_checked():
    with pytest.raises(SpecvizError, match="auto size"):
        DecodeSettings(target_url="http://127.0.0.1:1", auto_size=True)
    with pytest.raises(SpecvizError, match="target_url too"):
        DecodeSettings(target_model="m")
    with pytest.raises(SpecvizError, match="target_logprobs"):
        DecodeSettings(target_url="http://127.0.0.1:1", target_logprobs=-1)
    assert math.isclose(DecodeSettings().target_timeout_s, 30.0)
