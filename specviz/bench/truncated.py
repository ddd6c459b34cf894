"""A draft LM cut from the target: its first k layers, final norm and LM head, saved as a model.

It loads through `load_model(path)` like any hub drafter, so the engine and transformers'
`generate(assistant_model=...)` can run the same pair. Untrained, its α is low: it is here to
compare the two decoding loops, not to be a good drafter.
"""

from __future__ import annotations

from pathlib import Path

from transformers import AutoModelForCausalLM

from specviz.errors import SpecvizError
from specviz.files import save_whole_dir
from specviz.models import LoadedModel, cache_dir, save_model


def truncated_drafter_dir(target: LoadedModel, layers: int) -> Path:
    """Directory of the target's first `layers` layers, saved on first use under the cache."""
    config = target.model.config.to_dict()
    if target.is_encoder_decoder or not 1 <= layers < config.get("num_hidden_layers", 0):
        raise SpecvizError(f"cannot cut {layers} layers from '{target.name}'")
    path = cache_dir() / "bench" / f"{Path(target.name).name}-first{layers}"
    if (path / "config.json").exists():
        return path
    config.update(num_hidden_layers=layers, layer_types=None)
    small = AutoModelForCausalLM.from_config(type(target.model.config).from_dict(config))
    small.load_state_dict(target.model.state_dict(), strict=False)  # later layers are simply unused
    save_whole_dir(path, lambda folder: save_model(folder, small, target.tokenizer, target.model.generation_config))
    return path
