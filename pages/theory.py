"""Theory: the analytic speedup, and an interactive proof that rejection sampling recovers p."""

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from pages.ui import controls, state
from specviz import SpecvizError, charts, toy
from specviz.bench.half_precision import measured_note
from specviz.charts.style import VEGA_BINDINGS_CSS

HALF_PRECISION_REPORT = Path(__file__).resolve().parent.parent / "benchmarks" / "half-precision.json"

controls.sidebar()  # drawn by each page, so a page opened on its own still has it
st.title("Theory")
st.subheader("Expected tokens per iteration and speedup (Leviathan et al. 2023)")
st.latex(r"E(\gamma) = \frac{1-\alpha^{\gamma+1}}{1-\alpha} \qquad "
         r"S(\gamma) = \frac{1-\alpha^{\gamma+1}}{(1-\alpha)(\gamma c+1)}")
st.caption("Move α, c and the marked γ under the chart: it redraws in your browser, without a round trip to the "
           "server. The star is the optimal γ; the white line below joins the optimal γ of every α. When the current "
           "trace has a measured α̂ and c, black diamonds and dotted curves mark them. A parallel drafter (blockwise "
           "heads, the Spec-Drafter) drafts a block of up to B tokens in one pass: set B and the curves become "
           "E(min(γ, B)) and E(min(γ, B)) / (c + 1), one drafter step whatever γ; a trace of one starts B at its "
           "block.")
st.html(VEGA_BINDINGS_CSS)
st.vega_lite_chart(charts.theory_explorer(state.trace()), key="theory_explorer", theme=None)

st.subheader("Rejection sampling recovers p")
st.markdown("Edit a toy target **p** and drafter **q** (any non-negative weights; each column is normalised). "
            "Draw x̃ ~ q, keep it with probability min(1, p/q), else draw from norm(max(0, p − q)).")
TOY = "toy_pq"   # the edited table under a plain key: the editor's own state (its edits) goes with a page switch


def reset_toy() -> None:
    """Back to the default table, in a new editor: the browser keeps an editor's pending edits while its key
    stays."""
    st.session_state[TOY] = toy.TABLE
    st.session_state.toy_resets = st.session_state.get("toy_resets", 0) + 1


table = st.data_editor(pd.DataFrame(st.session_state.get(TOY, toy.TABLE)), num_rows="fixed", hide_index=True,
                       key=f"toy_table_{st.session_state.get('toy_resets', 0)}")
st.session_state[TOY] = table.to_dict("list")
st.button("Reset the toy p and q", on_click=reset_toy, disabled=st.session_state[TOY] == toy.TABLE, key="toy_reset")
draws = st.slider("simulated draws", 500, 5000, controls.kept("toy_draws", 2000), step=500, key="toy_draws")


@st.cache_data(show_spinner="Simulating…")
def simulate(p: tuple[float, ...], q: tuple[float, ...], n: int) -> list[int]:
    return toy.simulate(list(p), list(q), n)


try:
    labels = [str(t) for t in table["token"]]
    p, q = tuple(float(v) for v in table["p"]), tuple(float(v) for v in table["q"])
    split = toy.split(list(p), list(q))
    left, right = st.columns(2)
    left.plotly_chart(charts.toy_split_chart(split, labels), key="toy_split")
    right.plotly_chart(charts.toy_histogram(simulate(p, q, draws), split.p, labels), key="toy_hist")
    st.caption(f"Rejection probability 1 − Σ min(p, q) = {split.rejection:.3f} = total residual mass.")
except (SpecvizError, ValueError) as error:
    st.error(str(error))

st.subheader("Lossless up to floating point")
st.markdown(
    "Greedy verification keeps a draft exactly when it is the target's argmax, so in exact arithmetic the output is "
    "the target alone's, token for token. A computer rounds. Verification scores γ drafted tokens in one pass, a "
    "matrix of a different shape from γ one-token steps, and the kernels sum in a different order: the same logit "
    "comes out a few last bits apart. In float32 that has never moved an argmax here. In bfloat16 (8 significant "
    "bits, so a logit near 20 is a multiple of 0.125) two tokens one step apart can swap or tie, and from that token "
    "on the two texts differ. Each text is still what the target computes; they part only at a near tie. The "
    "Generate page shows the position and both computations' two best tokens when a greedy run parts from its "
    "baseline. Sampling meets the same rounding: a speculative sample follows p as the verification pass computes "
    "it, which differs from the one-token steps' p by the size of the rounding.")
if HALF_PRECISION_REPORT.is_file():
    st.caption(measured_note(json.loads(HALF_PRECISION_REPORT.read_text())))
