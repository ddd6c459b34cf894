"""Drafters: everything that proposes tokens for the target to verify."""

from __future__ import annotations

import torch

from specviz.drafters.base import Draft, Drafter, empty_draft
from specviz.drafters.counts import ORDERS, count_name, load_counts
from specviz.drafters.draft_model import DraftModelDrafter
from specviz.drafters.ngram import NgramDrafter
from specviz.errors import SpecvizError
from specviz.models import EMBEDDED, LoadedModel, check_same_vocab, load_model

DRAFTER_KINDS = ("eagle", "tiny", "ngram", "unigram", "bigram", "model", "lookup+eagle", "none")
STANDALONE_KINDS = ("eagle", "tiny", "ngram", "lookup+eagle")  # need no draft model named (the embedded target's)
COUNT_KINDS = tuple(ORDERS)   # count tables of the target's own answers (specviz.drafters.counts)


def default_drafter(target: str | None = None) -> str:
    """The drafter kind a run of `target` (None: the embedded one) gets when none is named: prompt lookup
    beside the shipped EAGLE head ("lookup+eagle") for the embedded target when the head's weights are
    installed, else prompt lookup alone ("ngram"), which needs no weights and suits any target."""
    from specviz.drafters import eagle

    return "lookup+eagle" if target in (None, EMBEDDED) and eagle.DEFAULT_WEIGHTS.is_file() else "ngram"


def drafter_name(kind: str, model: str | None = None) -> str:
    """The name `build_drafter(kind, target, model)` gives its drafter, known before anything loads (the
    drafter's cached sizing is kept under it): for the kinds that load no draft LM."""
    from specviz.drafters.eagle import head_name
    from specviz.drafters.tiny import lm_name

    lookup = NgramDrafter(0, torch.device("cpu")).name
    names = {"eagle": head_name(model), "tiny": lm_name(model), "ngram": lookup,
             "lookup+eagle": f"{lookup} + {head_name(model)}", **{k: count_name(k, model) for k in COUNT_KINDS}}
    if kind not in names:
        raise SpecvizError(f"no name is known before loading for drafter kind {kind!r}; only for "
                           f"{', '.join(names)}")
    return names[kind]


def build_drafter(kind: str, target: LoadedModel, model: str | None = None,
                  trust_remote_code: bool = False) -> Drafter | None:
    """A drafter for `target`: "eagle" / "tiny" (trained EAGLE-style head / tiny LM; `model` is
    a weights file, default the shipped one for the embedded target), "ngram" (prompt lookup),
    "unigram" / "bigram" (count tables of the target's own answers; `model` is a table file, default the
    shipped one for the embedded target),
    "model" (the draft LM `model`, a hub id or directory, loaded on the target's device and dtype),
    "lookup+eagle" (prompt lookup's copy and the EAGLE head's tree in one tree; `model` as for
    "eagle") or "none" (the plain baseline)."""
    if kind == "none":
        return None
    if kind == "eagle":
        from specviz.drafters.eagle import load_eagle

        return load_eagle(target, model)
    if kind == "lookup+eagle":
        from specviz.drafters.eagle import load_eagle
        from specviz.drafters.mixed import MixedDrafter

        return MixedDrafter(NgramDrafter(target.vocab_size, target.device), load_eagle(target, model))
    if kind == "tiny":
        from specviz.drafters.tiny import load_tiny

        return load_tiny(target, model)
    if kind in COUNT_KINDS:
        return load_counts(target, kind, model)
    if kind == "ngram":
        return NgramDrafter(target.vocab_size, target.device)
    if kind == "model":
        if not model:
            raise SpecvizError("the 'model' drafter needs a draft model (hub id or directory)")
        loaded = load_model(model, device=str(target.device),
                            dtype=str(target.dtype).removeprefix("torch."),
                            trust_remote_code=trust_remote_code)
        check_same_vocab(target, loaded)
        return DraftModelDrafter(loaded, vocab=min(target.vocab_size, loaded.vocab_size))
    raise SpecvizError(f"unknown drafter kind {kind!r}; choose one of {', '.join(DRAFTER_KINDS)}")


__all__ = ["COUNT_KINDS", "DRAFTER_KINDS", "STANDALONE_KINDS", "Draft", "Drafter", "DraftModelDrafter", "NgramDrafter",
           "build_drafter", "default_drafter", "drafter_name", "empty_draft"]
