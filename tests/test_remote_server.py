"""A real engine as the target: llama-cpp-python's server on the embedded GGUF, on loopback.

Greedy speculative decoding through it equals its own greedy generation (a batched verification
pass need not round like one-token passes, so a divergence may sit only at a near-tie of the top
two log-probabilities), and its verdicts equal a local run's on every token both drafted; every
fault ends in one line, with the iterations decided before it kept; lossless sampling on the top-k
only is marked approximate in the trace and on the page."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
import torch
from apps import APP, MODEL_TIMEOUT
from streamlit.testing.v1 import AppTest

from specviz import DecodeSettings, Run, SpecvizError, generate
from specviz.bench.llama_server import MODEL, llama_server
from specviz.cli import main
from specviz.divergence import NEAR_TIE, parting
from specviz.drafters import FEATURE_KINDS, STANDALONE_KINDS, build_drafter, drafter_name
from specviz.remote import RemoteTarget
from specviz.trace import approximate_note

# Raw prompts, no chat template: the server sorts the whole vocabulary in Python at every echoed
# position, so a request costs about 0.1 s per token of context here.
PROMPTS = ["The three primary colours are", "def fibonacci(n):"]
SERVER_READY_S = 600   # loading the GGUF file on a cold machine beside a parallel suite: minutes, not seconds


@pytest.fixture(scope="module")
def server():
    with llama_server(threads=1, ready_s=SERVER_READY_S) as (url, process):
        yield url


@pytest.fixture(scope="module")
def tiny(embedded):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # the server has the other core
    yield build_drafter("tiny", embedded)
    torch.set_num_threads(threads)


def greedy(url: str, **kwargs) -> DecodeSettings:
    return DecodeSettings(**{"temperature": 0.0, "max_new_tokens": 16, "target_url": url, **kwargs})


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_through_the_server_equals_its_own_greedy_generation(server, embedded, tiny, prompt):
    trace = generate(embedded, tiny, prompt, greedy(server, gamma=4), chat=False)
    remote = RemoteTarget(server, MODEL, embedded.tokenizer, embedded.vocab_size, k=1)
    theirs = remote.complete(trace.prompt_ids, len(trace.generated_ids))
    ours = [remote.engine.pieces[t] for t in trace.generated_ids if t not in embedded.eos_ids]  # theirs ends before EOS
    assert len(theirs) == len(ours)
    at = parting(ours, theirs)
    assert at is None or remote.top2_gap(trace.prompt_ids + trace.generated_ids[:at]) < NEAR_TIE, \
        f"diverged from the server's own generation at token {at}, with no near-tie there"
    assert trace.summary().alpha is not None and trace.iterations[0].drafted == 4
    local = generate(embedded, tiny, prompt, replace(greedy(server, gamma=4), target_url=""), chat=False)
    at = parting(local.generated_ids, trace.generated_ids)
    until = len(trace.generated_ids) if at is None else at
    here, there = verdicts(local, until), verdicts(trace, until)
    assert here.keys() & there.keys() and all(here[k] == there[k] for k in here.keys() & there.keys())
    assert at is None or top2_gap(embedded, local.prompt_ids + local.generated_ids[:at]) < NEAR_TIE, \
        f"parted from the local run at token {at}, with no near-tie there"


def top2_gap(target, ids: list[int]) -> float:
    """Logits between the target's best and second-best next token after `ids`, one fresh pass."""
    with torch.no_grad():
        top = target.model(torch.tensor([ids], device=target.device)).logits[0, -1].float().topk(2).values
    return float(top[0] - top[1])


def verdicts(trace, until: int) -> dict[tuple[int, int], str]:
    """Each drafted token before output index `until`, keyed (index, id), with its verdict."""
    out, start = {}, 0
    for it in trace.iterations:
        out |= {(start + d.position - 1, d.token_id): d.verdict for d in it.drafts if start + d.position - 1 < until}
        start += len(it.emitted_ids)
    return out


def test_a_token_tree_is_verified_through_the_server(server, embedded, tiny):
    chain = generate(embedded, tiny, PROMPTS[0], greedy(server, gamma=3, max_new_tokens=6), chat=False)
    tree = generate(embedded, tiny, PROMPTS[0], greedy(server, gamma=3, branches=2, nodes=6, max_new_tokens=6),
                    chat=False)
    assert tree.generated_ids == chain.generated_ids   # greedy: the same text whatever was drafted
    assert max(it.drafted for it in tree.iterations) > 3


def test_the_baseline_is_one_request_per_token(server, embedded):
    run = Run(embedded, None, PROMPTS[0], greedy(server, max_new_tokens=6), chat=False)
    trace = [it for it in run]
    assert len(trace) == 6 and run.lm.calls == 6 and run.lm.requests == 6
    assert run.lm.device == embedded.device   # its logits join the run's drafts and generator, a GPU's on a GPU
    remote = RemoteTarget(server, MODEL, embedded.tokenizer, embedded.vocab_size, k=1, device="meta")
    assert remote.logits(embedded.encode_prompt(PROMPTS[0], chat=False), last=2).device.type == "meta"


def test_sampling_on_the_top_k_is_marked_approximate(server, embedded, tiny):
    settings = DecodeSettings(temperature=1.0, max_new_tokens=6, target_url=server, target_logprobs=5)
    trace = generate(embedded, tiny, PROMPTS[0], settings, chat=False)
    assert trace.approximate is not None and 0 < trace.approximate < 1
    assert "top-5" in approximate_note(trace)
    exact_rule = generate(embedded, tiny, PROMPTS[0], replace(settings, verify="spec", beta=3), chat=False)
    assert exact_rule.approximate is None   # Spec-Verification needs only the top-β


