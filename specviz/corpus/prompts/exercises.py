"""Arithmetic and algebra exercises: equations, fractions, polynomials, number facts, statistics."""

from __future__ import annotations

from specviz.corpus.prompts.math_templates import Problem


def _numbers(v: dict, r) -> str:
    return ", ".join(str(r.randint(1, 30)) for _ in range(r.randint(5, 9)))


def _term(n: int, unit: str = "") -> str:
    """A signed term as written after another: "+ 3x", "- 5"."""
    return f"{'-' if n < 0 else '+'} {abs(n)}{unit}"


def _nonzero(v: dict, r) -> int:
    return r.choice((-1, 1)) * r.randint(2, 9)


EXERCISES: tuple[Problem, ...] = (
    Problem("linear", "Solve for x: {p}x {qt} = {s}",
            {"p": (2, 15), "x": (-20, 30), "q": (-50, 50), "qt": lambda v, r: _term(v["q"]),
             "s": lambda v, r: v["p"] * v["x"] + v["q"]}),
    Problem("linear-both", "Solve {p}x - {q} = {s}x {tt}",
            {"p": (3, 12), "s": lambda v, r: r.randint(2, v["p"] - 1) if v["p"] > 3 else 2, "x": (-15, 15),
             "q": (1, 40), "t": lambda v, r: (v["p"] - v["s"]) * v["x"] - v["q"], "tt": lambda v, r: _term(v["t"])}),
    Problem("system", "Solve the system of equations: {p}x + {q}y = {s} and {t}x - {u}y = {w}.",
            {"x": (-9, 9), "y": (-9, 9), "p": (2, 7), "q": (2, 7), "t": (2, 7), "u": (2, 7),
             "s": lambda v, r: v["p"] * v["x"] + v["q"] * v["y"], "w": lambda v, r: v["t"] * v["x"] - v["u"] * v["y"]}),
    Problem("quadratic", "Solve x² {bx} {c} = 0.",
            {"r1": (-9, 12), "r2": (-9, 12), "bx": lambda v, r: _term(-v["r1"] - v["r2"], "x"),
             "c": lambda v, r: _term(v["r1"] * v["r2"])}),
    Problem("multiply", "Compute {x} × {y} by hand, showing the partial products.", {"x": (12, 999), "y": (11, 99)}),
    Problem("long-division", "Divide {x} by {y} using long division. What are the quotient and the remainder?",
            {"x": (100, 99999), "y": (3, 47)}),
    Problem("percent-of", "What is {p}% of {q}?", {"p": (1, 99), "q": (20, 5000, 10)}),
    Problem("fractions", "Add {x}/{y} and {z}/{w}, and write the result in lowest terms.",
            {"x": (1, 9), "y": (2, 12), "z": (1, 9), "w": (2, 12)}),
    Problem("fraction-divide", "Divide {x}/{y} by {z}/{w} and simplify.",
            {"x": (1, 9), "y": (2, 12), "z": (1, 9),
             "w": (2, 12)}),
    Problem("expand", "Expand and simplify (x + {p})(x - {q}).", {"p": (1, 12), "q": (1, 12)}),
    Problem("simplify", "Simplify {p}(x + {q}) - {s}(x - {t}).",
            {"p": (2, 9), "q": (1, 12), "s": (2, 9), "t": (1, 12)}),
    Problem("derivative", "Find the derivative of f(x) = {p}x³ - {q}x² + {s}x - {t}, and the slope at x = {x}.",
            {"p": (1, 9), "q": (1, 9), "s": (1, 20), "t": (1, 20), "x": (-3, 4)}),
    Problem("integral", "Evaluate the integral of {p}x² + {q}x from 0 to {s}.",
            {"p": (1, 9), "q": (1, 9), "s": (1, 6)}),
    Problem("gcd-lcm", "Find the greatest common divisor and the least common multiple of {x} and {y}.",
            {"g": (2, 15), "x": lambda v, r: v["g"] * r.randint(2, 20), "y": lambda v, r: v["g"] * r.randint(2, 20)}),
    Problem("prime", "Is {x} a prime number? Explain how you checked.", {"x": (51, 997, 2)}),
    Problem("statistics", "Find the mean, median and range of these numbers: {xs}.", {"xs": _numbers}),
    Problem("slope", "Find the equation of the line through ({x1}, {y1}) and ({x2}, {y2}).",
            {"x1": (-8, 8), "y1": (-8, 8), "x2": lambda v, r: v["x1"] + r.randint(1, 6), "y2": (-8, 8)}),
    Problem("binary", "Convert {x} to binary and to hexadecimal.", {"x": (20, 5000)}),
    Problem("powers", "Without a calculator, compute {p}^{q} and explain a quick way to do it.",
            {"p": (2, 9), "q": (2, 6)}),
    Problem("inequality", "Solve the inequality {p}x - {q} > {s} and describe the solution set.",
            {"p": _nonzero, "q": (1, 30), "s": (-20, 40)}),
)
