"""A model plus its KV cache, fed token sequences and rolled back after rejections.

`CachedLM.logits(seq, last)` returns the next-token logits at the last `last` positions of
`seq` (and, asked for `hidden=h`, the final hidden states of its last h positions: the features an
EAGLE head reads). It remembers which tokens its cache already holds, keeps the longest common prefix with
`seq` (`DynamicCache.crop(-k)` drops the k newest entries, so a rejected draft leaves the cache
as if it had never been fed) and runs the model only on the new tokens. An encoder-decoder
model runs its encoder once per prompt; `seq` is then the decoder's sequence.

A token tree (`parents` for the last tokens of `seq`, see `specviz.tree`) is fed in the same single
pass with a tree attention mask and positions by depth. The cache then holds every node; the next
call keeps of them only the path that `seq` went on with, selecting those positions (no re-feeding),
so the cache is again exactly that of the committed sequence. A draft LM grows its tree one depth
per call: a call whose tree extends the cached one feeds only the new nodes.
"""

from __future__ import annotations

import inspect
import time

import torch
from transformers import DynamicCache, EncoderDecoderCache
from transformers.cache_utils import Cache, DynamicLayer

from specviz.device import synchronize
from specviz.errors import SpecvizError
from specviz.models import LoadedModel, layer_states
from specviz.tree import attention_mask, children, common_prefix, depths, is_chain

MIN_ROOM = 256   # positions a layer's buffers hold at first


