"""The knobs of one drafter training run (`python -m specviz train-drafter`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

KINDS = ("eagle", "tiny", "medusa", "specdrafter")


@dataclass
class TrainConfig:
    kind: str = "eagle"
    steps: int = 400
    batch_size: int = 8          # sequences per step
    lr: float = 2e-3
    warmup: int = 30
    ce_weight: float = 0.2       # λ
    reg_weight: float = 0.5      # EAGLE feature regression
    unroll: int = 2              # EAGLE draft steps trained per position
    noise: float = 0.2           # EAGLE input feature noise U(-noise, noise)
    block: int = 4               # positions drafted in one pass: blockwise heads / Spec-Drafter masks
    cuts: int = 16               # Spec-Drafter: context cuts trained per answer, each followed by the masks
    init: str = ""               # Spec-Drafter: a tiny LM weights file whose layers and norm it starts from;
                                 # EAGLE: a trained head to go on training (its vocabulary, widened with the
                                 # data's `draft_vocab` most used tokens when that is larger; its feature layers,
                                 # or a fuse grown from the final state, see `train.grown_fuse`)
    draft_vocab: int = 8192      # draft LM head rows (0 = the full vocabulary)
    max_new_tokens: int = 128    # target answer length for the training data
    sampled_answers: int = 0     # further answers per training prompt, sampled from the target at T = 1
    train_prompts: int = 0       # the first N training prompts (0: all)
    top_k: int = 20              # target log-probs cached per position
    eval_every: int = 50
    eval_prompts: int = 40
    eval_tokens: int = 64
    seed: int = 0
    bf16: bool = False           # train under bf16 autocast (about 1.6× faster steps on an AVX512-BF16 CPU)
    feature_layers: str = ""     # EAGLE: the target's hidden states the head reads, e.g. "4,15,27" (EAGLE-3);
                                 # "" = the final normed state alone (the first EAGLE)
    head_layers: int = 1         # EAGLE: decoder layers in the head (EAGLE's and EAGLE-3's run one)
    ttt: bool = False            # EAGLE: training-time test, `unroll` steps each on the head's own predictions
    corpus: bool = False         # learn from assets/corpus (features recomputed each step), not the shipped prompts
    window: int = 1024           # corpus: positions of a record the head attends over in training
    first_record: int = 0        # corpus: learn from the training records from this one on; a warm start gives
                                 # its card's `data.corpus_records` to learn only from records grown since
    out: str = ""
    resumed_from: int = 0        # the step a resumed run continued from (0: trained in one go)
    curve: list[dict] = field(default_factory=list, repr=False)

    @property
    def layers(self) -> tuple[int, ...]:
        """`feature_layers` as indices into the target's hidden states."""
        return tuple(int(x) for x in self.feature_layers.split(",")) if self.feature_layers else (-1,)


RESUMABLE = ("steps", "eval_every", "eval_prompts", "eval_tokens", "out", "curve", "resumed_from")


def run_key(cfg: TrainConfig) -> str:
    """What a checkpoint belongs to: every knob but those a resumed run may change (`RESUMABLE`), so that
    a run never continues the checkpoint of a differently shaped or differently fed one."""
    knobs = {k: v for k, v in asdict(cfg).items() if k not in RESUMABLE}
    return hashlib.sha256(json.dumps(knobs, sort_keys=True).encode()).hexdigest()[:8]
