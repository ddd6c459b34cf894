"""The knobs of one drafter training run (`python -m specviz train-drafter`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

KINDS = ("eagle", "tiny", "medusa", "specdrafter")


def knob(default, help: str):
    """A field of the run's config with the text `train-drafter --help` shows for its option."""
    return field(default=default, metadata={"help": help})


@dataclass
class TrainConfig:
    kind: str = "eagle"
    steps: int = knob(400, "optimizer steps of the run")
    batch_size: int = knob(8, "sequences a step")
    lr: float = knob(2e-3, "peak learning rate (AdamW), reached after --warmup steps, then cosine decay to a tenth")
    warmup: int = knob(30, "steps of linear learning-rate warm-up (0: none)")
    ce_weight: float = knob(0.2, "λ: the weight of cross-entropy on the target's token beside the distillation loss")
    reg_weight: float = knob(0.5, "eagle: the weight of the feature-regression loss (0 drops it, as EAGLE-3 does)")
    unroll: int = knob(2, "eagle: draft steps trained a position, each on the head's own prediction")
    noise: float = knob(0.2, "eagle: uniform noise U(-noise, noise) on the input features")
    block: int = knob(4, "medusa, specdrafter: positions drafted in one pass")
    cuts: int = knob(16, "specdrafter: context cuts trained an answer, each followed by the masks")
    init: str = ""               # Spec-Drafter: a tiny LM weights file whose layers and norm it starts from;
                                 # EAGLE: a trained head to go on training (its vocabulary, widened with the
                                 # data's `draft_vocab` most used tokens when that is larger; its feature layers,
                                 # or a fuse grown from the final state, see `train.grown_fuse`)
    draft_vocab: int = knob(8192, "rows of the draft LM head, the most used tokens of the data (0: the whole "
                                  "vocabulary)")
    max_new_tokens: int = knob(128, "without --corpus: the length of the target's answers to the shipped "
                                    "training prompts, in tokens")
    sampled_answers: int = knob(0, "without --corpus: further answers to each shipped training prompt, "
                                   "sampled from the target at T = 1")
    train_prompts: int = knob(0, "without --corpus: learn from the first N shipped training prompts (0: all)")
    top_k: int = knob(20, "the target's log-probs kept a position, which the distillation matches")
    eval_every: int = knob(50, "steps between measurements of α̂ (γ = 4, T = 0 and 1) on the shipped held-out prompts")
    eval_prompts: int = knob(40, "held-out prompts a measurement decodes")
    eval_tokens: int = knob(64, "new tokens a measurement decodes a prompt")
    seed: int = knob(0, "seed of the initialisation, the batches and the noise")
    bf16: bool = False           # train under bf16 autocast (about 1.6× faster steps on an AVX512-BF16 CPU)
    feature_layers: str = ""     # EAGLE: the target's hidden states the head reads, e.g. "4,15,27" (EAGLE-3);
                                 # "" = the final normed state alone (the first EAGLE)
    head_layers: int = knob(1, "eagle: decoder layers in the head (EAGLE's and EAGLE-3's run one); with --init, "
                               "more than the saved head's grows it, its new layers starting small")
    ttt: bool = False            # EAGLE: training-time test, `unroll` steps each on the head's own predictions
    corpus: bool = False         # learn from assets/corpus (features recomputed each step), not the shipped prompts
    window: int = knob(1024, "--corpus: the last positions of a record the head attends over in training")
    first_record: int = knob(0, "--corpus: learn from the training records from this one on (a warm start gives "
                                "its card's data.corpus_records to learn only from records grown since)")
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
