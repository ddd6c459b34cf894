"""The drafters that copy what followed the current suffix elsewhere: prompt lookup (`ngram`) looks in the
prompt and the text so far, retrieval (`retrieval`) in a datastore. Both look the suffix up once a step and
tell their situations apart by the length of the match they found."""

from __future__ import annotations

from specviz.drafters.base import Drafter


class SuffixDrafter(Drafter):
    prompt: list[int]

    def begin(self, prompt_ids: list[int]) -> None:
        self.prompt = list(prompt_ids)
        self.found: tuple[int, int, object] = (-1, 0, None)   # (len(generated), n, occurrences) last looked up

    def situation(self, generated: list[int]) -> str:
        """The length of the suffix found: the longer the match, the likelier its continuation is the target's
        (see each drafter's module for what was measured)."""
        n = self.match(generated)[0]
        return f"match {n}" if n else "no match"

    def match(self, generated: list[int]) -> tuple[int, object]:
        """`lookup`'s match length and occurrences, once per length of `generated` (asked by `situation`, then
        by `propose`)."""
        if self.found[0] != len(generated):
            self.found = (len(generated), *self.lookup(generated))
        return self.found[1], self.found[2]

    def lookup(self, generated: list[int]) -> tuple[int, object]:
        """The longest suffix of prompt + generated found, as its length (0: none) and where it occurs."""
        raise NotImplementedError
