"""The benchmark's prompt set: a JSON file of prompts, each with an id and a category.

The corpus's held-out file (`assets/corpus/heldout.json`) reads as a prompt set too: each prompt's
kind is its category and its conversation (a multi-turn prompt keeps its earlier turns) its text.

So does a public benchmark's question file in MT-bench's JSON Lines format (one `{"question_id",
"category", "turns"}` per line), which Spec-Bench (Xia et al. 2024) shares: `data/spec_bench/question.jsonl`
in its repository holds its six categories (MT-bench's eight, translation, summarization, qa,
math_reasoning, rag). Each question's first turn is the prompt: a second turn follows the model's own first
answer, which a prompt set cannot hold. No drafter trains or tunes on these: they are for measuring."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specviz.errors import SpecvizError

DEFAULT_PROMPTS = Path(__file__).resolve().parents[2] / "assets" / "bench_prompts.json"


@dataclass(frozen=True)
class BenchPrompt:
    id: str
    category: str
    text: str | list[dict]    # the user's text, or a conversation ending with the user's turn


def load_prompts(path: str | Path = DEFAULT_PROMPTS, categories: list[str] | None = None,
                 per_category: int | None = None) -> list[BenchPrompt]:
    """Prompts of the chosen categories (all when None), at most `per_category` of each. `path` may name
    several sets, comma-separated, for one run over all of them: a category an earlier set already
    has is called `<file stem>/<category>` in a later one (the held-out kinds' "chat" beside the shipped
    "chat")."""
    prompts: list[BenchPrompt] = []
    for one in str(path).split(","):
        taken = {p.category for p in prompts}
        stem = Path(one).stem
        prompts += [p if p.category not in taken else BenchPrompt(f"{stem}/{p.id}", f"{stem}/{p.category}", p.text)
                    for p in _read(one)]
    if categories:
        unknown = set(categories) - {p.category for p in prompts}
        if unknown:
            raise SpecvizError(f"no prompts in categories {', '.join(sorted(unknown))} in {path}")
        prompts = [p for p in prompts if p.category in categories]
    if per_category is not None:
        seen: dict[str, int] = {}
        kept = []
        for p in prompts:
            seen[p.category] = seen.get(p.category, 0) + 1
            if seen[p.category] <= per_category:
                kept.append(p)
        prompts = kept
    if not prompts:
        raise SpecvizError(f"no prompts selected from {path}")
    return prompts


def _read(path: str) -> list[BenchPrompt]:
    try:
        if path.endswith(".jsonl"):
            rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
            return [BenchPrompt(f"{r['category']}-{r['question_id']}", r["category"], r["turns"][0]) for r in rows]
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict) or not isinstance(data.get("prompts"), list):
            raise TypeError('it holds no "prompts" list (a JSON object whose "prompts" each have an id, a category '
                            "and a text; or a .jsonl of questions)")
        if data.get("format") == "specviz-corpus-heldout":
            return [BenchPrompt(f"{p['kind']}-{p['key']}", p["kind"], p["messages"]) for p in data["prompts"]]
        return [BenchPrompt(p["id"], p["category"], p["text"]) for p in data["prompts"]]
    except KeyError as error:
        raise SpecvizError(f"cannot read the prompt set {path}: a prompt has no {error} field") from error
    except (OSError, ValueError, TypeError) as error:
        raise SpecvizError(f"cannot read the prompt set {path}: {error}") from error
