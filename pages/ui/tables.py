"""A study's runs as a table, with what they shared and what each column means."""

import streamlit as st

from pages.ui import controls, state
from specviz import charts
from specviz.charts.style import markdown_escape
from specviz.study import Study, repeats_note


def setup_caption(study: Study) -> None:
    st.caption(markdown_escape(charts.study_setup(study)))


def example_note(kind: str) -> None:
    """Under a study's controls, when the study drawn is an example's: it was measured with the example's own
    prompt and settings, which the controls above and the sidebar need not show."""
    if (example := state.study_example(kind)) is not None:
        st.caption(f"Drawn below: the class pack's example “{markdown_escape(example.title)}”, measured with its own "
                   "prompt and settings, not those shown above or in the sidebar; the button above measures yours.")


def rounds_input(key: str, runs: str) -> int:
    """How often each of a study's runs is timed, interleaved with the others (`runs`: what is timed in turn)."""
    return int(st.number_input("Rounds: each run timed this often, interleaved", 1, 10,
                               value=controls.kept(key, 3), key=key,
                               help=f"The target alone, {runs}, the target alone, {runs}, …: a slow spell of the "
                               "machine falls on all of them. Speedups are the rounds' medians with their min–max."))


def show_spread(study: Study) -> None:
    """Whether the study's rounds spread by more than the differences it draws, or a host's limit stopped it
    early: a warning when so; and for the session's run of a study again, how many of its points land in the
    bars drawn before (`state.earlier`)."""
    warn, note = charts.spread_note(study)
    (st.warning if warn else st.caption)(note)
    if found := state.earlier(study.kind)[1]:
        st.caption(f"Run again with the same settings: {repeats_note(found)}")


def study_rows(study: Study) -> None:
    setup_caption(study)
    st.table(charts.rows_table(study))
    with st.expander("What the columns mean"):
        st.markdown("\n".join(f"- **{name}**: {text}" for name, text in charts.ROW_HELP.items()))
