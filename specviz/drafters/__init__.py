"""Drafters: everything that proposes tokens for the target to verify."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import torch

from specviz.corpus.store import CORPUS_DIR
from specviz.drafters.base import Draft, Drafter, empty_draft
from specviz.drafters.counts import ORDERS, default_table, load_counts
from specviz.drafters.draft_model import DraftModelDrafter
from specviz.drafters.ngram import NgramDrafter
from specviz.drafters.retrieval import RetrievalDrafter, corpus_datastore, corpus_digest, retrieval_name
from specviz.drafters.weights import digest
from specviz.errors import SpecvizError
from specviz.models import EMBEDDED, LoadedModel, check_same_vocab, load_model

DRAFTER_KINDS = ("eagle", "tiny", "medusa", "specdrafter", "ngram", "unigram", "bigram", "retrieval", "model",
                 "lookup+eagle", "none")
STANDALONE_KINDS = ("eagle", "tiny", "medusa", "specdrafter", "ngram", "unigram", "bigram", "retrieval",
                    "lookup+eagle")  # need no draft model named (the embedded target's)
COUNT_KINDS = tuple(ORDERS)   # count tables of the target's own answers (specviz.drafters.counts)
# trained on the target (`python -m specviz train-drafter`): kind -> (module, loader, what it is called)
TRAINED = {"eagle": ("eagle", "load_eagle", "EAGLE head"), "tiny": ("tiny", "load_tiny", "tiny LM"),
           "medusa": ("medusa", "load_medusa", "blockwise heads"),
           "specdrafter": ("specdrafter", "load_specdrafter", "Spec-Drafter")}
FEATURE_KINDS = ("eagle", "medusa", "lookup+eagle")   # read the target's hidden states: no remote target


def stored_name(kind: str, model: str | Path | None = None) -> str:
    """The name of a trained drafter or count table: what it is, and the file it came from (`weights_file`)."""
    return f"{TRAINED[kind][2] if kind in TRAINED else kind} ({weights_file(kind, model).stem})"


def weights_file(kind: str, model: str | Path | None = None) -> Path | None:
    """The weights or table file a drafter of `kind` loads: `model`, default the shipped one; None for
    the kinds that load none (prompt lookup, a hub draft LM, the baseline)."""
    kind = "eagle" if kind == "lookup+eagle" else kind
    if kind in TRAINED:
        return Path(model) if model else import_module(f"specviz.drafters.{TRAINED[kind][0]}").DEFAULT_WEIGHTS
    if kind in COUNT_KINDS:
        return Path(model) if model else default_table(kind)
    return None


def weights_digest(kind: str, model: str | Path | None = None) -> str:
    """`Drafter.weights` of the drafter `build_drafter(kind, target, model)` would load, known before it
    loads: the digest of its file (the retrieval drafter's: of its corpus), '' when it has none (or the file
    is missing)."""
    if kind == "retrieval":
        return corpus_digest(Path(model) if model else CORPUS_DIR)
    path = weights_file(kind, model)
    return digest(path) if path is not None and path.is_file() else ""


def load_trained(kind: str, target: LoadedModel, path: str | Path | None = None) -> Drafter:
    """The trained drafter of `kind` in the weights file `path` (default: the shipped one), refused
    unless it was trained for `target`."""
    module, loader, _ = TRAINED[kind]
    return _stamped(getattr(import_module(f"specviz.drafters.{module}"), loader)(target, path), kind, path)


def _stamped(drafter: Drafter, kind: str, model: str | Path | None) -> Drafter:
    """The drafter named after the file it was loaded from (`stored_name`), with its digest (`Drafter.weights`)."""
    drafter.name, drafter.weights = stored_name(kind, model), weights_digest(kind, model)
    return drafter


def default_drafter(target: str | None = None) -> str:
    """The drafter kind a run of `target` (None: the embedded one) gets when none is named: prompt lookup
    beside the shipped EAGLE head ("lookup+eagle") for the embedded target when the head's weights are
    installed, else prompt lookup alone ("ngram"), which needs no weights and suits any target."""
    from specviz.drafters import eagle

    return "lookup+eagle" if target in (None, EMBEDDED) and eagle.DEFAULT_WEIGHTS.is_file() else "ngram"


def drafter_name(kind: str, model: str | None = None) -> str:
    """The name `build_drafter(kind, target, model)` gives its drafter, known before anything loads (the
    drafter's cached sizing is kept under it): for the kinds that load no draft LM."""
    lookup = NgramDrafter(0, torch.device("cpu")).name
    names = {"ngram": lookup, "retrieval": retrieval_name(),
             "lookup+eagle": f"{lookup} + {stored_name('eagle', model)}",
             **{k: stored_name(k, model) for k in (*TRAINED, *COUNT_KINDS)}}
    if kind not in names:
        raise SpecvizError(f"no name is known before loading for drafter kind {kind!r}; only for "
                           f"{', '.join(names)}")
    return names[kind]


def build_drafter(kind: str, target: LoadedModel, model: str | None = None,
                  trust_remote_code: bool = False) -> Drafter | None:
    """A drafter for `target`: a trained one (`TRAINED`: the EAGLE-style head, the tiny LM, the
    blockwise heads, the Spec-Drafter; `model` is a weights file, default the shipped one for the
    embedded target), "ngram" (prompt lookup), "unigram" / "bigram" (count tables of the target's
    own answers; `model` is a table file, default the shipped one for the embedded target),
    "retrieval" (REST: continuations found in a datastore of the target's own answers; `model` is a corpus
    folder, default the shipped corpus of the embedded target's answers),
    "model" (the draft LM `model`, a hub id or directory, loaded on the target's device and dtype),
    "lookup+eagle" (prompt lookup's copy and the EAGLE head's tree in one tree; `model` as for
    "eagle") or "none" (the plain baseline)."""
    if kind == "none":
        return None
    if kind in TRAINED:
        return load_trained(kind, target, model)
    if kind == "lookup+eagle":
        from specviz.drafters.mixed import MixedDrafter

        return MixedDrafter(NgramDrafter(target.vocab_size, target.device), load_trained("eagle", target, model))
    if kind in COUNT_KINDS:
        return _stamped(load_counts(target, kind, model), kind, model)
    if kind == "ngram":
        return NgramDrafter(target.vocab_size, target.device)
    if kind == "retrieval":
        folder = Path(model) if model else CORPUS_DIR
        return RetrievalDrafter(corpus_datastore(folder, target), target.vocab_size, target.device,
                                corpus_digest(folder))
    if kind == "model":
        if not model:
            raise SpecvizError("the 'model' drafter needs a draft model (hub id or directory)")
        loaded = load_model(model, device=str(target.device),
                            dtype=str(target.dtype).removeprefix("torch."),
                            trust_remote_code=trust_remote_code)
        check_same_vocab(target, loaded)
        return DraftModelDrafter(loaded, vocab=min(target.vocab_size, loaded.vocab_size))
    raise SpecvizError(f"unknown drafter kind {kind!r}; choose one of {', '.join(DRAFTER_KINDS)}")


__all__ = ["COUNT_KINDS", "DRAFTER_KINDS", "STANDALONE_KINDS", "TRAINED", "Draft", "Drafter",
           "DraftModelDrafter", "NgramDrafter", "build_drafter", "default_drafter", "drafter_name", "empty_draft",
           "load_trained", "weights_digest", "weights_file"]
