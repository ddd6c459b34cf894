"""The sidebar: every knob of a run, kept in session state so all pages share it."""

from __future__ import annotations

import streamlit as st

from pages.ui import state
from specviz import DecodeSettings, SpecvizError, precision
from specviz.decoder_process import ModelSpec
from specviz.device import decoder_threads, pick_device
from specviz.drafters import DRAFTER_KINDS, FEATURE_KINDS, default_drafter
from specviz.examples import example
from specviz.limits import check_remote_allowed, custom_models, host_limits, remote_targets
from specviz.models import EMBEDDED_NAME, HUB_PAIRS, prompt_length
from specviz.settings import RULE_NAMES, VERIFY_RULES
from specviz.tree_size import default_gamma

EMBEDDED_PAIR = f"{EMBEDDED_NAME} (embedded)"
CUSTOM_PAIR = "Custom: any hub id or local directory"

PROMPTS = {
    "Rewrite a paragraph (copying pays)": (
        "Rewrite this paragraph with British spelling, keeping every sentence: The color of the harbor "
        "changed at noon. The organization analyzed the behavior of the tides, and the center of the "
        "program traveled to the theater to realize its plan."),
    "Open chat": "What makes a good teacher? Answer in three sentences.",
    "Code": "Write a Python function that returns the n-th Fibonacci number, with a docstring.",
    "Translation": "Translate into French: The tunnel had not yet been put into operation.",
}

MAX_NEW_TOKENS = 256   # the slider's top where the host sets no lower limit
MAX_GAMMA = 32         # γ's top: SpecDec's Table 3 drafts blocks of k = 10 … 30

DEFAULTS = {
    "pair": EMBEDDED_PAIR, "custom_target": "", "custom_drafter": "", "gamma": DecodeSettings.gamma,
    "branches": 1, "nodes": 0, "auto_size": True, "adaptive": True,
    "draft_confidence": 0.0, "verify": "sampling", "beta": 3, "tau": 1.0, "temperature": 0.5, "top_k": 0,
    "top_p": 1.0, "seed": 0,
    "max_new_tokens": 48, "target_latency_ms": 0, "remote_target": "", "prompt_choice": next(iter(PROMPTS)),
    "prompt": next(iter(PROMPTS.values())),
}

KEPT = "kept_values"   # every widget's last value, the sidebar's and the pages', under a plain session key,
                       # which Streamlit never drops (`kept`)
EXAMPLE_SETTINGS = ("gamma", "branches", "nodes", "auto_size", "adaptive", "draft_confidence", "verify", "beta", "tau",
                    "temperature", "top_k", "top_p", "seed", "max_new_tokens")

# What each drafter kind is, for the sidebar's choice and the drafters compared side by side.
DRAFTER_HELP = ("eagle / tiny: drafters trained on the embedded target, drafting token by token; medusa (blockwise "
                "heads) / specdrafter (SpecDec's mask-predict drafter): trained drafters that draft a whole block in "
                "one pass (the Draft model field: a weights file for any of these four); ngram: prompt lookup, "
                "copying what followed the text's last words earlier in the prompt or answer; unigram / bigram: "
                "count tables of the target's own answers, the cheapest drafters there are (the Draft model field: "
                "a table file); retrieval: REST, continuations of the text's longest suffix found in the corpus of "
                "the target's own answers; lookup+eagle: prompt lookup's copy and the EAGLE head's guesses in one "
                "token tree.")


def _defaults() -> dict:
    """DEFAULTS with the library's choices for the embedded pair on this machine: its drafter, the device's
    default dtype, and as γ the fastest chain measured for them in the decoder process (DecodeSettings' γ
    while nothing is measured); max new tokens within the host's limit."""
    return {**DEFAULTS, "drafter": default_drafter(), "dtype": precision.default(pick_device()),
            "gamma": default_gamma(decoder_threads()) or DEFAULTS["gamma"],
            "max_new_tokens": min(DEFAULTS["max_new_tokens"], _max_new_tokens())}


def _max_new_tokens() -> int:
    """The Max new tokens slider's top: 256, or the host's limit below that."""
    return min(MAX_NEW_TOKENS, host_limits().new_tokens or MAX_NEW_TOKENS)


def _gamma_help() -> str:
    measured = default_gamma(decoder_threads())
    if measured is None:
        return (f"Nothing is measured on this machine yet, so γ starts at {DEFAULTS['gamma']}. A run with the auto "
                "size on measures the pair once; later sessions start at the fastest chain it predicts.")
    return (f"Sessions start at γ = {measured}: the fastest chain predicted for the embedded pair on this machine "
            "(its tree sizing, measured once). The auto size, when on, replaces γ.")


