"""Traces: save the current trace and the session's studies as JSON, or load either and explore it with no model."""

import json

import streamlit as st

from pages.ui import controls, state, tables
from specviz import SpecvizError, Trace, charts
from specviz.study import record_from_dict
from specviz.trace import read_json

SHOWN_ON = {"comparison": "Generate", "gamma sweep": "Speedup curves", "grid": "Draft / verify table",
            "drafters": "Speedup curves"}   # a page for every kind in specviz.study.KINDS

controls.sidebar()  # drawn by each page, so a page opened on its own still has it
st.title("Traces")
upload = st.file_uploader("Load a trace or a study (JSON saved by specviz)", type=["json"], key="trace_file")
if upload is not None and upload.file_id != st.session_state.get("loaded_file_id"):
    try:
        loaded = record_from_dict(read_json(upload.getvalue(), "specviz trace or study"))
    except SpecvizError as error:
        st.error(f"Could not load {upload.name}, nothing was changed: {error}.")
    else:
        st.session_state.loaded_file_id = upload.file_id
        if isinstance(loaded, Trace):
            state.set_trace(loaded, f"file {upload.name}")
            st.success(f"Loaded {upload.name}: every page now shows it.")
        else:
            if loaded.kind == "comparison" and loaded.variants:  # its speculative run becomes the trace shown
                state.set_trace(loaded.variants[0].trace, f"file {upload.name}")
            state.set_study(loaded)
            st.success(f"Loaded the {state.STUDY_NAMES[loaded.kind]} study {upload.name} ({len(loaded.variants)} runs "
                       f"beside the baseline): the **{SHOWN_ON[loaded.kind]}** page shows it.")

current = state.trace()
st.markdown(f"Current trace: **{state.describe()}**")
if current is not None:
    # the file is written when the button is pressed, not at every run of the page (a study is up to a few MB)
    st.download_button("Download the trace (JSON)", lambda trace=current: json.dumps(trace.to_dict()),
                       file_name="specviz-trace.json", mime="application/json", key="download")
for study in state.studies():
    runs = "; ".join(row.name for row in study.rows())
    st.download_button(f"Download the {state.STUDY_NAMES[study.kind]} study (JSON): {runs}",
                       lambda study=study: json.dumps(study.to_dict()),
                       file_name=f"specviz-{study.kind.replace(' ', '-')}.json",
                       mime="application/json", key=f"download-{study.kind}")

if current is not None:
    st.subheader("Settings of the current trace")
    st.table(charts.settings_frame(current).set_index("setting"))
    with st.expander("Every setting, as the trace file keeps them (JSON)"):
        st.json(current.settings.to_dict())
    st.dataframe(current.iterations_frame(), hide_index=True,
                 column_config={phase: st.column_config.NumberColumn(format="%.1f")
                                for phase in ("draft (ms)", "verify (ms)", "sample (ms)")})
for study in state.studies():
    st.subheader(f"The {state.STUDY_NAMES[study.kind]} study")
    tables.show_spread(study)
    tables.study_rows(study)
