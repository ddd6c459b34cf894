"""Generate: run the decoder and watch each iteration land; race it against the target alone."""

import threading
import time
from contextlib import closing

import streamlit as st

from pages.ui import controls, models, race, state
from pages.ui.linked import linked_view
from specviz import SpecvizError, Trace, charts
from specviz.charts.race import agreement
from specviz.decoder_process import follow_trace, trace_stream
from specviz.study import Study, comparison

controls.sidebar()  # drawn by each page, so a page opened on its own still has it
st.title("Generate")
st.html(charts.legend())
left, middle, right = st.columns([1.3, 1, 3])
# `running` is set by the click itself, before the script reruns: a Stop that arrives while the page is still
# being drawn, before the run below has begun (`finished` still None), finds it set too. A Stop reruns the page at
# once, while the stopped run ends its current iteration in its own thread: `finished` says when it has, and
# `traced` whether it got as far as its first iteration (else the pages still show what they showed before).
STOP_WAIT = 600   # seconds: a bound on one iteration of the slowest run, never reached when the decoder answers
start = left.button("Generate", type="primary", key="generate",
                    on_click=st.session_state.update, args=({"running": True, "finished": None, "traced": False},))
middle.button("Stop", key="stop", help="Ends the run after the current iteration; the trace keeps what was decided.")
with right:
    # labels short enough for a 1024 px screen with the sidebar open; the rest in the help
    show_rejected = st.toggle("Show rejected drafts", value=controls.kept("show_rejected", True),
                              key="show_rejected", help="Drafts the target rejected, struck through in the text.")
    with_baseline = st.checkbox("Time the target alone too", value=controls.kept("with_baseline", False),
                                key="with_baseline", help="Runs the target alone on the same prompt after this run "
                                "and shows the measured speedup over it.")
    race_view = st.toggle("Race view", help="The target alone and speculative decoding side by side, each at its "
                          "measured pace.", value=controls.kept("race_view", False), key="race_view")
race_area = st.container()  # filled once this run's generation (if any) is done
stopped = st.empty()        # under the buttons: where a Stop is pressed, its answer

if st.session_state.remote_target:
    st.caption(f"The target is served at {st.session_state.remote_target}: every verification is one request, so "
               "drafting saves round trips" + (f", each with {st.session_state.target_latency_ms} ms added."
                                               if st.session_state.target_latency_ms else "."))
elif st.session_state.target_latency_ms:
    st.caption(f"Every target call waits an extra {st.session_state.target_latency_ms} ms of simulated latency (a "
               "remote target, as in Petals): drafting saves round trips, so the speedup over the target alone grows.")
numbers = st.empty()
text = st.empty()
tree = st.empty()
chart = st.empty()


def show(trace: Trace, compared: Study | None, live: bool) -> None:
    s = trace.summary()
    with numbers.container():
        cols = st.columns(5)
        cols[0].metric("tokens", s.tokens)
        cols[1].metric("iterations", s.iterations)
        cols[2].metric("α̂", "n/a" if s.alpha is None else f"{s.alpha:.2f}",
                       help="Acceptance rate: the share of the drafts tested that the target accepted.")
        cols[3].metric("tokens / it.", f"{s.accepted_length:.2f}", help="Tokens per iteration (per target pass).")
        cols[4].metric("tokens / s", "…" if live else f"{s.tokens_per_s:.1f}")
        if compared is not None and not live:
            b = compared.baseline.summary()
            speedup = compared.speedup(trace)
            st.metric("measured speedup over the target alone", "n/a" if speedup is None else f"{speedup:.2f}×",
                      help=f"target alone: {b.tokens_per_s:.1f} tokens/s over {b.tokens} tokens")
            same, sentence = agreement(compared)
            if not same:
                st.info(sentence)
        if not live:
            st.caption(state.measured_on(f"{trace.device} ({trace.dtype})", trace.threads, trace.waited))
        if (note := charts.agreement_note(trace.settings)) is not None:
            st.caption(note)
    text.html(charts.colored_text(trace, show_rejected))


def show_tree(trace: Trace, key: str) -> None:
    """The token tree of the trace's last iteration."""
    last = trace.iterations[-1]
    tree.plotly_chart(charts.token_tree(last, charts.last_committed(trace, last.index)), key=key)


def stream(turn: models.Turn, prompt: str, settings) -> None:
    """Run in the decoder process, redrawing as iterations arrive (the charts at most once a second);
    the run's trace becomes the session's trace with its first iteration."""
    drawn = 0.0
    with closing(follow_trace(turn.request(trace_stream, prompt, settings))) as traces:
        for trace in traces:
            if state.trace() is not trace:  # the previous trace stays until this run decides something
                trace.waited = turn.waited
                state.set_trace(trace, "last run")
                st.session_state.traced = True   # the pages show this run from its first iteration on
            show(trace, None, live=True)
            if time.monotonic() - drawn > 1.0:
                show_tree(trace, key=f"run-tree-{len(trace.iterations)}")
                chart.plotly_chart(charts.timeline(trace), key=f"run-{len(trace.iterations)}")
                drawn = time.monotonic()
    state.show_caption()


pressed_stop = not start and st.session_state.pop("running", False)  # still set only if Stop cut the last run short
if pressed_stop:
    if st.session_state.finished is not None:   # the run had begun
        with st.spinner("Stopping after the current iteration…"):
            st.session_state.finished.wait(STOP_WAIT)
    stopped.warning("Stopped: the trace holds the iterations decided before the stop." if st.session_state.traced
                    else "Stopped before the run's first iteration: the pages show what they showed before.")

failed = False   # set when this run ends in an error, which the slot under the buttons then shows
if start:
    finished = threading.Event()   # set below from this thread's own reference: once stopped, it may not read state
    st.session_state.finished = finished
    try:
        prompt, settings = controls.prompt(), controls.settings()
        with models.exclusive() as turn:
            stream(turn, prompt, settings)
            if with_baseline:
                base = models.run_with_progress(turn, prompt, settings,
                                                "Running the target alone for the baseline…", baseline=True)
                if base is not None:
                    state.set_study(comparison(base, state.trace()), controls.ran_on())
            st.session_state.running = False
    except Exception as error:   # a Stop's rerun is no Exception: `running` stays set for it alone
        st.session_state.running = False
        if not isinstance(error, SpecvizError):
            raise
        failed = True
        stopped.error(str(error))   # under the buttons, where the person who pressed Generate is looking
    finally:
        finished.set()

if race_view:
    with race_area:
        race.section(show_rejected)

current = state.trace()
if current is None:
    st.info("Pick a prompt and settings in the sidebar, then press **Generate**.")
else:
    show(current, None if race_view else state.study("comparison"), live=False)   # the race shows its own
    state.warn_approximate(current)
    if current.stopped_by and not pressed_stop and not failed:   # the slot holds this run's error
        stopped.warning(f"Stopped by {current.stopped_by}: the trace holds the iterations decided before it.")
    if current.iterations:
        show_tree(current, key="tree")
        chart.plotly_chart(charts.timeline(current), key="timeline")
        st.subheader("Where drafts die")
        linked_view(current, key="generate_linked")
    with st.expander("Prompt and settings of this trace"):
        st.text(current.prompt)
        st.table(charts.settings_frame(current).set_index("setting"))