def test_the_kinds_the_app_keeps_from_a_remote_target_are_those_reading_hidden_states(embedded):
    for kind in STANDALONE_KINDS:
        assert build_drafter(kind, embedded).reads_features == (kind in FEATURE_KINDS), kind


def test_drafters_that_read_hidden_states_are_refused(server, embedded):
    with pytest.raises(SpecvizError, match="hidden states"):
        Run(embedded, build_drafter("eagle", embedded), "Hi", greedy(server))


def test_a_server_that_is_down_is_one_line(embedded):
    with socket.socket() as port, pytest.raises(SpecvizError, match="connection refused") as error:
        port.bind(("127.0.0.1", 0))   # held and never listening: refused, and no other process can take it meanwhile
        Run(embedded, None, "Hi", greedy(f"http://127.0.0.1:{port.getsockname()[1]}"))
    assert "\n" not in str(error.value)


def test_a_wrong_model_name_lists_what_is_served(server, embedded):
    with pytest.raises(SpecvizError, match=f"serves {MODEL}, not 'llama-70b'"):
        Run(embedded, None, "Hi", greedy(server, target_model="llama-70b"))


def test_a_vocabulary_mismatch_is_refused(server, small):
    with pytest.raises(SpecvizError, match="tokenises differently|another vocabulary"):
        Run(small, None, "w1 w2", greedy(server), chat=False)


@contextmanager
def silent_server() -> Iterator[str]:
    """The URL of a server that never answers: the kernel completes each connection in the listening socket's
    backlog, and nothing ever reads the request or replies, so every request waits out its timeout."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_timeout_is_one_line(embedded):
    with silent_server() as url, pytest.raises(SpecvizError, match="did not answer within 1 s") as error:
        Run(embedded, None, "Hi", greedy(url, target_timeout_s=1))
    assert "\n" not in str(error.value)


def test_a_server_killed_mid_run_leaves_the_iterations_decided_before(embedded, tiny):
    with llama_server(threads=1, ready_s=SERVER_READY_S) as (url, process):
        run = Run(embedded, tiny, PROMPTS[0], greedy(url, gamma=2, max_new_tokens=40), chat=False)
        for it in run:
            if it.index == 1:
                process.kill()
                process.wait()
    trace = run.trace
    assert len(trace.iterations) == 2 and trace.stopped_by.startswith("the remote target failing: ")
    assert "\n" not in trace.stopped_by and len(trace.generated_ids) >= 2


def test_the_remote_bench_measures_every_row_against_the_server(server, tmp_path):
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"id": "colours", "category": "chat", "text": PROMPTS[0]}]}))
    threads = torch.get_num_threads()
    try:
        assert main(["bench-remote", "--target-url", server, "--drafters", "ngram", "--gamma", "2", "--trees",
                     "tiny:2x2x4", "--latencies", "0,20", "--max-new-tokens", "4", "--prompts", str(prompts),
                     "--categories", "chat", "--no-chat", "--out", str(tmp_path / "r.json"),
                     "--markdown", str(tmp_path / "r.md")]) == 0
    finally:
        torch.set_num_threads(threads)
    result = json.loads((tmp_path / "r.json").read_text())
    rows = {(r["latency_ms"], r["method"]): r for r in result["rows"]}
    methods = ["target alone", "ngram γ=2", "tiny tree 2x2x4", "server generate"]
    assert set(rows) == {(x, m) for x in (0.0, 20.0) for m in methods}
    assert all(r["failures"] == 0 and r["runs"] == 1 for r in rows.values())
    assert rows[0.0, "target alone"]["requests_per_token"] == 1.0 and rows[0.0, "target alone"]["network_share"] == 0
    assert rows[20.0, "target alone"]["network_share"] > 0 and rows[20.0, "ngram γ=2"]["speedup"] > 0
    assert "| tiny tree 2x2x4 |" in (tmp_path / "r.md").read_text()


def test_the_sidebar_offers_the_hosts_server_and_generate_verifies_there(server, monkeypatch):
    monkeypatch.setenv("SPECVIZ_REMOTE_TARGETS", server)
    at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT)   # the decoder process loads the pair
    at.run()
    at.selectbox(key="drafter").set_value("eagle").run()
    at.selectbox(key="remote_target").set_value(server).run()
    assert at.session_state["drafter"] == "tiny" and not at.session_state["auto_size"]  # no hidden states there
    assert "Latency added to each request (ms)" in [s.label for s in at.slider]
    at.text_area(key="prompt").set_value("Hi")
    at.session_state["max_new_tokens"] = 3
    at.session_state["temperature"] = 0.0
    at.button(key="generate").click().run()
    assert not at.exception and not at.error
    trace = at.session_state["trace"]
    assert trace.settings.target_url == server and trace.drafter == drafter_name("tiny")
    assert len(trace.generated_ids) == 3 and sum(it.drafted for it in trace.iterations) > 0


def test_a_context_the_target_split_as_its_tokenizer_would_not_stops_the_run(server, embedded):
    """The model writes "\n" then "\n" after this sentence; as text that reads back as one "\n\n", so a
    text-only engine cannot be sent the context any more: the run stops in one line, keeping both."""
    trace = generate(embedded, None, "Explain to a ten-year-old why the sea has tides.",
                     greedy(server, max_new_tokens=8), chat=False)
    assert trace.stopped_by.startswith("the remote target failing: the server tokenised the text differently")
    assert [embedded.tokenizer.decode([t]) for t in trace.generated_ids] == ["\n", "\n"]