def _use_pair() -> None:
    """The embedded target drafts with the library's default for it (the trained EAGLE head beside
    prompt lookup, when installed); other pairs draft with their small LM."""
    st.session_state.drafter = default_drafter() if st.session_state.pair == EMBEDDED_PAIR else "model"


def _use_prompt() -> None:
    st.session_state.prompt = PROMPTS[st.session_state.prompt_choice]


# A study example's values and rounds, as the widgets of the page that runs such a study name them.
STUDY_WIDGETS = {"gamma sweep": {"sweep_gammas": "gammas", "sweep_repeats": "rounds", "sweep_adaptive": "adaptive"},
                 "grid": {"grid_betas": "betas", "grid_taus": "taus", "grid_repeats": "rounds"},
                 "drafters": {"compare_kinds": "kinds", "drafters_repeats": "rounds"}}


def _use_example() -> None:
    """Set the sidebar to the shown example's run: the embedded pair, its drafter, prompt, settings and precision;
    for a sweep, a grid or a drafter comparison, also its page's values and rounds, so that pressing Run measures
    the example again."""
    if state.shown() == state.LIVE:   # a run switched to your own runs after the button was drawn
        return
    shown = example(state.shown())
    values = {"pair": EMBEDDED_PAIR, "drafter": shown.drafter, "prompt": shown.prompt, "remote_target": "",
              **{key: getattr(shown.settings, key) for key in EXAMPLE_SETTINGS}}
    values["max_new_tokens"] = min(values["max_new_tokens"], _max_new_tokens())
    recorded = state.trace().dtype
    if recorded in precision.choices(pick_device()):   # its precision, where this machine offers it
        values["dtype"] = recorded
    study = {"rounds": shown.rounds, "adaptive": shown.adaptive, **shown.values}
    widgets = {key: study[name] for key, name in STUDY_WIDGETS.get(shown.study, {}).items()}
    st.session_state[KEPT].update(widgets)   # the page's widgets start from these when next drawn (`kept`)
    for key, value in (values | widgets).items():   # the run's end keeps the sidebar's (sidebar)
        st.session_state[key] = value


def sidebar() -> None:
    """Draw the controls, each starting from its `kept` value; a session's first run starts them at
    `_defaults`."""
    s = st.session_state
    values = s.setdefault(KEPT, {})
    if "pair" not in values:
        values |= _defaults()
    with st.sidebar:
        state.shown_switch()
        s.use_example_slot = st.empty()   # emptied by a run that switches to your own runs (`state.show_live`)
        if state.shown() != state.LIVE:
            s.use_example_slot.button("Use this example's settings", key="use_example", on_click=_use_example,
                      help="Sets the run settings below to the example's, so Generate runs it again on this machine; "
                      "for a γ sweep, a β × τ grid or the drafters side by side, also that page's values and "
                      "rounds, so its Run measures the example again.")
        st.header("Run settings")
        pairs = [EMBEDDED_PAIR, *HUB_PAIRS, *([CUSTOM_PAIR] if custom_models() else [])]
        st.selectbox("Model pair (target ← drafter)", pairs, index=pairs.index(kept("pair")) if kept("pair") in pairs
                     else 0, key="pair", on_change=_use_pair)
        if s.pair == CUSTOM_PAIR:
            st.text_input("Target (hub id or directory)", value=kept("custom_target"), key="custom_target")
            st.text_input("Draft model (hub id or directory; a weights file for eagle / tiny / medusa / specdrafter / "
                          "lookup+eagle, a table file for unigram / bigram, a corpus folder for retrieval)",
                          value=kept("custom_drafter"), key="custom_drafter")
        st.selectbox("Drafter", DRAFTER_KINDS, index=DRAFTER_KINDS.index(kept("drafter")), key="drafter",
                     help=DRAFTER_HELP + " model: the pair's small LM; none: the target alone.")
        _precision(kept("dtype"), _target_name())
        st.toggle("Size the tree for this machine (auto)", value=kept("auto_size"), key="auto_size",
                  help="Measures once the target's verify cost and the drafter's acceptance by depth and rank, "
                       "then runs the depth, branches and budget predicted fastest (the Speedup page shows why).")
        st.toggle("Adapt the draft to the text (adaptive)", value=kept("adaptive"), key="adaptive",
                  help="Before every iteration, drafts the shape with the most expected tokens per second, or "
                       "nothing at all, from the acceptance seen so far in this run (the pair's sizing is the prior "
                       "and gives the costs). γ, branches and the node budget become the most it may draft; with "
                       "the auto size on, the sizer's whole range.")
        st.slider("γ: tokens drafted per iteration (a tree's depth)", 1, MAX_GAMMA, value=kept("gamma"), key="gamma",
                  help=_gamma_help())
        st.slider("Branches: children per drafted node (top-k; 1 = a chain)", 1, 8, value=kept("branches"),
                  key="branches",
                  help="More than 1 drafts a token tree: several continuations verified in one target pass.")
        st.slider("Node budget N per tree (0 = no budget)", 0, 64, value=kept("nodes"), key="nodes",
                  help="The drafter keeps its N most probable nodes; the target verifies them all in one pass.")
        st.slider("Stop drafting when the drafter is unsure: max q below", 0.0, 0.95, value=kept("draft_confidence"),
                  step=0.05, key="draft_confidence", help="0 = off. The drafter stops before a position whose most "
                  "likely token has probability below this, so γ becomes a maximum (llama.cpp's p_min).")
        st.radio("Verification", VERIFY_RULES, index=VERIFY_RULES.index(kept("verify")), format_func=RULE_NAMES.get,
                 key="verify")
        if s.verify == "spec":
            st.number_input("β: draft must be in the target's top-β", 1, 10, value=kept("beta"), key="beta")
            st.slider("τ: max log-prob gap to the top-1", 0.0, 10.0, value=kept("tau"), step=0.5, key="tau")
        unsampled = s.verify != "sampling"
        why = "Only speculative sampling samples: greedy and Spec-Verification read the target's T = 1 log-probs." \
            if unsampled else None
        st.slider("Temperature (0 = greedy)", 0.0, 2.0, value=kept("temperature"), step=0.05, key="temperature",
                  disabled=unsampled, help=why)
        st.number_input("Top-k (0 = off)", 0, 1000, value=kept("top_k"), key="top_k", disabled=unsampled, help=why)
        st.slider("Top-p", 0.05, 1.0, value=kept("top_p"), step=0.05, key="top_p", disabled=unsampled, help=why)
        st.number_input("Seed", 0, 2**31 - 1, value=kept("seed"), key="seed")
        limits = host_limits()
        st.slider("Max new tokens", 1, _max_new_tokens(), value=kept("max_new_tokens"), key="max_new_tokens",
                  help=f"This host allows at most {limits.new_tokens}." if limits.new_tokens else None)
        _remote_target(kept("remote_target"))
        st.slider("Simulated target latency per call (ms)" if not s.remote_target else
                  "Latency added to each request (ms)", 0, 500, value=kept("target_latency_ms"), step=10,
                  key="target_latency_ms",
                  help="Petals setting: a remote target whose every forward pass costs a network round trip.")
        st.selectbox("Ready-made prompt", list(PROMPTS), index=list(PROMPTS).index(kept("prompt_choice")),
                     key="prompt_choice", on_change=_use_prompt)
        st.text_area("Prompt", value=kept("prompt"), key="prompt", height=140, help=f"This host accepts prompts of at "
                     f"most {limits.prompt_tokens} tokens." if limits.prompt_tokens else None)
        st.session_state.caption_slot = st.empty()
    state.show_caption()


