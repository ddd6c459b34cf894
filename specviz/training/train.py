"""The training loop that distils a drafter from the target.

1. The target answers the shipped training prompts; its features and top-k log-probs are cached
   once (`data`).
2. The drafter (`EagleHead`, `TinyLM`, `MedusaHeads` or `MaskPredictLM`, on the target's frozen
   embedding and LM head) is trained with KL(p_target ‖ p_draft) + λ·CE (`loss`). The EAGLE head
   also regresses the next feature (SmoothL1, Li et al. 2024 §4.2), sees features with uniform
   noise, and is unrolled: its later steps read its own predicted features, as they will when
   drafting γ > 1 tokens. The parallel drafters are trained on every drafted position at once,
   each against the target's distribution there (Medusa-1's recipe, Cai et al. 2024 §2.2.1).
3. Every `eval_every` steps: teacher-forced β and top-1 agreement on the held-out answers, and
   a checkpoint that `--resume` continues from.
4. The trained parameters are saved in fp16 with the target's fingerprint, reloaded from that
   file, and measured in the engine's decoder loop on held-out prompts at T=0 and T=1; the
   numbers and the learning curve go into the JSON card beside the weights.
"""

from __future__ import annotations

import json
import math
import random
import time
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from specviz.drafters.eagle import EagleHead
from specviz.drafters.medusa import MedusaHeads
from specviz.drafters.specdrafter import MaskPredictLM
from specviz.drafters.tiny import TinyLM
from specviz.drafters.weights import load_weights
from specviz.errors import SpecvizError
from specviz.files import write_whole
from specviz.models import LoadedModel
from specviz.training.batches import Batch, draft_vocabulary, index_map, make_batch
from specviz.training.config import TrainConfig
from specviz.training.data import Sample
from specviz.training.loss import by_slot, distill
from specviz.training.prefill import PrefilledRecords
from specviz.training.ttt import unrolled


def build_model(cfg: TrainConfig, target: LoadedModel, vocab: torch.Tensor) -> torch.nn.Module:
    if cfg.kind == "eagle" and cfg.init:   # a warm start: a trained head goes on learning, over `vocab` (`widened`)
        state, config = load_weights(Path(cfg.init), "eagle", target)
        layers, saved = tuple(config.get("feature_layers", (-1,))), config.get("layers", 1)
        if saved > cfg.head_layers:
            raise SpecvizError(f"{cfg.init} runs {saved} decoder layers: a run may keep or add layers "
                               f"(--head-layers {saved} or more), not drop them")
        head = EagleHead.from_target(target, vocab, feature_layers=cfg.layers, layers=cfg.head_layers)
        if layers != cfg.layers:
            state = state | {"fuse.weight": grown_fuse(head, layers, cfg.init)}
        fresh = {k: v for k, v in head.state_dict().items() if k.startswith("deeper.")}
        head.load_state_dict(fresh | state | {"vocab": vocab})   # the layers it adds keep their small start
        return head
    if cfg.kind == "eagle":
        return EagleHead.from_target(target, vocab, feature_layers=cfg.layers, layers=cfg.head_layers)
    if cfg.kind == "medusa":
        return MedusaHeads.from_target(target, vocab, cfg.block)
    if cfg.kind == "specdrafter":
        lm = MaskPredictLM.from_target(target, vocab, cfg.block)
        if cfg.init:   # a distilled tiny LM's layers already predict the next token from the context
            state, config = load_weights(Path(cfg.init), "tiny", target)
            if config["n_layers"] != len(lm.blocks):
                raise SpecvizError(f"{cfg.init} has {config['n_layers']} layers, the Spec-Drafter {len(lm.blocks)}")
            missing, unexpected = lm.load_state_dict({k: v for k, v in state.items() if k != "vocab"}, strict=False)
            assert not unexpected and set(missing) == {"masks", "vocab"}, (missing, unexpected)
        return lm
    return TinyLM.from_target(target, vocab)


def grown_fuse(head: EagleHead, layers: tuple[int, ...], init: str) -> torch.Tensor:
    """The fuse weights with which a fused `head` starts as the single-layer head it grows from, which
    read the final normed state: the identity on that state, zero on the residual-stream ones, so the
    first step drafts exactly as the saved head did and training adds what the other layers tell."""
    if layers != (-1,) or not hasattr(head, "fuse") or all(head.residual):
        raise SpecvizError(f"{init} reads feature layers {layers}, this run {head.feature_layers}: a fused run "
                           "can start only from a head of the final state (-1,), with that state among its layers")
    d = head.config.hidden_size
    final = head.residual.index(False)
    fuse = torch.zeros_like(head.fuse.weight)
    fuse[:, final * d:(final + 1) * d] = torch.eye(d)
    return fuse


