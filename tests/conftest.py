"""Shared fixtures: the embedded target, and small models built here and saved to disk so they
load through the real `load_model` path (no hub on these machines)."""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The suite times passes while other tests run beside it: its verify-cost curves and sizings would mislead
# the app and the bench, so they go to a cache of the tests' own (the workers inherit it as it is).
_cache = Path(os.environ.get("SPECVIZ_CACHE", Path.home() / ".cache" / "specviz"))
if _cache.name != "specviz-tests":
    os.environ["SPECVIZ_CACHE"] = str(_cache / "specviz-tests")

import pytest  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import (  # noqa: E402
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

from specviz.bench.truncated import truncated_drafter_dir  # noqa: E402
from specviz.device import decoder_threads  # noqa: E402
from specviz.drafters import build_drafter, default_drafter  # noqa: E402
from specviz.models import load_model  # noqa: E402
from specviz.sizing import size_for  # noqa: E402

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)   # one worker per core: a second thread each would only contend

TINY_WORDS = ["<pad>", "<eos>", "<unk>"] + [f"w{i}" for i in range(13)]  # 16 tokens


def save_tiny_tokenizer(path) -> None:
    vocab = {word: i for i, word in enumerate(TINY_WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>",
                            unk_token="<unk>").save_pretrained(path)


def _sharpen(model, scale: float) -> None:
    """Random init gives near-uniform next-token distributions; scale the head for shape."""
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(scale)


def save_tiny_llama(path, seed: int, scale: float = 10.0) -> None:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(TINY_WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=None, eos_token_id=1, pad_token_id=0, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    _sharpen(model, scale)
    model.save_pretrained(path)
    save_tiny_tokenizer(path)


def save_tiny_t5(path, seed: int, scale: float = 0.3) -> None:
    torch.manual_seed(seed)
    config = T5Config(vocab_size=len(TINY_WORDS), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                      num_heads=4, decoder_start_token_id=0, eos_token_id=1, pad_token_id=0,
                      tie_word_embeddings=False)
    model = T5ForConditionalGeneration(config)
    _sharpen(model, scale)
    model.save_pretrained(path)
    save_tiny_tokenizer(path)


@pytest.fixture(scope="session")
def embedded():
    return load_model()


def _saved_pair(tmp_path_factory, name: str, save, seeds: tuple[int, int]):
    root = tmp_path_factory.mktemp(name)
    save(root / "target", seed=seeds[0])
    save(root / "drafter", seed=seeds[1])
    return root / "target", root / "drafter"


@pytest.fixture(scope="session")
def tiny_llama_dirs(tmp_path_factory):
    return _saved_pair(tmp_path_factory, "tiny-llama", save_tiny_llama, (1, 2))


@pytest.fixture
def no_model_loads(monkeypatch):
    """A command must refuse its bad input before it loads a model (seconds to minutes)."""
    import specviz.models

    def refused(*args, **kwargs):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(specviz.models, "load_model", refused)


@pytest.fixture(scope="module")
def small(tiny_llama_dirs):
    """The tiny target, frozen, on one thread: what the drafter and training tests draft against."""
    torch.set_num_threads(1)
    target = load_model(str(tiny_llama_dirs[0]))
    target.model.requires_grad_(False)
    return target


@pytest.fixture
def one_prompt(tmp_path):
    """A bench prompt set of one short prompt, for the commands that time every prompt in both dtypes (bf16
    is emulated, and slow, on a CPU without AVX-512)."""
    path = tmp_path / "prompts.json"
    path.write_text(json.dumps({"prompts": [
        {"id": "tides", "category": "chat", "text": "Explain to a ten-year-old why the sea has tides."}]}))
    return path


@pytest.fixture
def kept_threads():
    """A command sets torch's thread count for the whole process: put it back afterwards."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def chatty(small):
    """The tiny target with a chat template (its words are w0 … w12), to read conversations."""
    small.tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}w12"
    yield small
    small.tokenizer.chat_template = None


@pytest.fixture(scope="session")
def tiny_t5_dirs(tmp_path_factory):
    return _saved_pair(tmp_path_factory, "tiny-t5", save_tiny_t5, (3, 4))


@pytest.fixture(scope="session")
def embedded_sizing(embedded):
    """The tree sizing of the embedded target and its default drafter on this machine, measured here once
    (read back when SPECVIZ_CACHE has it) with the app's decoder process's torch threads, so that it is the
    sizing that process reads. The app sizes the tree on the first run with the auto size on, its default,
    before any token shows: on a cold machine a test would wait for that calibration without a sign of it.
    It also fixes where every new session's γ starts (the measured chain), whatever ran before."""
    threads = torch.get_num_threads()
    torch.set_num_threads(decoder_threads())
    try:
        return size_for(embedded, build_drafter(default_drafter(), embedded))
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def layer_drafter_dir(embedded):
    """A real draft LM for the embedded target: its first 4 layers, final norm and head."""
    return truncated_drafter_dir(embedded, 4)
