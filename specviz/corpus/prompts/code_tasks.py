"""Code: writing tasks in many languages, and editing tasks on real code from the standard library
(explain, type, document, debug, refactor, test, review, port), some of them long."""

from __future__ import annotations

import ast
import random
from functools import cache

from specviz.corpus.prompts.bugs import inject_bug
from specviz.corpus.prompts.code_specs import (
    FUNCTIONS,
    LANGUAGES,
    PROGRAMS,
    QUESTIONS,
    SHELL_TASKS,
    SQL_QUERIES,
    SQL_SCHEMAS,
)
from specviz.corpus.prompts.phrasing import frame, instruct, lay_out
from specviz.corpus.prompts.prompt import CorpusPrompt, ask
from specviz.corpus.prompts.splits import split_of
from specviz.corpus.prompts.stdlib_source import CodeUnit, module_scan, modules_of
from specviz.corpus.prompts.topics import slug

LONG_CODE_CHARS = 1_050          # about 300 tokens of code at 3.5 characters a token
LONG_SHARE = 0.35                # of the editing tasks

WRITE_FUNCTION = (
    "Write a {lang} function that {spec}.", "In {lang}, how would I write a function that {spec}?",
    "Can you give me {lang} code for a function that {spec}? Please add a few test cases.",
    "I need a {lang} function that {spec}. Keep it idiomatic.", "Show me two ways to write a function in {lang} that "
    "{spec}, and compare them.", "Write a well-commented {lang} function that {spec}, and explain its time complexity.",
    "{lang}: write a function that {spec}. Handle edge cases like empty input.",
    "Implement a function that {spec}. Use {lang}.", "could you write me a function that {spec} in {lang}",
    "For a coding interview practice: write a function in {lang} that {spec}, then walk through an example input.",
    "Write a {lang} function that {spec}, plus a short usage example.",
)
WRITE_SQL = (
    "Given the tables {schema}, write a SQL query that returns {query}.",
    "Schema: {schema}.\n\nWrite a query for {query}, and explain how it works.",
    "I have a database with {schema}. How do I get {query} in SQL?",
    "Write a PostgreSQL query listing {query}. Tables: {schema}.",
)
WRITE_SHELL = (
    "Write a bash script that {task}.", "How can I write a shell script that {task}? Please explain each line.",
    "Give me a one-liner or a short script that {task} on Linux.", "Write a POSIX sh script that {task}, with error "
    "handling.", "Write a PowerShell script that {task}.",
)
WRITE_PROGRAM = (
    "Write {program} in {lang}.", "Build {program} in {lang}. Keep it in one file and explain the design.",
    "Can you write {program}? Use {lang} and include comments.", "I'm learning {lang}. Write {program} that a "
    "beginner can follow.",
)
EDIT = {
    "explain": ("Explain what this code does:", "Walk me through this function line by line.",
                "What does this code do? Summarise it in plain English.", "I found this in Python's standard library "
                "(`{module}`). What is it for and how does it work?", "Can you explain the logic of `{name}` below?",
                "Explain this code to someone who is new to Python.", "What are the inputs and outputs of this code, "
                "and what could go wrong?"),
    "hints": ("Add type hints to this code.", "Add type annotations to every function below and explain any tricky "
              "ones.", "Please add Python type hints and keep the behaviour the same."),
    "docs": ("Write docstrings for this code.", "Add a Google-style docstring to each function and class below.",
             "Document this code: add a docstring and comments where the logic is not obvious.",
             "Write a short Markdown reference for `{name}` based on its code."),
    "bug": ("This function has a bug. Can you find it and fix it?", "Something is off in this code: it gives wrong "
            "results in some cases. What's wrong?", "Review this code for bugs and edge cases.",
            "My tests fail after I edited `{name}`. Can you spot the mistake?", "Is there a bug in this code? Explain "
            "your reasoning before giving a fix."),
    "refactor": ("Refactor this code to be more readable.", "Simplify this code without changing what it does.",
                 "Rewrite this in a more modern Python style.", "How would you restructure `{name}` to make it easier "
                 "to test?", "Suggest improvements to this code and show the improved version."),
    "tests": ("Write pytest unit tests for this code.", "Write unittest test cases for `{name}` covering normal use "
              "and edge cases.", "What inputs would you test this code with? Write the tests.",
              "Write a few property-based tests (Hypothesis) for this code."),
    "port": ("Translate this Python code to {lang}.", "Port `{name}` to {lang}, keeping the same behaviour.",
             "How would this look in {lang}? Rewrite it idiomatically.", "Rewrite this Python code in {lang} and "
             "point out the main differences."),
    "review": ("Do a code review of this snippet. What would you improve?", "What is the time and space complexity "
               "of this code?", "Add comments explaining each step of this code.",
               "Is this code thread-safe? Explain.", "What design decisions were made in this code, and why?"),
}
PORT_TO = tuple(lang for lang in LANGUAGES if lang != "Python")
LAYOUTS = ("{ask}\n\n```python\n{code}```", "```python\n{code}```\n\n{ask}", "{ask}\n\n{code}",
           "{ask}\n\nHere is the code:\n\n```\n{code}```", "Code:\n```python\n{code}```\nQuestion: {ask}")


