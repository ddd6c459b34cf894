"""What every page shows: one of the shipped examples, or the session's own runs and loaded files.

The app opens on the first example, so every page has content before any model loads. The
session's own trace and studies live beside the examples: switching to an example and back
loses nothing, and running or loading anything switches to them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from specviz import Trace
from specviz.examples import PACK, Example, example, load_example
from specviz.plural import count
from specviz.study import Repeat, Study, repeats, run_name, same_setup
from specviz.trace import approximate_note

LIVE = "live"  # the session's own runs and loaded files
SHARED = ("gamma sweep", "grid", "drafters")  # kinds an example without its own borrows from the pack's
STUDY_NAMES = {"comparison": "comparison with the target alone", "gamma sweep": "γ sweep", "grid": "β × τ grid",
               "drafters": "drafters side by side"}   # each kind of study as its page calls it


def shown() -> str:
    """LIVE, or the name of the example the pages show (the first one until the session has a trace)."""
    if "shown" not in st.session_state:
        show(LIVE if st.session_state.get("trace") is not None else PACK[0].name)
    return st.session_state.shown


PLACES = ("inspect_index", "lesson_trace", "lesson_index", "lesson_step")   # where the pages stand in a trace


def show(name: str) -> None:
    """Show `name`, where the inspector and the Lesson stood when it was last shown (still the same trace);
    else the inspector starts at an example's first drafted iteration (its first is often the target's token
    alone), at the first iteration of the session's own runs, and the Lesson at its own choice."""
    s = st.session_state
    places = s.setdefault("places", {})
    if "shown" in s:
        places[s.shown] = (trace(), {key: s[key] for key in PLACES if key in s})
    s.shown = name
    kept, place = places.get(name, (None, {}))
    if kept is not None and kept is trace():
        s.update(place)
        return
    its = [] if name == LIVE else _example(name)[0].iterations
    s.inspect_index = next((it.index for it in its if it.drafted), 0)


def shown_switch() -> None:
    """The sidebar's choice of what the pages show, in a slot of its own that `show_live` redraws."""
    st.session_state.switch_slot = st.empty()
    _draw_switch()


def _draw_switch() -> None:
    current = shown()
    options = [*(e.name for e in PACK), LIVE]
    key = f"shown_switch-{current}"   # a fresh widget per choice: a switch made by the page shows at once
    st.session_state.switch_slot.selectbox(
        "Showing", options, index=options.index(current), format_func=title, key=key,
        on_change=lambda: show(st.session_state[key]),
        help="The shipped examples need no model. Running or loading anything shows your own runs.")


def show_live() -> None:
    """Show the session's own runs and loaded files, and say so in the sidebar drawn this run."""
    if shown() != LIVE:
        show(LIVE)
        _draw_switch()
        if "use_example_slot" in st.session_state:
            st.session_state.use_example_slot.empty()
    show_caption()


def title(name: str) -> str:
    return "Your runs and loaded files" if name == LIVE else f"Example: {example(name).title}"


@st.cache_resource(show_spinner=False)
def _example(name: str) -> tuple[Trace, dict[str, Study]]:
    """An example's trace and studies, read once per server (and never changed)."""
    record = load_example(name)
    if isinstance(record, Trace):
        return record, {}
    return record.fastest(), {record.kind: record}


def trace() -> Trace | None:
    return st.session_state.get("trace") if shown() == LIVE else _example(shown())[0]


def built_for(key: str, trace: Trace, version: Any, build: Callable[[], Any]) -> Any:
    """What `build()` made for `trace` at `version` (an iteration, a trace's length), kept in session state under
    `key` and built again only when the trace or the version changes: a page runs again at every click, and its
    figures for the same trace are the same."""
    kept = st.session_state.get(key)
    if kept is None or kept[0] is not trace or kept[1] != version:
        kept = st.session_state[key] = (trace, version, build())
    return kept[2]


def set_trace(new: Trace, source: str) -> None:
    """Make `new` the trace every page shows; results derived from the old one are dropped."""
    _keep_trace(new, source)
    st.session_state.setdefault("studies", {}).pop("comparison", None)
    show_live()


def _keep_trace(new: Trace, source: str) -> None:
    """`new` as the session's own trace, the inspector at its first iteration (not the old trace's place); while
    an example is shown, its own place stays and the new trace's waits for the switch to it (`show`)."""
    st.session_state.trace = new
    st.session_state.trace_source = source
    if shown() == LIVE:
        st.session_state.inspect_index = 0
    else:
        st.session_state.setdefault("places", {})[LIVE] = (new, {"inspect_index": 0})


