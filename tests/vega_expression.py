"""A tiny evaluator for the arithmetic part of Vega's expression language, with JavaScript's number
semantics (and its `+` of a string and a number), so a test can run a chart's own expression strings in
Python."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:e[-+]?\d+)?)|([A-Za-z_][\w.]*)|('[^']*')"
                   r"|(===|!==|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:(),]))")
Env = dict[str, float]
Node = Callable[[Env], float]


def _divide(a: float, b: float) -> float:
    """JavaScript's division: by zero gives ±Infinity or NaN instead of raising."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def _text(x: float | str) -> str:
    """JavaScript's String(x) for the numbers a label shows: 16, not 16.0."""
    return x if isinstance(x, str) else str(int(x)) if float(x).is_integer() else repr(x)


def _add(a: float | str, b: float | str) -> float | str:
    return _text(a) + _text(b) if isinstance(a, str) or isinstance(b, str) else a + b


BINARY: dict[str, Callable[[float, float], float]] = {
    "+": _add, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _divide,
    "%": math.fmod, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "===": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "!==": lambda a, b: a != b}
LEVELS = [("||",), ("&&",), ("==", "===", "!=", "!=="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%")]
FUNCTIONS: dict[str, Callable[..., float]] = {"pow": math.pow, "min": min, "max": max, "abs": abs, "sqrt": math.sqrt,
                                              "exp": math.exp, "log": math.log, "floor": math.floor}


def tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text.rstrip()):
        match = TOKEN.match(text, at)
        if match is None:
            raise ValueError(f"cannot read {text[at:]!r}")
        out.append(match.group(match.lastindex))
        at = match.end()
    return out


class Parser:
    def __init__(self, text: str) -> None:
        self.toks, self.at = tokens(text), 0

    def peek(self) -> str | None:
        return self.toks[self.at] if self.at < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise ValueError(f"expected {expected!r}, got {tok!r}")
        self.at += 1
        return tok

    def ternary(self) -> Node:
        test = self.binary(0)
        if self.peek() != "?":
            return test
        self.take("?")
        yes = self.ternary()
        self.take(":")
        no = self.ternary()
        return lambda env: yes(env) if test(env) else no(env)

    def binary(self, level: int) -> Node:
        if level == len(LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in LEVELS[level]:
            op = self.take()
            right = self.binary(level + 1)
            if op == "&&":
                left = (lambda a, b: lambda env: a(env) and b(env))(left, right)
            elif op == "||":
                left = (lambda a, b: lambda env: a(env) or b(env))(left, right)
            else:
                left = (lambda f, a, b: lambda env: f(a(env), b(env)))(BINARY[op], left, right)
        return left

    def unary(self) -> Node:
        if self.peek() in ("-", "!"):
            op, inner = self.take(), self.unary()
            return (lambda env: -inner(env)) if op == "-" else (lambda env: not inner(env))
        return self.primary()

    def primary(self) -> Node:
        tok = self.take()
        if tok == "(":
            inner = self.ternary()
            self.take(")")
            return inner
        if tok[0].isdigit():
            return lambda env: float(tok)
        if tok[0] == "'":
            return lambda env: tok[1:-1]
        if self.peek() == "(":
            self.take("(")
            args = [self.ternary()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.ternary())
            self.take(")")
            return lambda env: FUNCTIONS[tok](*(a(env) for a in args))
        return lambda env: env[tok]


def evaluate(text: str, env: Env) -> float:
    """The value of the Vega expression `text` with identifiers (`alpha`, `datum.gamma`, …) from `env`."""
    parser = Parser(text)
    node = parser.ternary()
    if parser.peek() is not None:
        raise ValueError(f"unread tokens from {parser.peek()!r} in {text!r}")
    return node(env)
