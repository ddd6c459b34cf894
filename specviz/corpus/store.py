"""Where the distillation corpus lives: token ids in the repository, growing shard by shard.

A record is one prompt and one answer the target wrote to it, kept as token ids (uint16: the
embedded target's vocabulary has 49 152 entries) with the prompt's kind, where its content came
from, and how the answer was drawn (temperature 0 = greedy, else sampled with `seed`). Every run
of `python -m specviz corpus grow` writes one shard, `assets/corpus/shards/<run>.npz`, rewritten
atomically after each batch it finishes, so a run stopped at any moment keeps what it finished and
the next run adds a new shard beside it. Hidden states and target log-probs are not kept: training
recomputes them with one prefill pass per record, which costs far less than writing the answers did.

Each shard names the target that answered (`target`) and its fingerprint (`target_fingerprint`, the one
trained drafter weights carry): distilled from another model's answers, a head learns that model, so
reading a corpus for a target (`load_records(folder, target)`) refuses a shard another target answered.
Shards written before the fingerprint was kept are matched by the target's name.

The held-out prompts (`assets/corpus/heldout.json`) are chat messages, kept as text; no training or
tuning step reads them.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from specviz.errors import SpecvizError
from specviz.files import write_whole

if TYPE_CHECKING:
    from specviz.models import LoadedModel

CORPUS_DIR = Path(__file__).resolve().parents[2] / "assets" / "corpus"
SHARDS = "shards"
HELDOUT = "heldout.json"
FORMAT = "specviz-corpus"


@dataclass(frozen=True)
class Record:
    """One prompt and the target's answer to it.

    tokens: prompt ids (chat template applied) then answer ids. digest: a hash of the prompt's
    messages, which keeps a prompt from being answered twice in the same way."""

    tokens: np.ndarray    # [n_prompt + n_answer] uint16
    n_prompt: int
    kind: str
    source: str
    temperature: float    # 0: greedy
    seed: int             # the sampling seed (-1 for greedy)
    digest: str

    @property
    def n_answer(self) -> int:
        return len(self.tokens) - self.n_prompt

    @property
    def prompt(self) -> np.ndarray:
        return self.tokens[: self.n_prompt]

    @property
    def answer(self) -> np.ndarray:
        return self.tokens[self.n_prompt:]


def digest(messages: list[dict] | tuple[dict, ...]) -> str:
    """A short stable hash of chat messages."""
    return hashlib.sha256(json.dumps(list(messages), sort_keys=True).encode()).hexdigest()[:16]


def save_shard(path: Path, records: list[Record], meta: dict) -> None:
    """Write `records` as one compressed shard (written beside, then renamed: never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lengths = np.array([len(r.tokens) for r in records], dtype=np.int64)
    arrays = {
        "tokens": np.concatenate([r.tokens for r in records]).astype(np.uint16) if records else np.zeros(0, np.uint16),
        "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        "n_prompt": np.array([r.n_prompt for r in records], dtype=np.int32),
        "kind": np.array([r.kind for r in records], dtype=str),
        "source": np.array([r.source for r in records], dtype=str),
        "temperature": np.array([r.temperature for r in records], dtype=np.float32),
        "seed": np.array([r.seed for r in records], dtype=np.int64),
        "digest": np.array([r.digest for r in records], dtype=str),
        "meta": np.array(json.dumps({"format": FORMAT, "version": 1, **meta})),
    }

    def write(temporary: Path) -> None:
        with open(temporary, "wb") as file:   # a file, not a name: np.savez would end the name in .npz
            np.savez_compressed(file, **arrays)

    write_whole(path, write)


def load_shard(path: Path) -> tuple[list[Record], dict]:
    """The records of one shard and its metadata (the run's settings, model and times)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta, arrays = json.loads(str(z["meta"])), {k: z[k] for k in z.files if k != "meta"}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise SpecvizError(f"{path} is not a readable corpus shard ({type(error).__name__}: {error}); move it out "
                           "of the shards folder") from error
    if meta.get("format") != FORMAT:
        raise SpecvizError(f"{path} is not a specviz corpus shard (format {meta.get('format')!r})")
    tokens, offsets = arrays["tokens"], arrays["offsets"]
    return [Record(tokens[offsets[i]:offsets[i + 1]], int(n), str(kind), str(source), round(float(t), 4), int(seed),
                   str(d))   # temperatures are kept as float32
            for i, (n, kind, source, t, seed, d) in enumerate(zip(*(arrays[k] for k in (
                "n_prompt", "kind", "source", "temperature", "seed", "digest"))))], meta


def shard_paths(folder: Path = CORPUS_DIR) -> list[Path]:
    return sorted((folder / SHARDS).glob("*.npz"))


def load_records(folder: Path = CORPUS_DIR, target: LoadedModel | None = None) -> list[Record]:
    """Every training record of the corpus, shard by shard in name order; with `target`, only if each shard
    holds that target's answers, else only if all shards hold one target's answers (`answered_by`)."""
    from specviz.drafters.weights import fingerprint

    name, mark = (target.name, fingerprint(target)) if target is not None else (None, None)
    records = []
    for path in shard_paths(folder):
        shard, meta = load_shard(path)
        if name is None:   # no target loaded: the first shard names the one every other must share
            name = meta.get("target")
        answered_by(path, meta, name, mark)
        mark = mark or meta.get("target_fingerprint")
        records += shard
    return records


def answered_by(path: Path, meta: dict, name: str | None, mark: str | None) -> None:
    """Refuse the shard at `path` unless the target named `name`, of fingerprint `mark`, wrote its answers:
    its fingerprint where both are known, else its name."""
    theirs = meta.get("target_fingerprint")
    if (theirs == mark) if theirs and mark else meta.get("target") == name:
        return
    raise SpecvizError(f"{path} holds answers of {meta.get('target', 'an unnamed target')!r} (fingerprint "
                       f"{theirs or 'not kept'}), not of {name!r} ({mark or 'fingerprint not kept'}): its token ids "
                       "mean another model's text, and a head distilled from them would learn that model; a corpus "
                       "folder holds one target's answers, so move that shard out of it")


def split_validation(records: list[Record]) -> tuple[list[Record], list[Record]]:
    """(training, validation): one record in 40 by its digest, at most 48, validates training and sizes
    the draft vocabulary; it is never trained on. The held-out prompts stay apart from both."""
    validation = [r for r in records if int(r.digest, 16) % 40 == 0][:48]
    chosen = {id(r) for r in validation}
    return [r for r in records if id(r) not in chosen], validation


def load_heldout(folder: Path = CORPUS_DIR) -> list[dict]:
    """The held-out prompts: {"kind", "source", "messages"} each. For evaluation only."""
    path = folder / HELDOUT
    if not path.exists():
        raise SpecvizError(f"no held-out prompts at {path}: python -m specviz corpus heldout writes them")
    return json.loads(path.read_text())["prompts"]


def save_heldout(prompts: list[dict], folder: Path = CORPUS_DIR) -> None:
    path = folder / HELDOUT
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"format": FORMAT + "-heldout", "version": 1, "prompts": prompts}, ensure_ascii=False, indent=1)
    write_whole(path, lambda temporary: temporary.write_text(text + "\n"))
