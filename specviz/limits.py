"""Limits a public host sets on every run through environment variables (unset: no limit).

SPECVIZ_MAX_PROMPT_TOKENS   prompt tokens (after the chat template) a run accepts
SPECVIZ_MAX_NEW_TOKENS      max_new_tokens a run may ask for
SPECVIZ_MAX_RUN_SECONDS     seconds of decoding, after which the run stops at the end of its current iteration;
                            the trace keeps what was decided and says the limit stopped it (`Trace.stopped_by`)
SPECVIZ_MAX_STUDY_SECONDS   seconds of a study (a γ sweep, a β × τ grid, a drafter comparison, with their rounds),
                            after which it starts no new run once its baseline and first variant have run; the
                            study keeps the runs finished and says the limit stopped it (`Study.stopped_by`)
SPECVIZ_KEPT_PAIRS          model pairs (a target and its drafter) the app's decoder process keeps loaded: the ones
                            used last, `KEPT_PAIRS` unless set; a new pair lets the least recently used go first
SPECVIZ_REMOTE_TARGETS      the servers (URLs, separated by spaces or commas) the app's visitors may use as a
                            remote target (`specviz.remote`); unset, the app offers none, so a visitor cannot
                            make the host send requests elsewhere. The CLI and the library trust their caller.
SPECVIZ_CUSTOM_MODELS       0: the app's visitors pick among the embedded and preset pairs only, and cannot name a
                            hub id (a download of any size) or a directory or file on the host; unset or 1: they
                            may (the app run on one's own machine). The CLI and the library trust their caller.

`Run` reads them when it starts (`host_limits`), a study likewise (`sweep.timed_study`); the decoder's own short
measuring runs (the tree sizer's calibration, a new model pair's warm-up) pass `NO_LIMITS`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from specviz.errors import SpecvizError
from specviz.remote import check_url

PROMPT_TOKENS = "SPECVIZ_MAX_PROMPT_TOKENS"
NEW_TOKENS = "SPECVIZ_MAX_NEW_TOKENS"
RUN_SECONDS = "SPECVIZ_MAX_RUN_SECONDS"
STUDY_SECONDS = "SPECVIZ_MAX_STUDY_SECONDS"
REMOTE_TARGETS = "SPECVIZ_REMOTE_TARGETS"
CUSTOM_MODELS = "SPECVIZ_CUSTOM_MODELS"
KEPT = "SPECVIZ_KEPT_PAIRS"
KEPT_PAIRS = 2   # a host's visitors try pair after pair, and each pair kept holds its weights in memory


@dataclass(frozen=True)
class Limits:
    prompt_tokens: int | None = None
    new_tokens: int | None = None
    run_seconds: float | None = None
    study_seconds: float | None = None

    def check(self, prompt_tokens: int, max_new_tokens: int) -> None:
        """Refuse a run whose prompt or token budget is over the host's limits."""
        self.check_prompt(prompt_tokens)
        if self.new_tokens is not None and max_new_tokens > self.new_tokens:
            raise SpecvizError(f"max_new_tokens is {max_new_tokens}; this host allows at most "
                               f"{self.new_tokens} ({NEW_TOKENS})")

    def check_prompt(self, prompt_tokens: int) -> None:
        """Refuse a prompt longer than the host accepts."""
        if self.prompt_tokens is not None and prompt_tokens > self.prompt_tokens:
            raise SpecvizError(f"the prompt has {prompt_tokens} tokens; this host accepts at most "
                               f"{self.prompt_tokens} ({PROMPT_TOKENS})")

    def out_of_time(self, seconds: float) -> str | None:
        """Why a run that has decoded for `seconds` must stop, or None while it may go on."""
        if self.run_seconds is None or seconds < self.run_seconds:
            return None
        return f"the host's run-time limit of {self.run_seconds:g} s ({RUN_SECONDS})"

    def study_over(self, seconds: float) -> str | None:
        """Why a study that has run for `seconds` must start no new run, or None while it may go on."""
        if self.study_seconds is None or seconds < self.study_seconds:
            return None
        return f"the host's study time limit of {self.study_seconds:g} s ({STUDY_SECONDS})"


NO_LIMITS = Limits()


def host_limits() -> Limits:
    """The limits set in the environment; a malformed value raises SpecvizError naming the variable."""
    return Limits(_read(PROMPT_TOKENS, int), _read(NEW_TOKENS, int), _read(RUN_SECONDS, float),
                  _read(STUDY_SECONDS, float))


def kept_pairs() -> int:
    """How many model pairs the decoder process keeps loaded (`SPECVIZ_KEPT_PAIRS`, else `KEPT_PAIRS`)."""
    kept = _read(KEPT, int)
    return KEPT_PAIRS if kept is None else kept


def _read(name: str, kind: type[int] | type[float]) -> int | float | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    what = "a whole number >= 1" if kind is int else "a number of seconds > 0"
    try:
        value = kind(text)
    except ValueError:
        raise SpecvizError(f"{name} must be {what}, got {text!r}") from None
    if not (value >= 1 if kind is int else 0 < value < float("inf")):
        raise SpecvizError(f"{name} must be {what}, got {text!r}")
    return value


def remote_targets() -> list[str]:
    """The remote target servers this host allows its visitors, as normalised URLs (`remote.check_url`)."""
    return [check_url(url) for url in os.environ.get(REMOTE_TARGETS, "").replace(",", " ").split()]


def check_remote_allowed(url: str) -> None:
    """Refuse a remote target URL outside the host's allowlist (`SPECVIZ_REMOTE_TARGETS`)."""
    allowed = remote_targets()
    if check_url(url) not in allowed:
        where = ", ".join(allowed) if allowed else f"none (the host sets {REMOTE_TARGETS} to allow some)"
        raise SpecvizError(f"{url} is not a remote target this host allows; it allows {where}")


def custom_models() -> bool:
    """Whether the app's visitors may name their own models (`SPECVIZ_CUSTOM_MODELS`: 0 or 1, unset 1)."""
    text = os.environ.get(CUSTOM_MODELS, "").strip()
    if text not in ("", "0", "1"):
        raise SpecvizError(f"{CUSTOM_MODELS} must be 0 or 1, got {text!r}")
    return text != "0"
