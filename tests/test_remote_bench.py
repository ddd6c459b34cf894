"""The remote bench's numbers from its run records: speedups paired with the target alone at the same
latency, near-ties told from failures, and the goals judged (the live run is in test_remote_server)."""

from __future__ import annotations

import pytest

from specviz import SpecvizError
from specviz.bench.remote import ALONE, NEAR_TIE, SERVER, RemoteRun, parse_trees, summarize, targets
from specviz.cli import main


def record(method: str, latency: float, prompt: str, tokens: int, seconds: float, requests: int,
           at: int | None = None, gap: float | None = None) -> RemoteRun:
    spec = method not in (ALONE, SERVER)
    return RemoteRun(method, latency, prompt, tokens, seconds, requests, latency / 1000 * requests,
                     None if method == SERVER else requests, 6 if spec else 0, 12 if spec else 0, at, gap)


def test_speedup_is_paired_with_the_target_alone_at_the_same_latency():
    runs = [record(ALONE, 0, "a", 16, 8.0, 16), record(ALONE, 0, "b", 16, 16.0, 16),
            record("tiny γ=4", 0, "a", 16, 4.0, 8), record("tiny γ=4", 0, "b", 16, 8.0, 8),
            record(ALONE, 100, "a", 16, 10.0, 16), record("tiny γ=4", 100, "a", 16, 4.0, 8)]
    rows = {(r.latency_ms, r.method): r for r in summarize(runs, [ALONE, "tiny γ=4"], [0, 100])}
    assert rows[0, "tiny γ=4"].speedup == pytest.approx(2.0)
    assert rows[100, "tiny γ=4"].speedup == pytest.approx(2.5)
    assert rows[0, ALONE].speedup is None
    assert rows[0, "tiny γ=4"].alpha == pytest.approx(0.5)
    assert rows[0, "tiny γ=4"].accepted_length == pytest.approx(2.0)
    assert rows[0, "tiny γ=4"].requests_per_token == pytest.approx(0.5)
    assert rows[100, ALONE].network_share == pytest.approx(0.16)


def test_a_divergence_at_a_near_tie_counts_and_any_other_leaves_the_numbers():
    runs = [record(ALONE, 0, "a", 16, 8.0, 16), record(ALONE, 0, "b", 16, 8.0, 16),
            record("ngram γ=4", 0, "a", 16, 4.0, 8, at=5, gap=NEAR_TIE / 2),
            record("ngram γ=4", 0, "b", 16, 1.0, 8, at=3, gap=2 * NEAR_TIE)]
    (row,) = [r for r in summarize(runs, [ALONE, "ngram γ=4"], [0]) if r.method == "ngram γ=4"]
    assert (row.runs, row.near_ties, row.failures) == (1, 1, 1)
    assert row.speedup == pytest.approx(2.0)   # prompt "a" only: the failed run is left out


def test_a_run_that_stopped_is_counted_and_left_out():
    stopped = record("tiny γ=4", 0, "b", 3, 1.0, 2)
    stopped.stopped = "the remote target failing: the server tokenised the text differently"
    runs = [record(ALONE, 0, "a", 16, 8.0, 16), record("tiny γ=4", 0, "a", 16, 4.0, 8), stopped]
    (row,) = [r for r in summarize(runs, [ALONE, "tiny γ=4"], [0]) if r.method == "tiny γ=4"]
    assert (row.runs, row.stopped, row.failures, row.speedup) == (1, 1, 0, pytest.approx(2.0))


def test_the_goals_read_the_tiny_rows_at_100_ms():
    runs = [record(ALONE, 100, "a", 16, 13.0, 16), record("tiny γ=4", 100, "a", 16, 9.0, 10),
            record("tiny tree 4x2x8", 100, "a", 16, 11.0, 20)]
    chain, tree = targets(summarize(runs, [ALONE, "tiny γ=4", "tiny tree 4x2x8"], [100]))
    assert chain == "tiny γ=4 at 100 ms: 1.44× the target alone (goal ≥ 1.3) — **met**"
    assert tree.startswith("tiny tree 4x2x8 at 100 ms: 1.18×") and tree.endswith("**MISSED**")


def test_a_tree_option_that_does_not_parse_is_one_line():
    assert parse_trees("tiny:4x2x8, ngram:3x2x6") == [("tiny", (4, 2, 8)), ("ngram", (3, 2, 6))]
    with pytest.raises(SpecvizError, match="not KIND:DEPTHxTOPKxNODES"):
        parse_trees("4x2x8")


@pytest.mark.parametrize("latencies", ["0,x", "", "-5"])
def test_bad_latencies_are_one_line(latencies, capsys):
    assert main(["bench-remote", "--latencies", latencies]) != 0
    assert "--latencies takes" in capsys.readouterr().err
