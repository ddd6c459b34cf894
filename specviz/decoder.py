"""The speculative decoding loop: draft -> verify -> accept/correct, one iteration at a time.

`Run` owns the target's KV cache, the drafter, the run's single seeded generator and the trace.
Iterating it yields each `Iteration` as soon as it is decided; `run.trace` is complete once the
loop ends (or is stopped early, by its consumer or the host's run-time limit: the trace then holds
what was decided so far). With no drafter every iteration is one plain target step, so the
autoregressive baseline produces records of the same shape.

A drafter that reads the target's features (an EAGLE head, `reads_features`) gets them through
`observe(hidden)`: the loop asks the target for its last hidden states along with the logits it computes anyway,
and hands over those of every committed position whose feature is known: after each iteration the
position before the drafts and each emitted draft. The feature of the iteration's last emitted token
(the bonus or correction) comes with the next verification. Such a drafter cannot draft before the
target has read the prompt, so its run starts with a plain target step over the whole prompt (the
prefill), which hands over every prompt position's feature and emits the first token: the pass the
prompt needs anyway pays for one token, as the target alone's does (a prefill over all but the
prompt's last token, then a first draft, emitted no token of its own).

An adaptive run (`settings.adaptive`) asks `specviz.adaptive` for each iteration's shape (a chain, a
tree or no draft) before drafting, and tells it the verdict once the iteration is decided; the
iteration records the choice.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from specviz import adaptive, tree_size, verification
from specviz.device import Clock
from specviz.drafters import DRAFTER_KINDS, FEATURE_KINDS
from specviz.drafters.base import Drafter, empty_draft
from specviz.errors import SpecvizError
from specviz.kv_cache import CachedLM
from specviz.limits import Limits, host_limits
from specviz.models import LoadedModel, Prompt
from specviz.record import record_iteration
from specviz.remote import RemoteError, RemoteTarget
from specviz.settings import DecodeSettings
from specviz.trace import Iteration, Trace
from specviz.tree_size import Sizing
from specviz.warpers import Warper


def checked_prompt(target: LoadedModel, prompt: Prompt, settings: DecodeSettings, chat: bool = True,
                   limits: Limits | None = None) -> list[int]:
    """The prompt's token ids; a prompt and token budget over the host's limits (`limits.host_limits` unless
    given) or over the target's context are refused, before any work (a new pair's sizing included)."""
    prompt_ids = target.encode_prompt(prompt, chat=chat)
    (host_limits() if limits is None else limits).check(len(prompt_ids), settings.max_new_tokens)
    target.check_fits(len(prompt_ids), settings.max_new_tokens)
    return prompt_ids


class Run:
    def __init__(self, target: LoadedModel, drafter: Drafter | None, prompt: Prompt,
                 settings: DecodeSettings, chat: bool = True, use_cache: bool = True, limits: Limits | None = None,
                 sizing: Sizing | None = None):
        """`limits`: the host's (`limits.host_limits`, from the environment) unless given. A prompt and token
        budget over them or over the target's context is refused here, before any work. The run drafts the
        size `settings` give: `auto_size` is resolved before, by `specviz.sizing.prepare`, which also hands
        over the pair's `sizing`."""
        self.limits = host_limits() if limits is None else limits
        prompt_ids = checked_prompt(target, prompt, settings, chat, self.limits)
        self.sizing = sizing
        self.policy = None
        if settings.adaptive and drafter is not None:
            if sizing is None:
                raise SpecvizError("an adaptive run starts from the pair's sizing: prepare its settings with "
                                   "specviz.sizing.prepare")
            self.policy = adaptive.start(sizing.acceptance, sizing.cost, adaptive.Space(
                settings.gamma, settings.branches, settings.nodes or max(tree_size.BUDGETS),
                drafter.chain_situations), target.passes if settings.learn_costs else None)
        self.target = target
        self.drafter = drafter
        self.settings = settings
        self.vocab = drafter.vocab if drafter is not None else target.vocab_size
        self.lm = remote_target(target, drafter, settings, self.vocab) if settings.target_url else \
            CachedLM(target, use_cache=use_cache, latency_ms=settings.target_latency_ms)
        self.observe = drafter.observe if drafter is not None and drafter.reads_features else None
        # the target's passes as this machine runs them (`learnt_costs`): cached, no server's, no simulated latency
        self.logs_passes = isinstance(self.lm, CachedLM) and use_cache and not settings.target_latency_ms
        self.layers = drafter.feature_layers if self.observe is not None else (-1,)
        self.warper = Warper(settings)
        self.clock = Clock(target.device)
        self.generator = torch.Generator(device=target.device).manual_seed(settings.seed)
        self.trace = Trace(prompt=prompt, prompt_ids=prompt_ids,
                           target=target.name, drafter=drafter.name if drafter else "none (baseline)",
                           settings=settings, device=str(target.device),
                           dtype=str(target.dtype).removeprefix("torch."), threads=torch.get_num_threads(),
                           block=drafter.block if drafter else 0, context=target.tokenizer.decode(prompt_ids))

    def __iter__(self) -> Iterator[Iteration]:
        s, trace = self.settings, self.trace
        start = self.clock.now()
        seq = self.lm.start(trace.prompt_ids)
        if self.drafter is not None:
            self.drafter.begin(trace.prompt_ids)
        generated = trace.generated_ids
        try:
            while len(generated) < s.max_new_tokens and not self._ended(generated) and not self._out_of_time(start):
                try:
                    iteration = self._step(seq + generated, generated, len(trace.iterations))
                except RemoteError as error:  # the server failed: the trace keeps what was decided before
                    trace.stopped_by = f"the remote target failing: {error}"
                    return
                iteration.elapsed = self.clock.now() - start  # when its tokens are committed (device synced)
                generated.extend(iteration.emitted_ids)
                trace.iterations.append(iteration)
                yield iteration
        finally:
            trace.wall_time = self.clock.now() - start
            trace.text = self.target.tokenizer.decode(generated, skip_special_tokens=True)

    def _ended(self, generated: list[int]) -> bool:
        return bool(generated) and generated[-1] in self.target.eos_ids

    def _out_of_time(self, start: float) -> bool:
        """Past the host's run-time limit after an iteration (the first always runs): the trace says so."""
        if self.trace.iterations:
            self.trace.stopped_by = self.limits.out_of_time(self.clock.now() - start)
        return self.trace.stopped_by is not None

    @torch.inference_mode()  # no autograd bookkeeping on any tensor of the step (about 3% on the CPU)
    def _step(self, seq: list[int], generated: list[int], index: int) -> Iteration:
        s = self.settings
        budget = s.max_new_tokens - len(generated)
        # At most budget - 1 drafts: were they all accepted, the bonus would take the last place, so a
        # draft there could add no token, only a drafter step (so at budget 1 the target steps alone).
        # An adaptive run's shape is chosen from the iterations finished before this one only, and drafted
        # within the nodes it was timed for (a chain of γ: γ nodes, `MixedDrafter.propose`).
        prefill = index == 0 and (s.first_target or self.observe is not None)   # the target's token first
        choice = adaptive.choose(self.policy, budget, self.drafter.situation(generated), len(seq)) \
            if self.policy is not None and not prefill else None
        gamma, branches, nodes = (choice.gamma, choice.branches, choice.nodes) \
            if choice is not None else (min(s.gamma, budget - 1), s.branches, s.nodes)
        t0 = self.clock.now()
        if self.drafter is None or gamma == 0 or prefill:
            draft = empty_draft(self.vocab, self.target.device)
        else:
            draft = self.drafter.propose(generated, gamma, self.warper, self.generator, s.draft_confidence,
                                         branches=branches, nodes=nodes)
        if isinstance(self.lm, RemoteTarget):
            draft = self.lm.sendable(seq, draft)
        t1 = self.clock.now()
        network = self.lm.network
        drafted = draft.tokens.tolist()
        fed = seq + drafted
        if self.observe is None:
            logits = self.lm.logits(fed, last=len(drafted) + 1, parents=draft.parents)
        else:   # the prefill's hidden states cover the whole prompt, each later pass's the new tokens
            states = len(fed) if prefill else len(drafted) + 1
            logits, hidden = self.lm.logits(fed, last=len(drafted) + 1, hidden=states, parents=draft.parents,
                                            layers=self.layers)
        logits = logits[:, : self.vocab]
        t2 = self.clock.now()
        if index > 0 and self.logs_passes:   # the first pass computes the prompt too
            self.target.passes.add(len(drafted) + 1, len(seq), self.trace.threads, t2 - t1)
        p = self.warper.probs(logits)
        if s.rule == "sampling":
            verdict = verification.lossless(p, draft.q, draft.tokens, self.generator, draft.parents, draft.sampled)
        elif s.rule == "greedy":
            verdict = verification.greedy(p, draft.tokens, draft.parents)
        else:
            verdict = verification.spec_verification(logits, draft.tokens, s.beta, s.tau, draft.parents)
        emitted = self._emitted([drafted[i] for i in verdict.path], verdict, budget)
        if self.observe is not None:   # the prompt's features (prefill), the root's, then each accepted node's
            known = len(hidden) - len(drafted) - 1
            rows = list(range(known + 1)) + [known + i + 1 for i in verdict.path]
            self.observe(hidden[rows[: known + len(emitted)]])
        t3 = self.clock.now()
        if choice is not None:   # the verdict is final: the policy learns from it for the next iteration
            kept = verification.kept_chances(p, draft.q, draft.tokens, draft.parents, draft.sampled).tolist() \
                if s.rule == "sampling" and drafted else None
            adaptive.observe(self.policy, choice, draft.parents, verdict.path, kept)
            if s.learn_costs:
                adaptive.observe_drafting(self.policy, choice, t1 - t0, draft.calls)
        iteration = Iteration(index=index, drafted=len(drafted), accepted=verdict.accepted,
                              emitted_ids=emitted, draft_time=t1 - t0, verify_time=t2 - t1,
                              sample_time=t3 - t2, draft_calls=draft.calls, unsure=draft.unsure,
                              network_time=self.lm.network - network, choice=choice)
        if isinstance(self.lm, RemoteTarget):
            iteration.server_time = self.lm.server_time
            iteration.p_unknown = self.lm.unknown if s.rule == "sampling" else None
            iteration.unsent = self.lm.unsent if s.rule == "sampling" else 0
        return record_iteration(iteration, p, draft, verdict, s, self.target.token_text)

    def _emitted(self, accepted: list[int], verdict: verification.Verdict, budget: int) -> list[int]:
        """Accepted drafts then the recovered or bonus token, cut at EOS and at max_new_tokens (which
        only a drafter deeper than the γ it was asked for can reach)."""
        tokens = accepted + [verdict.recovered if verdict.recovered is not None else verdict.bonus]
        for i, token in enumerate(tokens):
            if token in self.target.eos_ids:
                tokens = tokens[: i + 1]
                break
        return tokens[:budget]


