"""What a head learns from, recomputed from the corpus's token ids by the target at training time.

The corpus keeps prompts and answers as ids only (`specviz.corpus`). For a training step the target
reads each record of the batch in one pass and hands back, at each position, its states at the
head's feature layers and its top-k next-token log-probs where they predict answer tokens: a
`Sample` as the cached data gave. Records go one at a time, not padded side by side: on the CPU a
pass over a few hundred positions already fills the matrix units, and a padded batch's masked
attention measured 6.5× slower for the same eight records. The LM head runs on answer positions
only (the prompt's next-token distributions are never trained on).

A run of several epochs may keep each record's sample on disk the first time a step takes it
(`store`): the prefill is about half of a step's time, so later epochs run about twice as fast.
A sample costs about 3.6 KB per position at three feature layers (some 18 GB for 10 000 records),
so the store is asked for, never assumed; a disk that fills up stops the storing, not the run.

Long records are cut to their last `window` positions after the pass: the features there were
computed over the whole record, only the head's own attention sees the shorter context.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import torch

from specviz.corpus.store import Record
from specviz.files import write_whole
from specviz.models import LoadedModel, layer_states
from specviz.training.data import Sample


@torch.no_grad()
def prefill(target: LoadedModel, records: list[Record], layers: tuple[int, ...], top_k: int = 20,
            window: int = 1024, bf16: bool = False) -> list[Sample]:
    """Samples of `records` with the target's states at `layers` (side by side) as features."""
    device, model = target.device, target.model
    samples = []
    for r in records:
        n = len(r.tokens)
        ids = torch.from_numpy(r.tokens.astype(np.int64))[None].to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            out = model.get_decoder()(input_ids=ids, output_hidden_states=True)
            logits = model.get_output_embeddings()(out.last_hidden_state[0, r.n_prompt - 1: n - 1])
        states = layer_states(out.hidden_states, layers)[0]
        start = max(0, min(n - window, r.n_prompt - 1))   # keep every answer position, then what fits
        top = torch.log_softmax(logits.float(), dim=-1).topk(top_k, dim=-1)
        samples.append(Sample(tokens=torch.from_numpy(r.tokens[start:].astype(np.int32)), n_prompt=r.n_prompt - start,
                              features=states[start: n - 1].to(torch.float16).cpu(),
                              top_ids=top.indices.int().cpu(), top_logp=top.values.half().cpu()))
    return samples


class PrefilledRecords:
    """Corpus records that become `Sample`s when a training step takes them (`prefill`)."""

    def __init__(self, target: LoadedModel, records: list[Record], layers: tuple[int, ...], top_k: int = 20,
                 window: int = 1024, bf16: bool = False, store: Path | None = None):
        self.target, self.records, self.layers = target, records, layers
        self.top_k, self.window, self.bf16, self.store = top_k, window, bf16, store

    def __len__(self) -> int:
        return len(self.records)

    def lengths(self) -> list[int]:
        """Each record's positions the head trains over (after the `window` cut)."""
        return [min(len(r.tokens), max(self.window, r.n_answer + 1)) for r in self.records]

    def samples(self, chunk: int = 8) -> list[Sample]:
        """Every record's sample, in order, prefilled `chunk` records at a time (a validation set)."""
        return [s for i in range(0, len(self), chunk) for s in self.take(list(range(i, min(i + chunk, len(self)))))]

    def take(self, indices: list[int]) -> list[Sample]:
        """The samples of records `indices`: read from the store where it has them, prefilled (and
        stored) where not."""
        paths = {i: self.store / f"{record_key(self.records[i])}.pt" for i in indices} if self.store else {}
        missing = [i for i in indices if i not in paths or not paths[i].exists()]
        fresh = dict(zip(missing, prefill(self.target, [self.records[i] for i in missing], self.layers, self.top_k,
                                          self.window, self.bf16)))
        for i in missing:
            if self.store is not None:
                self._keep(fresh[i], paths[i])
        return [fresh[i] if i in fresh else Sample(**torch.load(paths[i])) for i in indices]

    def _keep(self, sample: Sample, path: Path) -> None:
        """Write `sample` to the store (atomically); on a write error warn and store nothing more."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(path, lambda temporary: torch.save(vars(sample), temporary))
        except OSError as e:
            warnings.warn(f"feature store {self.store} stopped ({e}); later steps prefill as they go", stacklevel=2)
            self.store = None


def record_key(record: Record) -> str:
    """A record's name in a feature store: a hash of its ids and where its prompt ends."""
    return hashlib.sha256(record.tokens.tobytes() + record.n_prompt.to_bytes(4, "little")).hexdigest()[:20]


def store_folder(root: Path, fingerprint: str, layers: tuple[int, ...], top_k: int, window: int, bf16: bool) -> Path:
    """The feature store of one target and the prefill settings its samples depend on."""
    return root / f"features-{fingerprint}-{'_'.join(map(str, layers))}-k{top_k}-w{window}-{'bf16' if bf16 else 'fp32'}"


def other_stores(store: Path) -> str:
    """A line naming the feature stores beside `store` (other targets or settings) and the disk each holds,
    since no run reads them and nothing deletes them; "" when there are none."""
    others = sorted(p for p in store.parent.glob("features-*") if p.is_dir() and p != store)
    if not others:
        return ""
    sizes = [sum(f.stat().st_size for f in p.iterdir() if f.is_file()) for p in others]
    return (f"feature stores of other settings in {store.parent}, which this run does not read: "
            + ", ".join(f"{p.name} ({size / 1e9:.1f} GB)" for p, size in zip(others, sizes))
            + "; delete a folder to free its space")
