"""Traces: save the current trace as JSON, or load one and explore it with no model."""

import json

import streamlit as st

from pages.ui import controls, state
from specviz import SpecvizError, trace_from_dict

controls.sidebar(__file__)  # drawn by each page, so a page opened on its own still has it
st.title("Traces")
current = state.trace()
st.markdown(f"Current trace: **{state.describe()}**")
if current is not None:
    st.download_button("Download the trace (JSON)", json.dumps(current.to_dict()), file_name="specviz-trace.json",
                       mime="application/json", key="download")

upload = st.file_uploader("Load a trace (JSON saved by specviz)", type=["json"], key="trace_file")
if upload is not None and upload.file_id != st.session_state.get("loaded_file_id"):
    try:
        loaded = trace_from_dict(json.loads(upload.getvalue()))
    except (UnicodeDecodeError, json.JSONDecodeError, SpecvizError) as error:
        st.error(f"{upload.name} is not a specviz trace, nothing was changed: {error}")
    else:
        state.set_trace(loaded, f"file {upload.name}")
        st.session_state.loaded_file_id = upload.file_id
        st.success(f"Loaded {upload.name}: every page now shows it.")
        current = loaded

if current is not None:
    st.subheader("Settings of the current trace")
    st.json(current.settings.to_dict())
    st.dataframe(current.iterations_frame())
