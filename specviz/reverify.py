"""Re-run SpecDec's Spec-Verification with other β and τ on the drafts a trace already holds.

Xia et al., eq. 8-9: keep drafted token x̃ᵢ when it ranks in the target's top-β and
log p(top-1) − log p(x̃ᵢ) ≤ τ; the first position that fails is the bifurcation and everything
drafted after it is discarded. The trace keeps p(x̃) and p's top-k (`record_top_k`, 10 by default),
which is all the test needs: a token outside the recorded top-k ranks at least k, so β above k is
judged as β = k. The verdicts are per iteration on the recorded drafts; a real run with the
relaxed rule would continue from a different prefix (`sweep.beta_tau_grid` runs that).
The recorded p is the distribution the run verified with: temperature 1 for the greedy and spec
rules (exactly eq. 8-9), the warped p for the sampling rule. Temperature T divides the logits, so
log p_T(x) = z_x / T − log Z_T: ranks stay, and the T = 1 gap of eq. 9 is T times the recorded one,
which the test uses. A top-k or top-p cut leaves p = 0 outside it; such drafts fail at any β and τ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specviz.settings import DecodeSettings
from specviz.trace import DraftStep, Trace
from specviz.tree import walk


@dataclass
class Reverified:
    index: int
    drafted: int
    path: list[int]          # drafts kept under (β, τ): from the root, at each node its best-ranked passing child
    passed: list[bool]       # each node's own test
    recorded_accepted: int   # what the run itself accepted
    recorded_emitted: int    # the tokens the run itself emitted (fewer than accepted + 1 after an accepted EOS)

    @property
    def accepted(self) -> int:
        return len(self.path)

    @property
    def tokens(self) -> int:
        """Tokens this iteration emits under (β, τ): the kept drafts and the verifier's own token, as far
        as the run went (an EOS it accepted ends the iteration there); drafts the run rejected but (β, τ)
        keeps are counted whole."""
        if self.accepted <= self.recorded_accepted:
            return min(self.accepted + 1, self.recorded_emitted)
        return self.accepted + 1


def spec_rank(step: DraftStep) -> float:
    """The draft's rank in the target's p after its parent, from the recorded top-k (k when outside it; unknown,
    ∞, where no top was recorded)."""
    top = step.p_top
    if top is None:
        return math.inf
    return top.ids.index(step.token_id) if step.token_id in top.ids else len(top.ids)


def spec_test(step: DraftStep, beta: int, tau: float, temperature: float = 1.0) -> bool:
    """Eq. 8 (rank < β) and eq. 9 (log-prob gap to the top-1 ≤ τ) on p recorded at `temperature`."""
    if step.p_top is None or step.p <= 0:
        return False
    gap = temperature * (math.log(step.p_top.probs[0]) - math.log(step.p))
    return spec_rank(step) < beta and gap <= tau


def reverify(trace: Trace, beta: int, tau: float) -> list[Reverified]:
    """Each iteration's drafts under (β, τ); in a tree the path takes, among a node's passing children,
    the one the target ranks best, as `verification.spec_verification` does."""
    temperature = 1.0 if trace.settings.greedy else trace.settings.temperature   # p's own (see above)
    out = []
    for it in trace.iterations:
        passed = [spec_test(step, beta, tau, temperature) for step in it.drafts]
        path = walk(passed, it.parents, [spec_rank(step) for step in it.drafts])[0]
        out.append(Reverified(it.index, it.drafted, path, passed, it.accepted, len(it.emitted_ids)))
    return out


def kept_drafts(verdicts: list[Reverified]) -> tuple[int, int]:
    """Drafts kept under (β, τ), and as the run recorded them."""
    return sum(v.accepted for v in verdicts), sum(v.recorded_accepted for v in verdicts)


def warped_note(s: DecodeSettings) -> str | None:
    """What re-verifying a run that sampled from a warped p must say (see above); None when p was not warped."""
    if s.greedy or (s.temperature == 1 and not s.top_k and s.top_p == 1):
        return None
    return (f"This run sampled from p warped at T = {s.temperature:g}: the recorded log-prob gaps are rescaled to "
            "T = 1 (× T), as Spec-Verification reads them"
            + ("; its top-k / top-p cut left p = 0 outside, and such drafts fail at any β and τ."
               if s.top_k or s.top_p < 1 else "."))


def mean_tokens(verdicts: list[Reverified]) -> float:
    """SpecDec's Tok.: tokens per iteration, the verifier's own token at the bifurcation included; with
    the run's own β and τ it is the run's tokens / iteration."""
    return sum(v.tokens for v in verdicts) / len(verdicts) if verdicts else 0.0