def kept(key: str, default=None):
    """The value widget `key` starts from: the one it was left at this session, else `default`. Streamlit drops
    a widget's state with a page switch (before the new page runs) and whenever a run does not draw it, and a
    value assigned to a widget's key reaches the browser as its bare default on a new page; so each widget's
    value is copied under a plain key (`KEPT`) each time it is about to be drawn, and passed back as its
    default. `settings` and `models` read the sidebar's from there."""
    values = st.session_state.setdefault(KEPT, {})
    if key in st.session_state:
        values[key] = st.session_state[key]
    return values.get(key, default)


def kept_within(key: str, default: int, top: int) -> int:
    """`kept` for a widget whose top follows the trace shown: the person's own choice stays apart from the value
    drawn, which a trace with a lower `top` clamps, so a longer trace shows their choice again (`kept` alone
    would keep the clamped value). A value unlike the one drawn last was set by the person."""
    values = st.session_state.setdefault(KEPT, {})
    if key in st.session_state and st.session_state[key] != values.get(f"{key} drawn"):
        values[key] = st.session_state[key]
    values[f"{key} drawn"] = min(values.get(key, default), top)
    return values[f"{key} drawn"]


PRECISION_NAMES = {"float32": "float32 (exact greedy)", "bfloat16": "bfloat16 (faster)", "float16": "float16 (faster)"}


def _target_name() -> str:
    """The chosen target as its measurements name it (`LoadedModel.name`)."""
    s = st.session_state
    if s.pair == CUSTOM_PAIR:
        return s.custom_target.strip()
    return EMBEDDED_NAME if s.pair == EMBEDDED_PAIR else HUB_PAIRS[s.pair][0]


def _precision(current: str, target: str) -> None:
    """The dtype the models compute in, with what bf16 measured here against float32."""
    device = pick_device()
    options = precision.choices(device)
    st.selectbox("Precision (the models' dtype)", options, index=options.index(current) if current in options else 0,
                 key="dtype", format_func=PRECISION_NAMES.get,
                 help="float32 is exact: greedy output equals the target alone's, token for token. Greedy "
                      "verification is lossless in exact arithmetic; in half precision a verification pass "
                      "over k tokens rounds differently from k one-token steps, so where the target's two best "
                      "tokens nearly tie the outputs can part (the Generate page shows where, with the target alone "
                      "as baseline). " + precision.gain_note(target, device, decoder_threads()))