def model_config(cfg: TrainConfig, model: torch.nn.Module) -> dict:
    """What the kind's loader (`drafters.load_trained`) rebuilds the module from."""
    if cfg.kind == "eagle":
        return model.config.to_dict() | {"feature_layers": list(model.feature_layers), "layers": len(model.blocks)}
    if cfg.kind == "medusa":
        return model.config
    layers = {"block": model.config.to_dict(), "n_layers": len(model.blocks)}
    return layers | {"masks": len(model.masks)} if cfg.kind == "specdrafter" else layers


def batch_loss(cfg: TrainConfig, model: torch.nn.Module, batch: Batch,
               noise: torch.Generator | None = None) -> tuple[torch.Tensor, dict]:
    """Total loss of one batch and the logged parts (per unrolled step for EAGLE, per drafted
    position for the parallel drafters). `noise`: training's draws of EAGLE's feature noise (none when
    validating)."""
    if cfg.kind == "medusa":
        logits = model.logits(model(batch.features))
        return by_slot(logits[batch.counted], batch.targets, batch.slot, cfg.ce_weight, cfg.block)
    if cfg.kind == "specdrafter":
        logits, _ = model(batch.tokens, batch.queries, batch.positions, batch.mask)
        return by_slot(logits[batch.counted], batch.targets, batch.slot, cfg.ce_weight, cfg.block)
    if cfg.kind == "tiny":
        logits, _ = model(batch.tokens, batch.positions)
        loss, parts = distill(logits[batch.counted], batch.targets, cfg.ce_weight)
        return loss, parts
    features = batch.features
    if noise is not None and cfg.noise:
        u = torch.rand(features.shape, generator=noise, device=features.device, dtype=features.dtype)
        features = features + (u * 2 - 1) * cfg.noise
    if cfg.ttt:
        return _ttt_loss(cfg, model, batch, features)
    total, logged, predicted = 0.0, {}, None
    for step in range(cfg.unroll):
        if predicted is not None:  # the next draft step reads the feature the head itself predicted
            features = torch.cat([batch.features[:, :1], predicted[:, :-1]], dim=1)
        predicted, _ = model(features, batch.tokens, batch.positions)
        loss, parts = distill(model.logits(predicted[batch.counted]), batch.targets, cfg.ce_weight)
        reg = F.smooth_l1_loss(predicted[batch.counted], batch.next_features[batch.counted])
        total = total + loss + cfg.reg_weight * reg
        logged.update({f"{k}{step + 1}": v for k, v in {**parts, "reg": reg.item()}.items()})
    return total, logged


