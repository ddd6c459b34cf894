"""The Python standard library's own source, read with `ast` one module at a time: its functions,
classes and methods as code, and its docstrings as documentation."""

from __future__ import annotations

import ast
import os
import sysconfig
import textwrap
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from specviz.corpus.prompts.splits import split_of

SKIPPED_PARTS = {"test", "tests", "idle_test", "idlelib", "lib2to3", "turtledemo", "ensurepip", "site-packages",
                 "pydoc_data", "encodings", "__pycache__", "__phello__"}
MAX_FILE_BYTES = 300_000
MIN_UNIT_CHARS, MAX_UNIT_CHARS = 150, 7_000   # about 40 to 2 000 tokens of code


@dataclass(frozen=True)
class CodeUnit:
    """A function, class or method: `source` is its dedented text, decorators included."""

    module: str
    qualname: str
    source: str
    annotated: bool      # whether any argument or return has a type hint


@dataclass(frozen=True)
class ModuleDocs:
    """A module's docstring and its public functions', classes' and methods' docstrings."""

    module: str
    doc: str
    api: tuple[tuple[str, str], ...]     # (heading such as "dumps(obj, *, skipkeys=False)", docstring)


@dataclass(frozen=True)
class ModuleScan:
    """What one module offers: its code units and its documentation."""

    units: tuple[CodeUnit, ...]
    docs: ModuleDocs


@lru_cache(maxsize=1)
def stdlib_modules() -> dict[str, Path]:
    """The standard library's modules (name -> file), none where its source is not installed."""
    root = Path(sysconfig.get_paths()["stdlib"])
    modules = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_PARTS and "-" not in d)
        for name in sorted(f for f in files if f.endswith(".py")):
            parts = (Path(folder) / name).relative_to(root).parts
            modules[".".join(parts).removesuffix(".py").removesuffix(".__init__")] = Path(folder) / name
    return dict(sorted(modules.items()))


def module_key(module: str) -> str:
    """A module's split key: its code and its documentation go to the same split."""
    return f"stdlib:{module}"


@cache
def modules_of(split: str) -> tuple[str, ...]:
    """The standard library modules in `split`."""
    return tuple(m for m in stdlib_modules() if split_of(module_key(m)) == split)


@cache
def module_scan(module: str) -> ModuleScan:
    """One module's code units and docstrings, read when first asked for (parsing them all takes
    seconds); empty if it cannot be read or parsed."""
    try:
        path = stdlib_modules()[module]
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError("too large")
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return ModuleScan((), ModuleDocs(module, "", ()))
    units = _units(module, tree, text.splitlines(keepends=True))
    return ModuleScan(tuple(units), ModuleDocs(module, ast.get_docstring(tree) or "", tuple(_api_docs(tree))))


def _units(module: str, tree: ast.Module, lines: list[str]) -> list[CodeUnit]:
    found = []
    for node, qualname in _definitions(tree):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        source = textwrap.dedent("".join(lines[first - 1:node.end_lineno]))
        if MIN_UNIT_CHARS <= len(source) <= MAX_UNIT_CHARS and source.count("\n") >= 4:
            found.append(CodeUnit(module, qualname, source, _annotated(node)))
    return found


def _definitions(tree: ast.Module):
    """Top-level functions and classes, and the classes' methods, with their qualified names."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node, node.name
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield item, f"{node.name}.{item.name}"


def _annotated(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    return node.returns is not None or any(a.annotation is not None for a in args)


def _api_docs(tree: ast.Module):
    """(heading, docstring) of each public function, class and method with a docstring."""
    for node, qualname in _definitions(tree):
        doc = ast.get_docstring(node)
        if doc and len(doc) >= 60 and not any(part.startswith("_") for part in qualname.split(".")):
            args = f"({ast.unparse(node.args)})" if not isinstance(node, ast.ClassDef) else ""
            yield f"{qualname}{args}", doc
