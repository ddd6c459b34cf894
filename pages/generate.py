"""Generate: run the decoder and watch each iteration land."""

import time
from contextlib import closing

import streamlit as st

from pages.ui import controls, models, state
from specviz import Run, SpecvizError, Trace, charts

controls.sidebar(__file__)  # drawn by each page, so a page opened on its own still has it
st.title("Generate")
st.html(charts.legend())
left, middle, right = st.columns([1, 1, 3])
start = left.button("Generate", type="primary", key="generate")
middle.button("Stop", key="stop", help="Ends the run after the current iteration; the trace keeps what was decided.")
with right:
    show_rejected = st.toggle("Show rejected drafts (struck through)", value=True, key="show_rejected")
    with_baseline = st.checkbox("Also run the target alone and measure the speedup", key="with_baseline")

if st.session_state.target_latency_ms:
    st.caption(f"Every target call waits an extra {st.session_state.target_latency_ms} ms (a remote target, as in "
               "Petals): drafting saves round trips, so the speedup over the target alone grows.")
numbers = st.empty()
text = st.empty()
chart = st.empty()


def show(trace: Trace, baseline: Trace | None, live: bool) -> None:
    s = trace.summary()
    with numbers.container():
        cols = st.columns(5)
        cols[0].metric("tokens", s.tokens)
        cols[1].metric("iterations", s.iterations)
        cols[2].metric("α̂ (acceptance rate)", "n/a" if s.alpha is None else f"{s.alpha:.2f}")
        cols[3].metric("tokens / iteration", f"{s.accepted_length:.2f}")
        cols[4].metric("tokens / s", "…" if live else f"{s.tokens_per_s:.1f}")
        if baseline is not None and not live:
            b = baseline.summary()
            speedup = s.tokens_per_s / b.tokens_per_s if b.tokens_per_s else float("nan")
            st.metric("measured speedup over the target alone", f"{speedup:.2f}×",
                      help=f"target alone: {b.tokens_per_s:.1f} tokens/s over {b.tokens} tokens")
    text.html(charts.colored_text(trace, show_rejected))


def stream(run: Run, label: str) -> None:
    """Iterate the run, redrawing as iterations arrive (the chart at most twice a second); the run's
    trace becomes the session's trace with its first iteration."""
    drawn = 0.0
    with closing(iter(run)) as iterations:
        for _ in iterations:
            if state.trace() is not run.trace:  # the previous trace stays until this run decides something
                state.set_trace(run.trace, "last run")
            show(run.trace, None, live=True)
            if time.monotonic() - drawn > 0.5:
                chart.plotly_chart(charts.timeline(run.trace), key=f"{label}-{len(run.trace.iterations)}")
                drawn = time.monotonic()
    state.show_caption()


if st.session_state.pop("running", False) and not start:
    st.warning("Stopped: the trace holds the iterations decided before the stop.")

if start:
    st.session_state.running = True  # still set on the next rerun only if Stop cut this one short
    try:
        settings = controls.settings()
        with models.exclusive() as (target, drafter):
            run = Run(target, drafter, st.session_state.prompt, settings)
            stream(run, "run")
            if with_baseline:
                progress = st.progress(0.0, text="Running the target alone for the baseline…")
                base = Run(target, None, st.session_state.prompt, settings)
                with closing(iter(base)) as steps:
                    for _ in steps:
                        progress.progress(min(1.0, len(base.trace.generated_ids) / settings.max_new_tokens),
                                          text="Running the target alone for the baseline…")
                progress.empty()
                st.session_state.baseline = base.trace
            st.session_state.running = False
    except SpecvizError as error:
        st.session_state.running = False
        st.error(str(error))

current = state.trace()
if current is None:
    st.info("Pick a prompt and settings in the sidebar, then press **Generate**.")
else:
    show(current, st.session_state.get("baseline"), live=False)
    if current.iterations:
        chart.plotly_chart(charts.timeline(current), key="timeline")
    with st.expander("Prompt and settings of this trace"):
        st.text(current.prompt)
        st.caption(f"{current.target} ← {current.drafter} on {current.device} ({current.dtype})")
        st.json(current.settings.to_dict(), expanded=False)
