"""Draft / verify table (SpecDec Table 16), re-verification with other β and τ, and a Table 4 grid."""

import streamlit as st

from pages.ui import controls, models, state, tables
from specviz import charts
from specviz.reverify import kept_drafts, mean_tokens, reverify, warped_note
from specviz.sweep import beta_tau_grid

controls.sidebar()  # drawn by each page, so a page opened on its own still has it
st.title("Draft / verify table")
trace = state.require_trace()
st.caption("SpecDec Table 16 style. Green underline: kept drafts. Solid orange-red box: the bifurcation, where the "
           "verifier puts its own token. Struck through: discarded. Dashed box ★: bonus token. Verify-row tokens "
           "after the bifurcation are the target's top-1 there, thrown away with the drafts; under Spec-Verification, "
           "a Verify token in italics, dotted, is the target's top-1 where it kept a draft it ranked lower. A token "
           "tree is shown "
           "along its accepted path: the bifurcation lists every child tried there, and Branches counts the children "
           "drafted at each depth.")
iterations = len(trace.iterations)
shown = st.slider("Iterations shown", 1, iterations, controls.kept_within("table_rows", 20, iterations),
                  key="table_rows") if iterations > 1 else 1

st.subheader("As recorded")
st.html(charts.draft_verify_table(trace, limit=shown))

st.subheader("Re-verify the same drafts with Spec-Verification")
b, t = st.columns(2)
top_k = trace.settings.record_top_k
beta = b.number_input("β (top-β)", 1, top_k, controls.kept_within("rv_beta", 3, top_k), key="rv_beta")
tau = t.slider("τ (log-prob gap)", 0.0, 10.0, controls.kept("rv_tau", 1.0), step=0.5, key="rv_tau")
if (note := warped_note(trace.settings)) is not None:
    st.caption(note)
verdicts = reverify(trace, int(beta), float(tau))
kept, recorded = kept_drafts(verdicts)
c1, c2, c3 = st.columns(3)
c1.metric("drafts kept as recorded", recorded)
c2.metric(f"drafts kept with β={beta}, τ={tau}", kept, delta=kept - recorded)
c3.metric("Tok. (tokens / iteration)", f"{mean_tokens(verdicts):.2f}")
st.html(charts.draft_verify_table(trace, paths=[v.path for v in verdicts], limit=shown))

st.subheader("SpecDec Table 4 on one prompt: real runs over a β × τ grid")
st.caption("Each cell: Tok. (tokens per iteration) / BLEU-4 against the target's own greedy output (the paper "
           "scores against reference translations, which a prompt here has not) / speedup over the target alone. "
           "Uses the sidebar's pair, drafter, γ and max new tokens, drafting chains of γ tokens as SpecDec did (no "
           "auto-sized tree, no adaptive length).")
g1, g2 = st.columns(2)
betas = g1.multiselect("β values", [1, 2, 3, 5, 8], default=controls.kept("grid_betas", [1, 3, 5]), key="grid_betas")
taus = g2.multiselect("τ values", [0.5, 1.0, 2.0, 3.0, 4.0, 5.0], default=controls.kept("grid_taus", [1.0, 3.0, 5.0]),
                    key="grid_taus", format_func="{:g}".format)
rounds = tables.rounds_input("grid_repeats", "each (β, τ)")
if st.button("Run the grid", key="run_grid", disabled=not betas or not taus):
    models.study_with_progress("grid", rounds * (1 + len(betas) * len(taus)), beta_tau_grid, lambda: (
        controls.prompt(), controls.settings(), sorted(betas), sorted(taus), True, rounds))
grid = state.study("grid")
tables.example_note("grid")
if grid is not None:
    reference = grid.baseline.summary()
    st.markdown(f"Target alone, greedy: **{reference.tokens_per_s:.1f}** tokens/s; its output is the reference "
                "that BLEU is measured against (save or load grids on the **Traces** page)")
    tables.setup_caption(grid)
    st.dataframe(charts.grid_frame(grid))
    tables.show_spread(grid)
    st.caption(state.study_measured_on(grid))
