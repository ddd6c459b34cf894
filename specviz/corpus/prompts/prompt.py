"""One prompt of the corpus: the chat messages to answer, its kind and where its content came from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CorpusPrompt:
    """A prompt for the target to answer.

    messages: chat messages {"role": "user"|"assistant", "content": str}; the last is the user's.
    source: where its content came from ("topic:volcanoes", "stdlib:json.decoder.JSONDecoder.decode", ...).
    follow_up: a multi-turn prompt's second user turn, asked after the target's answer to `messages`.
    """

    kind: str
    messages: tuple[dict, ...]
    source: str
    follow_up: str = ""

    @property
    def text(self) -> str:
        """The user's last message."""
        return self.messages[-1]["content"]


def ask(kind: str, text: str, source: str) -> CorpusPrompt:
    """A one-message prompt."""
    return CorpusPrompt(kind, ({"role": "user", "content": text},), source)
