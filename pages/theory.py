"""Theory: the analytic speedup, and an interactive proof that rejection sampling recovers p."""

import pandas as pd
import streamlit as st

from pages.ui import controls
from specviz import SpecvizError, charts, theory, toy

controls.sidebar(__file__)  # drawn by each page, so a page opened on its own still has it
st.title("Theory")
st.subheader("Expected speedup (Leviathan et al. 2023)")
st.latex(r"E(\gamma) = \frac{1-\alpha^{\gamma+1}}{1-\alpha} \qquad "
         r"S(\gamma) = \frac{1-\alpha^{\gamma+1}}{(1-\alpha)(\gamma c+1)}")
a, g, c = st.columns(3)
alpha = a.slider("α: acceptance rate", 0.0, 1.0, 0.8, step=0.01, key="th_alpha")
gamma = g.slider("γ: draft length", 1, 16, 4, key="th_gamma")
cost = c.slider("c: drafter step / target step", 0.0, 1.0, 0.05, step=0.01, key="th_c")
m1, m2, m3 = st.columns(3)
m1.metric("expected tokens per iteration", f"{theory.expected_tokens(alpha, gamma):.2f}")
m2.metric("expected walltime improvement", f"{theory.walltime_improvement(alpha, gamma, cost):.2f}×")
m3.metric("optimal γ", theory.optimal_gamma(alpha, cost, 16))
st.plotly_chart(charts.theory_curves(alpha, cost, gamma), key="theory_curves")

st.subheader("Rejection sampling recovers p")
st.markdown("Edit a toy target **p** and drafter **q** (any non-negative weights; each column is normalised). "
            "Draw x̃ ~ q, keep it with probability min(1, p/q), else draw from norm(max(0, p − q)).")
DEFAULT = pd.DataFrame({"token": ["the", "a", "cat", "dog", "sat"], "p": [5.0, 3.0, 1.0, 1.0, 0.0],
                        "q": [1.0, 1.0, 4.0, 2.0, 2.0]})
table = st.data_editor(DEFAULT, num_rows="fixed", key="toy_table", hide_index=True)
draws = st.slider("simulated draws", 500, 5000, 2000, step=500, key="toy_draws")


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
