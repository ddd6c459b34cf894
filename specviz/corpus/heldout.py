"""The held-out prompts: every kind, from sources no training prompt uses, for evaluation only.

Written once (`python -m specviz corpus heldout`) and kept in the repository as chat messages, with a
multi-turn prompt's opening answer already filled in by the target, so every evaluation reads the
very same conversations. No training or tuning step reads this file.
"""

from __future__ import annotations

from pathlib import Path

from specviz.corpus.grow import conversations, prompt_key
from specviz.corpus.prompts import KINDS, build_prompts
from specviz.corpus.store import CORPUS_DIR, HELDOUT, save_heldout
from specviz.errors import SpecvizError
from specviz.models import LoadedModel


def write_heldout(target: LoadedModel, per_kind: int, folder: Path = CORPUS_DIR, force: bool = False) -> Path:
    """`per_kind` held-out prompts of every kind into `folder`/heldout.json (refusing to replace one
    that exists unless `force`: evaluations compare against it)."""
    path = folder / HELDOUT
    if path.exists() and not force:
        raise SpecvizError(f"{path} exists; evaluations compare against it (--force replaces it)")
    prompts = [p for kind in KINDS for p in build_prompts(kind, per_kind, "heldout", seed=0)]
    opened = conversations(target, prompts, batch_size=8)
    save_heldout([{"kind": p.kind, "source": p.source, "key": prompt_key(p), "messages": list(m)}
                  for p, m in zip(prompts, opened)], folder)
    return path
