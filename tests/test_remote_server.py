"""A real engine as the target: llama-cpp-python's server on the embedded GGUF, on loopback.

Greedy speculative decoding through it equals its own greedy generation (a batched verification
pass need not round like one-token passes, so a divergence may sit only at a near-tie of the top
two log-probabilities); every fault ends in one line, with the iterations decided before it kept;
lossless sampling on the top-k only is marked approximate in the trace and on the page."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from specviz import DecodeSettings, Run, SpecvizError, generate
from specviz.bench.llama_server import MODEL, free_port, llama_server
from specviz.drafters import FEATURE_KINDS, STANDALONE_KINDS, build_drafter
from specviz.remote import RemoteTarget
from specviz.trace import approximate_note

# nats between the top two log-probabilities: llama.cpp's one-token passes and its batched pass over
# a prompt round the quantized products differently; on "def fibonacci(n):" they part at token 13,
# where the batched pass puts " n" 0.40 nats above " max" and the one-token passes pick " max".
NEAR_TIE = 0.5
# Raw prompts, no chat template: the server sorts the whole vocabulary in Python at every echoed
# position, so a request costs about 0.1 s per token of context here.
PROMPTS = ["The three primary colours are", "def fibonacci(n):"]


@pytest.fixture(scope="module")
def server():
    with llama_server(threads=1) as (url, process):
        yield url


@pytest.fixture(scope="module")
def tiny(embedded):
    torch.set_num_threads(1)
    return build_drafter("tiny", embedded)


def greedy(url: str, **kwargs) -> DecodeSettings:
    return DecodeSettings(**{"temperature": 0.0, "max_new_tokens": 16, "target_url": url, **kwargs})


def divergence(ours: list[int], theirs: list[int]) -> int | None:
    return next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)


def top2_gap(remote: RemoteTarget, ids: list[int]) -> float:
    """The gap between the server's two best log-probabilities after `ids`, in one batched pass."""
    remote.k = 2
    best = remote.logits(ids, last=1)[0].topk(2).values
    return float(best[0] - best[1])


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_through_the_server_equals_its_own_greedy_generation(server, embedded, tiny, prompt):
    trace = generate(embedded, tiny, prompt, greedy(server, gamma=4), chat=False)
    remote = RemoteTarget(server, MODEL, embedded.tokenizer, embedded.vocab_size, k=1)
    theirs = remote.complete(trace.prompt_ids, len(trace.generated_ids))
    ours = [remote.engine.pieces[t] for t in trace.generated_ids if t not in embedded.eos_ids]  # theirs ends before EOS
    assert len(theirs) == len(ours)
    at = divergence(ours, theirs)
    assert at is None or top2_gap(remote, trace.prompt_ids + trace.generated_ids[:at]) < NEAR_TIE, \
        f"diverged from the server's own generation at token {at}, with no near-tie there"
    assert trace.summary().alpha is not None and trace.iterations[0].drafted == 4


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
    with pytest.raises(SpecvizError, match="connection refused") as error:
        Run(embedded, None, "Hi", greedy(f"http://127.0.0.1:{free_port()}"))
    assert "\n" not in str(error.value)


def test_a_wrong_model_name_lists_what_is_served(server, embedded):
    with pytest.raises(SpecvizError, match=f"serves {MODEL}, not 'llama-70b'"):
        Run(embedded, None, "Hi", greedy(server, target_model="llama-70b"))


def test_a_vocabulary_mismatch_is_refused(server, small):
    with pytest.raises(SpecvizError, match="tokenises differently|another vocabulary"):
        Run(small, None, "w1 w2", greedy(server), chat=False)


def test_a_timeout_is_one_line(server, embedded):
    with pytest.raises(SpecvizError, match="did not answer within 0.001 s"):
        Run(embedded, None, "Hi", greedy(server, target_timeout_s=0.001))


def test_a_server_killed_mid_run_leaves_the_iterations_decided_before(embedded, tiny):
    with llama_server(threads=1) as (url, process):
        run = Run(embedded, tiny, PROMPTS[0], greedy(url, gamma=2, max_new_tokens=40), chat=False)
        for it in run:
            if it.index == 1:
                process.kill()
                process.wait()
    trace = run.trace
    assert len(trace.iterations) == 2 and trace.stopped_by.startswith("the remote target failing: ")
    assert "\n" not in trace.stopped_by and len(trace.generated_ids) >= 2
