"""The race view: commit times in the trace (format version 3), the pure race pictures, and the Generate
page replaying a stored comparison and running a live race."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apps import MODEL_TIMEOUT, PAGE_TIMEOUT, switch_to, use_tiny_pair
from streamlit.testing.v1 import AppTest
from synthetic import synthetic_baseline, synthetic_trace

from specviz import trace_from_dict
from specviz.charts.race import SPECULATIVE, TARGET_ALONE, agreement, committed, lane, race_chart
from specviz.study import Study, Variant
from specviz.trace import VERSION, derived_elapsed

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def comparison(tokens: int = 24, step: float = 0.1) -> Study:
    """A speculative run of about `tokens` tokens, and the target alone writing the same ones at `step`
    seconds a token (slower)."""
    speculative = synthetic_trace(tokens=tokens)
    return Study("comparison", synthetic_baseline(speculative.generated_ids, step), [Variant({}, speculative)])


@pytest.mark.parametrize("trace", [synthetic_trace(tokens=40), synthetic_baseline(list(range(30)))],
                         ids=["derived from phases", "recorded"])
def test_committed_counts_up_to_every_token(trace):
    times = [trace.wall_time * i / 200 for i in range(201)]
    counts = [committed(trace, t) for t in times]
    assert counts[0] == 0 and counts[-1] == len(trace.generated_ids)
    assert counts == sorted(counts)
    assert committed(trace, trace.commit_times()[0]) == len(trace.iterations[0].emitted_ids)


def test_lane_shows_clock_counter_rate_and_escaped_text():
    trace = synthetic_baseline([1, 2, 3, 4], step=0.5)
    trace.iterations[0].final.token = "<b>&"
    halfway = lane(TARGET_ALONE, trace, 1.2)
    assert "1.2 s" in halfway and "2 tokens" in halfway and "1.7 tokens/s" in halfway and "● running" in halfway
    assert "&lt;b&gt;&amp;" in halfway and "<b>&" not in halfway and " w3" not in halfway
    end = lane(TARGET_ALONE, trace, 5.0)
    assert "2.0 s" in end and "4 tokens" in end and "2.0 tokens/s" in end and "✓ finished" in end
    assert "0.0 s" in lane(TARGET_ALONE, trace, 0.0) and "– tokens/s" in lane(TARGET_ALONE, trace, 0.0)
    assert ">1 token<" in lane(TARGET_ALONE, trace, 0.5)
    assert "←" not in halfway and "none" not in halfway   # the target alone names no drafter


def test_race_chart_steps_both_runs_and_states_the_speedup():
    study = comparison()
    fig = race_chart(study).to_dict()
    base, speculative = fig["data"]
    assert base["line"]["width"] < speculative["line"]["width"] and speculative["line"]["color"] == SPECULATIVE.color
    assert base["line"]["shape"] == speculative["line"]["shape"] == "hv"
    tokens = len(study.baseline.generated_ids)
    assert base["x"][-1] == study.baseline.wall_time and base["y"][-1] == tokens and base["y"][0] == 0
    assert speculative["x"][-1] == study.variants[0].trace.wall_time
    (note,) = fig["layout"]["annotations"]
    assert f"{study.speedup(study.variants[0].trace):.2f}×" in note["text"]


def test_agreement_says_identical_or_why_not():
    study = comparison()
    assert agreement(study) == (True, "Identical output ✓: speculative decoding wrote exactly the target's tokens, "
                                      "only sooner.")
    study.baseline.generated_ids[3] = 99
    same, sentence = agreement(study)
    assert not same and sentence.startswith("The outputs differ from token 4 on: both runs sampled with seed 0")


def test_round_trip_keeps_elapsed():
    trace = synthetic_baseline([5, 6, 7])
    data = json.loads(json.dumps(trace.to_dict()))
    assert data["version"] == VERSION
    assert [it["elapsed"] for it in data["iterations"]] == [0.05, 0.1, 0.15000000000000002]
    assert trace_from_dict(data) == trace


def test_version_2_file_loads_with_elapsed_from_the_phase_times():
    trace = synthetic_trace(tokens=30)
    data = trace.to_dict()
    data["version"] = 2
    for it in data["iterations"]:
        del it["elapsed"]
    data["wall_time"] = 2 * trace.wall_time  # the prefill and recording: phases cover half the run
    loaded = trace_from_dict(data)
    elapsed = [it.elapsed for it in loaded.iterations]
    phases = [it.draft_time + it.verify_time + it.sample_time for it in trace.iterations]
    assert elapsed == derived_elapsed(trace.iterations, 2 * trace.wall_time) == loaded.commit_times()
    assert elapsed[0] == pytest.approx(2 * phases[0]) and elapsed[-1] == pytest.approx(2 * trace.wall_time)
    assert elapsed == sorted(elapsed)


def race_lanes(at: AppTest) -> list[str]:
    return [h.proto.body for h in at.get("html") if "specviz-race-lane" in h.proto.body]


def test_replay_of_a_stored_study_needs_no_model():
    at = AppTest.from_file(APP, default_timeout=PAGE_TIMEOUT)
    at.run()
    at.toggle(key="race_view").set_value(True).run()
    assert at.button(key="race_replay").disabled   # nothing stored to replay, and no pace to speak of yet
    assert at.info[0].value.startswith("Press **Race** to run") and not race_lanes(at)
    assert not any("replayed at the measured pace" in c.value.lower() for c in at.caption)
    study = comparison(tokens=12)  # a race of about a second
    at.session_state["studies"] = {"comparison": study}  # as a loaded study would be
    at.session_state["shown"] = "live"  # the app opened on an example
    at.run()
    base, speculative = race_lanes(at)  # shown at the finish
    assert "✓ finished" in base and "✓ finished" in speculative
    at.button(key="race_replay").click().run()
    assert not at.exception and not at.error
    base, speculative = race_lanes(at)
    tokens = f"{len(study.baseline.generated_ids)} tokens"
    assert "Target alone" in base and tokens in base and f"{study.baseline.wall_time:.1f} s" in base
    assert "Speculative decoding" in speculative and tokens in speculative and "✓ finished" in speculative
    assert at.success[0].value.startswith("Identical output ✓")
    speedup = study.speedup(study.variants[0].trace)
    assert {m.label: m.value for m in at.metric}["measured speedup (tokens/s over the target alone's)"] == \
        f"{speedup:.2f}×"
    assert any("replayed at the measured pace" in c.value.lower() for c in at.caption)
    assert len(at.get("plotly_chart")) == 1


def test_the_shipped_race_replays_with_no_model():
    at = AppTest.from_file(APP, default_timeout=PAGE_TIMEOUT)
    at.run()
    switch_to(at, "greedy-race")
    at.toggle(key="race_view").set_value(True).run()
    base, speculative = race_lanes(at)  # shown at the finish, nothing run
    assert "✓ finished" in base and "✓ finished" in speculative
    assert at.success[0].value.startswith("Identical output ✓")
    at.radio(key="race_speed").set_value("¼×").run()
    at.switch_page("pages/theory.py").run()
    at.switch_page("pages/generate.py").run()
    assert at.radio(key="race_speed").value == "¼×"   # the pace stays across pages, as the sidebar's settings do


def test_live_race_on_a_tiny_pair_writes_identical_greedy_texts(tiny_llama_dirs):
    at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT)
    at.run()
    use_tiny_pair(at, tiny_llama_dirs, "w1 w2 w3 w4", 8)
    at.slider(key="temperature").set_value(0.0)
    at.toggle(key="race_view").set_value(True).run()
    at.button(key="race").click().run()
    assert not at.exception and not at.error
    study = at.session_state["studies"]["comparison"]
    base, speculative = study.baseline, study.variants[0].trace
    assert base.drafter == "none (baseline)" and speculative is at.session_state["trace"]
    tokens = len(base.generated_ids)
    assert base.generated_ids == speculative.generated_ids and 1 <= tokens <= 8
    assert at.success[0].value.startswith("Identical output ✓")
    assert all(f"{tokens} tokens" in body and "✓ finished" in body for body in race_lanes(at))
    at.button(key="race").click().run()  # nothing changed: the race replays the same measurement
    assert at.session_state["studies"]["comparison"] is study