def study(kind: str) -> Study | None:
    """The study of this kind shown: the session's last one run or loaded, or the example's."""
    if shown() == LIVE:
        return st.session_state.get("studies", {}).get(kind)
    example = study_example(kind)
    return _example(example.name)[1][kind] if example is not None else None


def study_example(kind: str) -> Example | None:
    """The example whose study of this kind the pages show: the one shown when it has one, else the pack's of
    that kind (`SHARED`); None while the session's own studies show."""
    if shown() == LIVE:
        return None
    mine = example(shown())
    if mine.study == kind:
        return mine
    return next((e for e in PACK if e.study == kind), None) if kind in SHARED else None


def set_study(new: Study, ran_on: tuple | None = None, repeating: Study | None = None) -> None:
    """Keep `new` as the session's study of its kind; `ran_on`: the sidebar's models, settings and
    prompt it was measured on here (`controls.ran_on`), None for one that came from elsewhere;
    `repeating`: the session's study of the kind before this one was run, kept beside it when `new`
    measured the same again (`earlier`). A session with no trace yet shows the study's fastest run, as an
    example's study does."""
    st.session_state.setdefault("studies", {})[new.kind] = new
    again = repeating is not None and same_setup(repeating, new)
    st.session_state.setdefault("repeated", {})[new.kind] = (repeating, new) if again else None
    st.session_state.setdefault("studies_ran_on", {})[new.kind] = ran_on
    if st.session_state.get("trace") is None and new.variants:
        _keep_trace(new.fastest(), f"the {new.kind}'s fastest run")
    show_live()


def earlier(kind: str) -> tuple[Study | None, list[Repeat]]:
    """The same study measured before the one shown, when the one shown is the session's run of it again,
    with the runs both timed in rounds (`repeats`); (None, []) when there is no such pair."""
    before, after = st.session_state.get("repeated", {}).get(kind) or (None, None)
    found = repeats(before, after) if after is not None and after is study(kind) else []
    return (before if found else None), found


def ran_on(kind: str) -> tuple | None:
    """What the session's study of this kind was measured on here (see `set_study`)."""
    return st.session_state.get("studies_ran_on", {}).get(kind)


def studies() -> list[Study]:
    """The studies shown, in the order of their kinds."""
    return [found for kind in ("comparison", *SHARED) if (found := study(kind)) is not None]


def show_caption() -> None:
    """Say in the sidebar which trace the pages show. The sidebar makes a fresh slot on every
    run; a page that changes the trace redraws it in place."""
    if "caption_slot" not in st.session_state:
        st.session_state.caption_slot = st.sidebar.empty()
    st.session_state.caption_slot.caption(f"Showing: {describe()}")


def require_trace() -> Trace:
    """The current trace, or stop the page with a pointer to where one comes from."""
    current = trace()
    if current is None or not current.iterations:
        st.info("No trace yet: run a generation on the **Generate** page, load a file on the **Traces** page, or "
                "pick an example at the top of the sidebar.")
        st.stop()
    warn_approximate(current)
    return current


def warn_approximate(current: Trace) -> None:
    """Say so on every page that shows a trace whose lossless sampling was not exact (`approximate_note`)."""
    note = approximate_note(current)
    if note is not None:
        st.warning(f"Approximate: {note}.")


def describe() -> str:
    current = trace()
    if current is None:
        return "no trace yet"
    source = st.session_state.get("trace_source", "last run") if shown() == LIVE else f"example {shown()}"
    run = f" its fastest run ({varied})," if shown() != LIVE and (varied := _example_run(shown())) else ""
    return (f"{source}:{run} {count(len(current.iterations), 'iteration')}, "
            f"{count(len(current.generated_ids), 'token')}, {current.target} ← {current.drafter}")


def _example_run(name: str) -> str:
    """What the run an example's study shows varied ("β = 5, τ = 1"); "" for an example of one run or for a
    comparison, whose one variant varies nothing."""
    shown_trace, studies = _example(name)
    return next((run_name(v.varied) for s in studies.values() for v in s.variants
                 if v.trace is shown_trace and v.varied), "")


def study_measured_on(shown: Study) -> str:
    base = shown.baseline
    return measured_on(f"{base.device} ({base.dtype})", base.threads, base.waited)


def measured_on(device: str, threads: int, waited: float) -> str:
    """Where and how times were measured, so a number read off the screen can be weighed."""
    cores = count(threads, "torch thread") if threads else "unrecorded torch threads"
    queue = (f"waited {waited:.1f} s for other visitors' runs first, not counted in the times"
             if waited >= 0.05 else "no other run was queued ahead")
    return f"Measured on {device} with {cores}; {queue}."
