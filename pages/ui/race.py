"""The race on the Generate page: the target alone against speculative decoding, side by side.

Running both at once would make them share the processor and slow each other, so they run one after
the other in the decoder process (one turn, nobody else's run in between) and the race is replayed
from their recorded commit times. The replay needs no model: a stored comparison study is enough.
"""

from __future__ import annotations

import time
from contextlib import closing

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from pages.ui import controls, models, state
from specviz import SpecvizError
from specviz.charts.race import agreement, duration, lane, race_chart, runners
from specviz.study import Study, comparison
from specviz.sweep import comparison_rounds

SPEEDS = {"1×": 1.0, "½×": 0.5, "¼×": 0.25}   # race seconds per second of replay
ROUNDS = 3                                      # each side timed this often, interleaved (the first traced)
FPS = 15                                        # lane redraws per second of replay
PACE = ("Replayed at the measured pace; the runs ran one after the other so neither slowed the other. "
        "The clocks show measured seconds at every pace.")


def section(show_rejected: bool) -> None:
    """The race's buttons and pace; then the race, measured first when asked and the session's comparison
    is missing or stale, played when asked, else shown at its finish."""
    study = state.study("comparison")
    left, middle, right = st.columns([2, 1, 2])
    run = left.button("Race", key="race",
                      help="Runs the target alone, then speculative decoding, on the same prompt and seed (unless "
                           "the last comparison already ran on these settings), then replays them side by side.")
    replay = middle.button("Replay", key="race_replay", disabled=study is None,
                           help="Replays the stored comparison without running anything.")
    paces = list(SPEEDS)
    speed = SPEEDS[right.radio("Pace", paces, paces.index(controls.kept("race_speed", paces[0])), horizontal=True,
                               key="race_speed")]
    if run:
        study = measured()
    if study is None:
        st.info("Press **Race** to run the target alone and speculative decoding one "
                "after the other, then watch them side by side.")
        return
    st.caption(PACE)
    slots = [column.empty() for column in st.columns(2)]
    result = st.empty()  # cleared while the race plays: the last race's result must not give it away
    if run or replay:
        play(study, slots, speed, show_rejected)
    else:
        draw(study, slots, duration(study), show_rejected)
    with result.container():
        verdict(study)


def measured() -> Study | None:
    """The session's comparison if it was measured here on the sidebar's current models, settings and
    prompt; else a new one: the target alone, then speculative decoding, in one turn on the decoder
    process. None after showing why it could not run."""
    try:
        ran_on = controls.ran_on()
        if state.shown() == state.LIVE and state.study("comparison") is not None and \
                state.ran_on("comparison") == ran_on:
            return state.study("comparison")
        _, settings, prompt = ran_on
        controls.needs_drafter("race")
        with models.exclusive() as turn:
            base = models.run_with_progress(turn, prompt, settings, "Running the target alone…", baseline=True)
            speculative = models.run_with_progress(turn, prompt, settings, "Running speculative decoding…")
            if base is None or speculative is None:
                return None
            study = comparison(base, speculative, timed=True)
            with st.spinner(f"Timing both {ROUNDS - 1} more times, interleaved…"):
                with closing(turn.request(comparison_rounds, prompt, settings, ROUNDS - 1)) as rounds:
                    for run, seconds in rounds:
                        study = study.timed(run, seconds)
    except SpecvizError as error:
        st.error(str(error))
        return None
    base.waited = turn.waited  # the speculative run came straight after it, in the same turn
    state.set_trace(speculative, "last run")
    state.set_study(study, ran_on)
    return study


def draw(study: Study, slots: list[DeltaGenerator], t: float, show_rejected: bool) -> None:
    """Both lanes as they stood `t` seconds into the race."""
    for slot, (runner, trace) in zip(slots, runners(study)):
        slot.html(lane(runner, trace, t, show_rejected))


def play(study: Study, slots: list[DeltaGenerator], speed: float, show_rejected: bool) -> None:
    """Redraw the lanes FPS times a second, the race clock running at `speed` times real time."""
    end = duration(study)
    started = time.monotonic()
    while (t := (time.monotonic() - started) * speed) < end:
        draw(study, slots, t, show_rejected)
        time.sleep(1 / FPS)
    draw(study, slots, end, show_rejected)


def verdict(study: Study) -> None:
    """The measured speedup, whether the texts agree, and the tokens-over-time figure."""
    speedup = study.speedup(study.variants[0].trace)
    st.metric("measured speedup (tokens/s over the target alone's)", "n/a" if speedup is None else f"{speedup:.2f}×")
    same, sentence = agreement(study)
    if same:
        st.success(sentence)
    else:
        st.info(sentence)
    st.caption(state.study_measured_on(study))
    st.plotly_chart(race_chart(study), key="race_chart")