def draw_code(rng: random.Random, split: str) -> CorpusPrompt:
    """A coding prompt of `split`: half writing tasks, half editing tasks on standard library code
    (writing only when no standard library source is installed)."""
    if rng.random() < 0.5 and stdlib_units(split, long=False):
        return draw_edit(rng, split)
    return draw_write(rng, split)


def draw_write(rng: random.Random, split: str) -> CorpusPrompt:
    """A task to write code from scratch."""
    while True:
        what = rng.random()
        lang = rng.choice(LANGUAGES)
        if what < 0.5:
            spec = rng.choice(FUNCTIONS)
            text, source = rng.choice(WRITE_FUNCTION).format(lang=lang, spec=spec), f"spec:{slug(spec)}"
        elif what < 0.62:
            schema = rng.choice(tuple(SQL_QUERIES))
            query = rng.choice(SQL_QUERIES[schema])
            text = rng.choice(WRITE_SQL).format(schema=SQL_SCHEMAS[schema], query=query)
            source = f"sql:{schema}:{slug(query)}"
        elif what < 0.74:
            task = rng.choice(SHELL_TASKS)
            text, source = rng.choice(WRITE_SHELL).format(task=task), f"shell:{slug(task)}"
        elif what < 0.88:
            program = rng.choice(PROGRAMS)
            text, source = rng.choice(WRITE_PROGRAM).format(program=program, lang=lang), f"program:{slug(program)}"
        else:
            question = rng.choice(QUESTIONS)
            text, source = question, f"question:{slug(question)}"
        if split_of(source) == split:
            return ask("code", instruct(frame(text[:1].upper() + text[1:], rng, chatter=0.35, typos=0.06), rng, 0.1),
                       source)


def draw_edit(rng: random.Random, split: str) -> CorpusPrompt:
    """A task on a function, class or method of a standard library module of `split`."""
    long = rng.random() < LONG_SHARE and bool(stdlib_units(split, long=True))
    unit = rng.choice(stdlib_units(split, long=long))
    task = rng.choice(tuple(EDIT))
    if task == "hints" and unit.annotated:
        task = "explain"
    code = unit.source
    if task == "bug" and rng.random() < 0.8:
        code = inject_bug(code, rng) or code
    if task in ("docs", "hints") or rng.random() < 0.2:
        code = strip_docstrings(code)
    request = rng.choice(EDIT[task]).format(module=unit.module, name=unit.qualname, lang=rng.choice(PORT_TO))
    text = lay_out(rng.choice(LAYOUTS), frame(request, rng, chatter=0.3), code=code)
    return ask("code", instruct(text, rng, 0.08, brief=False), f"stdlib:{unit.module}.{unit.qualname}")


@cache
def stdlib_units(split: str, long: bool) -> tuple[CodeUnit, ...]:
    """The code units of `split`'s standard library modules, short ones or long ones (all modules
    parsed on the first call: about two seconds)."""
    return tuple(u for m in modules_of(split) for u in module_scan(m).units
                 if (len(u.source) >= LONG_CODE_CHARS) == long)


def strip_docstrings(source: str) -> str:
    """`source` without the docstrings of its functions and classes (a body that is only a
    docstring keeps it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and len(node.body) > 1:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                drop.update(range(first.lineno, first.end_lineno + 1))
    return "".join(line for i, line in enumerate(source.splitlines(keepends=True), 1) if i not in drop)
