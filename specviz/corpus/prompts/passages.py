"""Real passages found on this machine: licence texts, Debian package READMEs and copyright notes,
installed Python packages' descriptions, and the standard library's docstrings.

A document belongs to one split as a whole (its source is its split key); a standard library
module's docstrings share their split with its code. Paragraphs repeated from an earlier document
(the same licence notice in a hundred copyright files) are kept only the first time.
"""

from __future__ import annotations

import email
import gzip
import random
import site
import sysconfig
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from pathlib import Path

from specviz.corpus.prompts.cleaning import clean_debian_copyright, clean_markup, is_heading
from specviz.corpus.prompts.splits import split_of
from specviz.corpus.prompts.stdlib_source import module_key, module_scan, modules_of
from specviz.errors import SpecvizError

LICENSES = Path("/usr/share/common-licenses")
DOCS = Path("/usr/share/doc")
MAX_FILE_BYTES = 64_000      # larger files here are mostly licence texts repeated
FAMILIES = ("license", "copyright", "readme", "pypi", "stdlib")


@dataclass(frozen=True)
class Document:
    """A cleaned document: `source` names it ("license:Apache-2.0", "pypi:requests", "stdlib:json")."""

    family: str
    source: str
    title: str
    paragraphs: tuple[str, ...]

    @cached_property
    def chars(self) -> int:
        return sum(len(p) + 2 for p in self.paragraphs)


def site_packages() -> list[Path]:
    """The folders installed Python packages live in."""
    paths = sysconfig.get_paths()
    found = [paths["purelib"], paths["platlib"], *site.getsitepackages()]
    return sorted({Path(p).resolve() for p in found if Path(p).is_dir()})


def read_text(path: Path) -> str:
    """A text file's contents, gunzipped if it ends in .gz ("" if unreadable or too large)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return ""
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return ""
    return raw.decode("utf-8", errors="replace")


def _raw_documents():
    """(family, source, title, paragraphs) of every document outside the standard library, in a fixed order."""
    seen: set[Path] = set()

    def new(path: Path) -> bool:
        real = path.resolve()
        if real in seen or not real.is_file():
            return False
        seen.add(real)
        return True

    for path in sorted(LICENSES.iterdir()) if LICENSES.is_dir() else ():
        if new(path):
            yield "license", f"license:{path.name}", path.name, clean_markup(read_text(path))
    for folder in site_packages():
        for meta in sorted(folder.glob("*.dist-info/METADATA")):
            if new(meta):
                message = email.message_from_string(read_text(meta))
                body = message.get_payload() or message.get("Description", "")
                name = str(message.get("Name", meta.parent.name.split("-")[0]))
                yield "pypi", f"pypi:{name.lower()}", name, clean_markup(str(body))
    packages = sorted(DOCS.iterdir()) if DOCS.is_dir() else ()
    for package in packages:
        for readme in sorted(package.glob("README*")) if package.is_dir() else ():
            if new(readme):
                name = readme.name.removesuffix(".gz")
                yield ("readme", f"readme:{package.name}/{name}", f"{package.name} {name}",
                       clean_markup(read_text(readme)))
    for package in packages:
        copyright_file = package / "copyright"
        if new(copyright_file):
            yield ("copyright", f"copyright:{package.name}", f"{package.name} copyright",
                   clean_debian_copyright(read_text(copyright_file)))


@lru_cache(maxsize=1)
def system_documents() -> tuple[Document, ...]:
    """The documents outside the standard library, each paragraph of 120 characters or more kept
    only in the first document that has it."""
    documents, seen = [], set()
    for family, source, title, paragraphs in _raw_documents():
        kept = []
        for paragraph in paragraphs:
            if len(paragraph) >= 120:
                if paragraph in seen:
                    continue
                seen.add(paragraph)
            kept.append(paragraph)
        if sum(not is_heading(p) for p in kept) >= 1:
            documents.append(Document(family, source, title, tuple(kept)))
    return tuple(documents)


@cache
def stdlib_document(module: str) -> Document:
    """A standard library module's documentation: its docstring, then each public function's,
    class's and method's docstring under a heading naming it."""
    docs = module_scan(module).docs
    paragraphs = clean_markup(docs.doc)
    for heading, doc in docs.api:
        paragraphs += [f"{module}.{heading}" if len(heading) < 60 else f"{module}.{heading.split('(')[0]}",
                       *clean_markup(doc)]
    return Document("stdlib", module_key(module), f"the {module} module", tuple(paragraphs))


@cache
def documents(split: str, family: str, low: int = 0) -> tuple[Document, ...]:
    """The system documents of one family in `split` with at least `low` characters (not the
    standard library's: those are read lazily)."""
    return tuple(d for d in system_documents() if d.family == family and split_of(d.source) == split and d.chars >= low)


def families(split: str) -> tuple[str, ...]:
    """The families with at least one document in `split` on this machine."""
    found = tuple(f for f in FAMILIES if (modules_of(split) if f == "stdlib" else documents(split, f)))
    if not found:
        raise SpecvizError(f"no passages found on this machine (looked in {LICENSES}, {DOCS}, the site-packages "
                           "folders and the standard library's source)")
    return found


def draw_passage(rng: random.Random, split: str, low: int, high: int, weights: dict[str, float] | None = None,
                 prose: bool = False) -> tuple[Document, str]:
    """A document of `split` (family drawn by `weights`) and a run of its consecutive paragraphs
    of `low` to `high` characters, cut at paragraph boundaries (`prose`: sentences only, no
    headings or code)."""
    available = list(families(split))
    weights = weights or {}
    while available:
        family = rng.choices(available, [weights.get(f, 1.0) for f in available])[0]
        long_enough = documents(split, family, low) if family != "stdlib" else ()
        for _ in range(60):
            if family == "stdlib":
                document = stdlib_document(rng.choice(modules_of(split)))
            elif long_enough:
                document = rng.choice(long_enough)
            else:
                break
            text = window(document, rng, low, high, prose)
            if text:
                return document, text
        available.remove(family)       # nothing fits in this family: try the others
    raise SpecvizError(f"no passage of {low}-{high} characters found in the {split} documents on this machine")


def is_prose(paragraph: str) -> bool:
    """Whether a paragraph is running text: sentences, not a heading, list or code."""
    return (paragraph.endswith((".", "!", "?", '"')) and len(paragraph.split()) >= 8
            and not paragraph.startswith("```") and "\n" not in paragraph)


def window(document: Document, rng: random.Random, low: int, high: int, prose: bool = False) -> str:
    """Consecutive paragraphs of `document`, `low` to `high` characters in all, cut at paragraph
    boundaries and not ending on a heading; most start at the top or at a heading ("" if it has
    no such run). `prose`: running text only."""
    paragraphs = document.paragraphs
    if document.chars < low:
        return ""
    goal = rng.uniform(low, high)
    if prose:
        tops = [i for i, p in enumerate(paragraphs) if is_prose(p)]
    else:
        tops = [i for i, p in enumerate(paragraphs) if i == 0 or is_heading(p)]
    if not tops:
        return ""
    starts = [rng.choice(tops) if prose or rng.random() < 0.7 else rng.randrange(len(paragraphs)) for _ in range(6)]
    for start in starts:
        taken, size = [], 0
        for paragraph in paragraphs[start:]:
            if size + len(paragraph) > high or prose and not is_prose(paragraph):
                break
            taken.append(paragraph)
            size += len(paragraph) + 2
            if size >= goal:
                break
        while taken and is_heading(taken[-1]):
            size -= len(taken.pop()) + 2
        if size >= low:
            return "\n\n".join(taken)
    return ""
