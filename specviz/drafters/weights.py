"""Trained drafter weights: safetensors files tied to the target they were trained for.

A trained head is only meaningful on top of the exact target whose features and distributions it
learned, so every file carries the target's fingerprint in its metadata (and in the JSON card
beside it), and loading refuses a file whose fingerprint differs from the loaded target's.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from specviz.errors import SpecvizError
from specviz.models import LoadedModel

DRAFTERS_DIR = Path(__file__).resolve().parents[2] / "assets" / "drafters"


def fingerprint(target: LoadedModel) -> str:
    """A short hash of the target's shape, vocabulary and the sign pattern of its embedding.

    Signs survive casting to fp16/bf16, so the same target loaded in any dtype matches.
    """
    config = target.model.config
    shape = [config.model_type, target.vocab_size, config.hidden_size, config.num_hidden_layers,
             len(target.tokenizer.get_vocab())]
    embed = target.model.get_input_embeddings().weight[:512, :64].detach().float().cpu()
    signs = np.packbits((embed > 0).numpy()).tobytes()
    return hashlib.sha256(json.dumps(shape).encode() + signs).hexdigest()[:16]


def digest(path: Path) -> str:
    """The first 12 hex digits of the file's SHA-256. Measurements of a drafter (its acceptance) are kept
    under its name and this, so weights retrained under an old file name are measured anew."""
    stat = path.stat()
    return _digest(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@lru_cache
def _digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def save_weights(path: Path, state: dict[str, torch.Tensor], kind: str, config: dict, target: LoadedModel) -> None:
    """Save trainable parameters as fp16 safetensors (integer buffers as they are) with kind,
    config and target fingerprint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: (v.detach().to(torch.float16) if v.is_floating_point() else v.detach()).cpu().contiguous()
               for k, v in state.items()}
    metadata = {"kind": kind, "config": json.dumps(config), "target": target.name,
                "target_fingerprint": fingerprint(target)}
    save_file(tensors, str(path), metadata=metadata)


def load_weights(path: Path, kind: str, target: LoadedModel) -> tuple[dict[str, torch.Tensor], dict]:
    """(state dict, config) of a weight file, refused unless it is a `kind` drafter for `target`."""
    expected = f"a .safetensors weights file for the {kind} drafter"
    if not path.exists():
        raise SpecvizError(f"drafter weights not found: {path} (expected {expected})")
    if not path.is_file():
        raise SpecvizError(f"{path} is a directory, not {expected}")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            state = {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError) as error:
        raise SpecvizError(f"{path} is not {expected}: {str(error).strip() or type(error).__name__}") from error
    if meta.get("kind") != kind:
        raise SpecvizError(f"{path.name} holds a {meta.get('kind')!r} drafter, not {kind!r}")
    if meta.get("target_fingerprint") != fingerprint(target):
        raise SpecvizError(f"{path.name} was trained for target {meta.get('target')!r}, "
                           f"not for the loaded target {target.name!r} (fingerprints differ)")
    return state, json.loads(meta["config"])