class RoomyLayer(DynamicLayer):
    """A layer's keys and values in buffers with room to grow: a pass writes its new entries in place and the
    layer's `keys` and `values` are views of the filled part, so cutting them (`crop`, `_keep_path`) copies
    nothing either. transformers' own layer grows by concatenation, copying the whole cache at every pass:
    60 such copies (30 layers' keys and values) took 15.6 ms over 1 400 cached tokens of the embedded target,
    one CPU thread, against a one-token pass of 75-150 ms. Room doubles when it runs out."""

    room: tuple[torch.Tensor, torch.Tensor] | None = None   # the keys' and values' buffers

    def update(self, keys: torch.Tensor, values: torch.Tensor, *args, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(keys, values)
        held, new = self.get_seq_length(), keys.shape[-2]
        room = self.room
        if room is None or held + new > room[0].shape[-2] or (held and self.keys.data_ptr() != room[0].data_ptr()):
            shape = (*keys.shape[:2], max(2 * (held + new), MIN_ROOM), keys.shape[-1])
            room = keys.new_empty(shape), values.new_empty(shape)
            if held:
                room[0][:, :, :held], room[1][:, :, :held] = self.keys, self.values
            self.room = room
        room[0][:, :, held:held + new], room[1][:, :, held:held + new] = keys, values
        self.keys, self.values = room[0][:, :, :held + new], room[1][:, :, :held + new]
        return self.keys, self.values


class RoomyCache(DynamicCache):
    """transformers' dynamic cache with `RoomyLayer`s."""

    def __init__(self):
        Cache.__init__(self, layer_class_to_replicate=RoomyLayer)


class CachedLM:
    def __init__(self, loaded: LoadedModel, use_cache: bool = True, latency_ms: float = 0.0):
        self.loaded = loaded
        self.model = loaded.model
        self.use_cache = use_cache
        self.latency = latency_ms / 1000.0  # simulated network round trip per call (Petals)
        self.calls = 0
        self.network = 0.0  # seconds spent in the simulated latency
        self.encoder_outputs = None
        self.cache = None
        self.fed: list[int] = []
        self.tree: tuple[list[int], list[int]] | None = None  # tokens and parents of the nodes after `fed`
        # Only the last positions' logits are needed: skip the LM head on the rest (prefill, catch-up).
        self.keep_logits = "logits_to_keep" in inspect.signature(self.model.forward).parameters

    @torch.inference_mode()
    def start(self, prompt_ids: list[int]) -> list[int]:
        """Reset for a new prompt; return the sequence the decoder continues.

        Decoder-only: the prompt itself. Encoder-decoder: the encoder runs here, once, and the
        decoder starts from its start token.
        """
        self.calls = 0
        self.fed, self.tree = [], None
        if self.loaded.is_encoder_decoder:
            ids = torch.tensor([prompt_ids], device=self.loaded.device)
            self.encoder_outputs = self.model.get_encoder()(input_ids=ids)
            self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
            return [self.model.config.decoder_start_token_id]
        self.cache = RoomyCache()
        return list(prompt_ids)

    @torch.inference_mode()
    def logits(self, seq: list[int], last: int = 1, hidden: int = 0, parents: list[int] | None = None,
               layers: tuple[int, ...] = (-1,)) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Next-token logits [last, V] for the last `last` positions of seq; with `hidden` > 0,
        also hidden states [hidden, len(layers)·d] of its last `hidden` positions, which must all be
        new to the cache: transformers' `hidden_states[l]` for each l of `layers`, side by side (-1:
        the final layer's after its norm, the LM head's input; l: the input of layer l). With
        `parents`, the last len(parents) tokens of seq are a token tree's nodes rather than a sequence."""
        tree = parents is not None and not is_chain(parents)
        if tree and self.loaded.is_encoder_decoder:
            raise SpecvizError(f"{self.loaded.name}: token trees need a decoder-only model; use a chain (top-k 1)")
        keep = 0
        if self.use_cache:
            grows = self._keep_path(seq, parents)
            keep = min(common_prefix(self.fed, seq), len(seq) - last)
            if tree and not grows:  # tokens cached as a sequence serve only the tree's leading chain
                keep = min(keep, len(seq) - len(parents) + _leading_chain(parents))
            if len(self.fed) > keep:
                self.cache.crop(keep - len(self.fed))
            self.fed = list(seq)
        else:
            self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache()) \
                if self.loaded.is_encoder_decoder else RoomyCache()
        new = torch.tensor([seq[keep:]], device=self.loaded.device)
        extra = {"logits_to_keep": last} if self.keep_logits else {}
        if tree:
            n, device = len(parents), self.loaded.device
            lead = len(seq) - n
            past = min(keep, lead)  # the nodes before `keep` are cached already (a growing tree)
            self.fed, self.tree = seq[:lead], (seq[lead:], list(parents))
            at = list(range(past, lead)) + [lead - 1 + d for d in depths(parents)]
            extra["position_ids"] = torch.tensor([at[keep - past:]], device=device)
            mask = attention_mask(parents, past, len(seq) - past, self.loaded.dtype, device)
            extra["attention_mask"] = mask[:, :, keep - past:]
        if self.loaded.is_encoder_decoder:
            out = self.model(encoder_outputs=self.encoder_outputs, decoder_input_ids=new,
                             past_key_values=self.cache, use_cache=True, output_hidden_states=hidden > 0)
        else:
            out = self.model(input_ids=new, past_key_values=self.cache, use_cache=True,
                             output_hidden_states=hidden > 0, **extra)
        self.calls += 1
        if self.latency:   # after the pass's work, not beside it
            synchronize(self.loaded.device)
            time.sleep(self.latency)
            self.network += self.latency
        if hidden:
            states = out.decoder_hidden_states if self.loaded.is_encoder_decoder else out.hidden_states
            return out.logits[0, -last:], layer_states(states, layers)[0, -hidden:]
        return out.logits[0, -last:]

    def _keep_path(self, seq: list[int], grown: list[int] | None = None) -> bool:
        """After a tree pass: keep in the cache the committed prefix and the nodes of the path seq
        took through the tree (SpecInfer's tree-based parallel decoding keeps the accepted path's
        keys and values); drop every other node. The path's entries move down behind the prefix, in
        place, and the cache is cut after them: the prefix is never copied (a copy of the whole cache
        cost an iteration 4 ms over 338 cached tokens and 11 ms over 1 892, one CPU thread). Unless
        this call's tree (`grown`, the parents of the last nodes of seq) grows the cached one, a
        drafter feeding its tree one depth at a time: then every cached node stays, and True says so."""
        if self.tree is None:
            return False
        (tokens, parents), lead = self.tree, len(self.fed)
        if (grown is not None and grown[:len(parents)] == parents and len(seq) - len(grown) == lead
                and seq[:lead + len(tokens)] == self.fed + tokens):
            self.fed, self.tree = seq[:lead + len(tokens)], None
            return True
        tree, node, kept = children(parents), -1, []
        for token in seq[lead:]:
            node = next((c for c in tree.get(node, []) if tokens[c] == token), None)
            if node is None:
                break
            kept.append(node)
        end = lead + len(kept)
        if kept != list(range(len(kept))):   # the path leaves the leading chain: its nodes move down, in place
            path = torch.tensor([lead + i for i in kept], device=self.loaded.device)
            for layer in self.cache.layers:
                layer.keys[:, :, lead:end] = layer.keys[:, :, path]
                layer.values[:, :, lead:end] = layer.values[:, :, path]
        for layer in self.cache.layers:   # a view: the committed prefix is not copied
            layer.keys, layer.values = layer.keys[:, :, :end], layer.values[:, :, :end]
        self.fed, self.tree = self.fed + [tokens[i] for i in kept], None
        return False


def _leading_chain(parents: list[int]) -> int:
    """How many of the first nodes form a chain from the root."""
    n = 0
    while n < len(parents) and parents[n] == n - 1:
        n += 1
    return n