def _remote_target(current: str) -> None:
    """The remote target choice: only the servers the host allows (SPECVIZ_REMOTE_TARGETS), none by default."""
    allowed = remote_targets()
    if not allowed:
        st.session_state.remote_target = ""
        kept("remote_target")
        return
    options = ["", *allowed]
    st.selectbox("Target served by (remote target)", options, index=options.index(current) if current in options else 0,
                 key="remote_target", on_change=_use_remote,
                 format_func=lambda url: url or "this machine (the pair above)",
                 help="A vLLM, SGLang or llama-cpp-python server verifies each draft in one request; the pair's "
                      f"target lends its tokenizer. The drafter stays here and must draft on its own (not "
                      f"{', '.join(FEATURE_KINDS)}, which read the target's hidden states).")


def _use_remote() -> None:
    """A remote target verifies with the tree sized by hand (the auto size and adaptive drafts predict from a local
    target's measured passes),
    and drafts with the tiny LM, which needs no hidden states."""
    if st.session_state.remote_target:
        st.session_state.auto_size = False
        st.session_state.adaptive = False
        if st.session_state.drafter in FEATURE_KINDS:
            st.session_state.drafter = "tiny"


def settings() -> DecodeSettings:
    """DecodeSettings from the sidebar; raises SpecvizError for invalid values."""
    k = st.session_state[KEPT]
    return DecodeSettings(gamma=int(k["gamma"]), branches=int(k["branches"]), nodes=int(k["nodes"]),
                          auto_size=bool(k["auto_size"]), adaptive=bool(k["adaptive"]),
                          draft_confidence=float(k["draft_confidence"]),
                          verify=k["verify"], temperature=float(k["temperature"]), top_k=int(k["top_k"]),
                          top_p=float(k["top_p"]), beta=int(k["beta"]), tau=float(k["tau"]), seed=int(k["seed"]),
                          max_new_tokens=int(k["max_new_tokens"]), target_latency_ms=float(k["target_latency_ms"]),
                          target_url=_allowed(k["remote_target"]))


def _allowed(url: str) -> str:
    """The remote target URL after the host's allowlist let it through (a session cannot widen it)."""
    if url:
        check_remote_allowed(url)
    return url


def ran_on() -> tuple[ModelSpec, DecodeSettings, str]:
    """What a measurement made now depends on: the models, the settings and the prompt; raises
    SpecvizError for invalid values."""
    return models(), settings(), prompt()


def prompt() -> str:
    """The sidebar's prompt; SpecvizError, before the run queues, when it is blank (saying where to write one) or
    longer than the host accepts (counted where the target's tokenizer is already on this machine)."""
    text = st.session_state[KEPT]["prompt"]
    if not text.strip():
        raise SpecvizError("The prompt is empty: write one in the sidebar's Prompt box, or pick a ready-made prompt "
                           "above it.")
    limits = host_limits()
    if limits.prompt_tokens is not None and (length := prompt_length(models().target, text)) is not None:
        limits.check_prompt(length)
    return text


def needs_drafter(what: str) -> None:
    """Refuse, before a run queues for its turn, work that compares speculative decoding with the target alone
    while the sidebar picks no drafter."""
    if models().drafter == "none":
        raise SpecvizError(f"the {what} needs a drafter: pick one other than 'none' in the sidebar")


def models() -> ModelSpec:
    """The chosen pair and drafter; raises SpecvizError for a custom pair with no target."""
    k = st.session_state[KEPT]
    if k["pair"] == EMBEDDED_PAIR:
        if k["drafter"] == "model":
            raise SpecvizError("the embedded pair has no small draft LM for the 'model' drafter: pick a drafter "
                               "trained for it (eagle, tiny, medusa, specdrafter), one that needs no model (ngram, "
                               "unigram, bigram, retrieval, lookup+eagle), or the Custom pair to name a draft model")
        target, draft_model = None, None
    elif k["pair"] == CUSTOM_PAIR:
        if not k["custom_target"].strip():
            raise SpecvizError("enter a target model (hub id or local directory) for the custom pair")
        target, draft_model = k["custom_target"].strip(), k["custom_drafter"].strip() or None
    else:
        target, draft_model = HUB_PAIRS[k["pair"]]
    # A preset pair's draft model is an LM for the "model" drafter; trained kinds use their shipped weights.
    if k["drafter"] != "model" and k["pair"] != CUSTOM_PAIR:
        draft_model = None
    return ModelSpec(target, k["drafter"], draft_model, k["dtype"])