def remote_target(target: LoadedModel, drafter: Drafter | None, settings: DecodeSettings, vocab: int) -> RemoteTarget:
    """The server at settings.target_url as the target, asked for what the rule needs: the top-1 (greedy),
    the top-β (Spec-Verification) or `target_logprobs` (lossless sampling; 0 = all of p)."""
    if drafter is not None and drafter.reads_features:
        own = [kind for kind in DRAFTER_KINDS if kind not in (*FEATURE_KINDS, "none")]
        raise SpecvizError(f"the {drafter.name} drafter reads the target's hidden states, which a remote target does "
                           f"not send: pick a drafter of its own ({', '.join(own)})")
    if target.is_encoder_decoder:
        raise SpecvizError("a remote target must be decoder-only")
    k = {"greedy": 1, "spec": settings.beta}.get(settings.rule, settings.target_logprobs)
    return RemoteTarget(settings.target_url, settings.target_model, target.tokenizer, vocab, k,
                        settings.target_timeout_s, settings.target_latency_ms, target.device)


def generate(target: LoadedModel, drafter: Drafter | None, prompt: Prompt,
             settings: DecodeSettings, **kwargs) -> Trace:
    """Run to the end and return the trace."""
    run = Run(target, drafter, prompt, settings, **kwargs)
    for _ in run:
        pass
    return run.trace