def _ttt_loss(cfg: TrainConfig, model: EagleHead, batch: Batch, states: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """Training-time test (`ttt`): the same target distribution at every unrolled step, each step
    reading the head's own earlier predictions; no feature regression (EAGLE-3 drops it)."""
    total, logged = 0.0, {}
    for step, predicted in enumerate(unrolled(model, states, batch.tokens, batch.positions, cfg.unroll)):
        loss, parts = distill(model.logits(predicted[batch.counted]), batch.targets, cfg.ce_weight)
        total = total + loss
        logged.update({f"{k}{step + 1}": v for k, v in parts.items()})
    return total / cfg.unroll, logged


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """Linear warm-up, then cosine decay to a tenth."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))


def widened(vocab: torch.Tensor, data_vocab: torch.Tensor) -> torch.Tensor:
    """A warm-started head's draft vocabulary: its own, joined by the data's most used tokens (`data_vocab`,
    `--draft-vocab` of them) when those are more; sorted. The head's trained layers predict a feature, and
    its vocabulary only picks the target's frozen LM-head rows that score it, so rows can be added to a
    trained head: a token outside the vocabulary can never be drafted."""
    if len(data_vocab) <= len(vocab):
        return vocab
    return torch.cat([vocab, data_vocab]).unique(sorted=True)


POOL = 32   # batches whose sequences are sorted by length together (a bucket's range of lengths)


@lru_cache(maxsize=2)
def _epoch_batches(lengths: tuple[int, ...], batch_size: int, epoch: int, seed: int) -> list[list[int]]:
    """One epoch's batches: a shuffle cut into pools of `POOL` batches, each pool sorted by length
    and cut into batches, the batches shuffled again. A batch is padded to its longest sequence, so
    sequences of like length side by side waste little; the order is a function of the seed and
    epoch only, so resuming is exact. The last `len % batch_size` of a shuffle wait for a later epoch."""
    rng = random.Random(seed * 1_000_003 + epoch)
    order = rng.sample(range(len(lengths)), len(lengths))
    pools = [sorted(order[i:i + POOL * batch_size], key=lengths.__getitem__)
             for i in range(0, len(order), POOL * batch_size)]
    batches = [pool[i:i + batch_size] for pool in pools for i in range(0, len(pool), batch_size)]
    batches = [b for b in batches if len(b) == batch_size] or batches
    rng.shuffle(batches)
    return batches


def batch_indices(lengths: tuple[int, ...], batch_size: int, step: int, seed: int) -> list[int]:
    """The sample indices of training step `step` (`lengths`: each sample's sequence length)."""
    per_epoch = len(_epoch_batches(lengths, batch_size, 0, seed))
    return _epoch_batches(lengths, batch_size, step // per_epoch, seed)[step % per_epoch]


@torch.no_grad()
def validate(cfg: TrainConfig, model: torch.nn.Module, samples: list[Sample], index: torch.Tensor,
             device: torch.device) -> dict[str, float]:
    """Teacher-forced parts of the loss on held-out answers, averaged over batches."""
    model.eval()
    sums: dict[str, float] = {}
    chunks = [samples[i:i + 16] for i in range(0, len(samples), 16)]
    for number, chunk in enumerate(chunks):   # the same cuts at every validation
        batch = make_batch(chunk, cfg.kind, index, device, cfg.block, cfg.cuts, seed=number)
        _, parts = batch_loss(cfg, model, batch)
        for k, v in parts.items():
            sums[k] = sums.get(k, 0.0) + v / len(chunks)
    model.train()
    return sums


def train(cfg: TrainConfig, target: LoadedModel, train_samples: list[Sample] | PrefilledRecords,
          heldout: list[Sample], checkpoint: Path | None = None, progress: bool = True,
          vocab: torch.Tensor | None = None, checkpoint_every_s: float = 300.0) -> torch.nn.Module:
    """Train a drafter of `cfg.kind` for `cfg.steps` steps; resume from `checkpoint` when it exists.

    `train_samples`: cached samples, or corpus records prefilled as each step takes them (then
    `vocab`, the draft vocabulary, is given). The checkpoint is written at every validation and at
    least every `checkpoint_every_s` seconds, so an interruption loses minutes at most."""
    torch.manual_seed(cfg.seed)
    saved = torch.load(checkpoint, weights_only=False) if checkpoint is not None and checkpoint.exists() else None
    if saved is not None and saved["kind"] != cfg.kind:
        raise SpecvizError(f"checkpoint {checkpoint} is for a {saved['kind']!r} drafter, not {cfg.kind!r}")
    if saved is not None and "vocab" in saved["model"]:   # a corpus grown since keeps the head's vocabulary
        vocab = saved["model"]["vocab"].cpu()
    else:
        if vocab is None:
            vocab = draft_vocabulary(train_samples, cfg.draft_vocab, target.vocab_size)
        if cfg.kind == "eagle" and cfg.init:               # a warm start keeps its vocabulary, maybe widened
            vocab = widened(load_weights(Path(cfg.init), "eagle", target)[0]["vocab"].cpu(), vocab)
    index = index_map(vocab, target.vocab_size)
    model = build_model(cfg, target, vocab).float().train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr,
                                  weight_decay=0.0, betas=(0.9, 0.95))
    start, spent = 0, 0.0
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        start, cfg.curve = saved["step"], saved["curve"]
        cfg.resumed_from = start
        spent = saved.get("seconds", 0.0)   # training time before the interruption, for the curve
    bar = tqdm(range(start, cfg.steps), desc=f"train {cfg.kind}", unit="step", initial=start, total=cfg.steps,
               disable=not progress)
    began, saved_at = time.time() - spent, time.time()
    lengths = tuple(train_samples.lengths() if isinstance(train_samples, PrefilledRecords) else
                    (len(s.tokens) for s in train_samples))
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(cfg, step)
        picked = batch_indices(lengths, cfg.batch_size, step, cfg.seed)
        chosen = train_samples.take(picked) if isinstance(train_samples, PrefilledRecords) else \
            [train_samples[i] for i in picked]
        with torch.autocast(target.device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
            batch = make_batch(chosen, cfg.kind, index, target.device, cfg.block, cfg.cuts, seed=step)
            noise = torch.Generator(target.device).manual_seed(cfg.seed * 1_000_003 + step)   # resumes exactly
            loss, parts = batch_loss(cfg, model, batch, noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        bar.set_postfix(loss=f"{loss.item():.3f}", top1=f"{parts.get('top1', parts.get('top11', 0)):.2f}")
        validating = (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps
        if validating:
            val = validate(cfg, model, heldout, index, target.device)
            cfg.curve.append({"step": step + 1, "train_loss": loss.item(), "seconds": round(time.time() - began, 1),
                              **{f"val_{k}": v for k, v in val.items()}})
            bar.write(json.dumps({k: round(v, 4) for k, v in cfg.curve[-1].items()}))
        if checkpoint is not None and (validating or time.time() - saved_at > checkpoint_every_s):
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            state = {"kind": cfg.kind, "step": step + 1, "model": model.state_dict(),
                     "optimizer": optimizer.state_dict(), "curve": cfg.curve, "seconds": time.time() - began}
            write_whole(checkpoint, lambda temporary, state=state: torch.save(state, temporary))
            saved_at = time.time()
    return model.eval()
