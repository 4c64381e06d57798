"""Are two MATH-style answers the same mathematical object?

Steps of :func:`is_equiv` (after the MATH reference grader and lm-evaluation-harness ``minerva_math``):

1. normalise both with :func:`~railsweep.tasks.answers.math_boxed.strip_math`; equal strings are equal;
2. a bracketed list splits at its top-level commas: a tuple or interval (``(1,2]``) is equal when its brackets
   and its parts are, in order; a set ``\\{1,2\\}`` and a bare list ``1, 2`` (MATH's "enter all solutions")
   when their parts pair up in any order; an interval union splits at ``\\cup``;
3. a single answer is read into sympy (:mod:`~railsweep.tasks.answers.latex_sympy`), else equal by step 1 only;
4. **numbers**: when either side was written with a decimal point, equal within a relative :data:`REL_TOL`
   (``0.333333`` is ``\\frac13``, ``0.33`` is not); otherwise their difference is 0 to :data:`EXACT_DIGITS`
   significant digits and ``sympy.simplify`` confirms it (one past :data:`TIMEOUT_S` leaves that verdict);
5. **expressions** with variables: ``sympy.simplify(a - b) == 0`` within :data:`TIMEOUT_S`.

Nothing here raises on bad input: every failure or timeout reads as "not equal".
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import sympy

from railsweep.tasks.answers.latex_sympy import LatexError, Parsed, parse_latex
from railsweep.tasks.answers.math_boxed import strip_math

REL_TOL = 1e-6  # relative tolerance when either answer is written as a decimal
EXACT_DIGITS = 50  # significant digits for the numeric check of two exact numbers
TIMEOUT_S = 2.0  # longest sympy.simplify call (only enforced on the main thread, where signals work)
_OPEN = {"(": ")", "[": "]"}
_T = TypeVar("_T")


def _with_timeout(fn: Callable[[], _T], seconds: float) -> _T:
    """``fn()``, interrupted by TimeoutError after ``seconds`` on the main thread of a POSIX process (elsewhere
    it runs to completion: :mod:`railsweep.tasks.answers.latex_sympy` bounds the sizes it is handed)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return fn()

    def _raise(signum, frame):
        raise TimeoutError(f"sympy took longer than {seconds}s")

    previous = signal.signal(signal.SIGALRM, _raise)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)  # a timer the caller armed (pytest-timeout...)
    t0 = time.monotonic()
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:  # re-arm the caller's timer with what is left of it (it fires at most `seconds` late)
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - t0), 1e-3))


def split_top_level(s: str, sep: str = ",") -> list[str]:
    """``s`` split at ``sep`` outside any (), [], {} nesting."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(s[start:])
    return parts


def _bracketed(s: str) -> tuple[str, list[str], str] | None:
    """(opening, parts, closing) of a list ``(a,b)``/``[a,b)``/``\\{a,b\\}`` spanning the whole string, else None."""
    if s.startswith("\\{") and s.endswith("\\}"):
        return "{", split_top_level(s[2:-2]), "}"
    if len(s) < 2 or s[0] not in _OPEN or s[-1] not in ")]":
        return None
    depth = 0
    for i, c in enumerate(s):
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and i < len(s) - 1:
            return None  # "(1)+(2)": the first bracket closes early
    parts = split_top_level(s[1:-1])
    return (s[0], parts, s[-1]) if len(parts) > 1 else None


def _parse(s: str) -> Parsed | None:
    try:
        return parse_latex(s)
    except (LatexError, ArithmeticError, TypeError, ValueError, RecursionError):
        return None


def _simplifies_to_zero(diff: sympy.Expr) -> bool | None:
    """True/False from ``sympy.simplify(diff) == 0``; None when it timed out or failed."""
    try:
        return bool(_with_timeout(lambda: sympy.simplify(diff) == 0, TIMEOUT_S))
    except (TimeoutError, ArithmeticError, TypeError, ValueError, RecursionError):
        return None


def _numbers_equal(a: Parsed, b: Parsed) -> bool:
    """Step 4: two numbers, with the decimal tolerance or exactly (module docstring)."""
    try:
        va, vb = sympy.N(a.expr, EXACT_DIGITS), sympy.N(b.expr, EXACT_DIGITS)
        if not (va.is_finite and vb.is_finite):
            return bool(va == vb) and va.is_infinite is True  # oo == oo, -oo == -oo; nan never
        if va.is_real is False or vb.is_real is False:
            return _simplifies_to_zero(a.expr - b.expr) is True
        scale = max(abs(va), abs(vb), sympy.Integer(1))
        gap = abs(va - vb)
        if a.has_decimal or b.has_decimal:
            return bool(gap <= REL_TOL * scale)
        if gap > sympy.Float(10) ** (10 - EXACT_DIGITS) * scale:
            return False
        return _simplifies_to_zero(a.expr - b.expr) is not False
    except (TypeError, ValueError, ArithmeticError, RecursionError):
        return False


def _single_equal(x: str, y: str) -> bool:
    """Steps 3-5 for one answer each."""
    if x == y:
        return True
    a, b = _parse(x), _parse(y)
    if a is None or b is None:
        return False
    if not a.expr.free_symbols and not b.expr.free_symbols:
        return _numbers_equal(a, b)
    if a.expr.free_symbols != b.expr.free_symbols:
        return False
    return _simplifies_to_zero(a.expr - b.expr) is True


def _unordered_equal(xs: list[str], ys: list[str]) -> bool:
    if len(xs) != len(ys):
        return False
    left = list(ys)
    for x in xs:
        match = next((i for i, y in enumerate(left) if _single_equal(x, y)), None)
        if match is None:
            return False
        left.pop(match)
    return True


def _normalised_equal(x: str, y: str) -> bool:
    """Steps 2-5 on two normalised answers."""
    if x == y:
        return True
    ux, uy = split_top_level(x, "\\cup"), split_top_level(y, "\\cup")
    if len(ux) > 1 or len(uy) > 1:
        return len(ux) == len(uy) and all(_normalised_equal(p, q) for p, q in zip(ux, uy))
    bx, by = _bracketed(x), _bracketed(y)
    if bx is not None or by is not None:
        if bx is None or by is None or (bx[0], bx[2]) != (by[0], by[2]):
            return False
        if bx[0] == "{":
            return _unordered_equal(bx[1], by[1])
        return len(bx[1]) == len(by[1]) and all(_single_equal(p, q) for p, q in zip(bx[1], by[1]))
    lx, ly = split_top_level(x), split_top_level(y)
    if len(lx) > 1 or len(ly) > 1:
        return _unordered_equal(lx, ly)
    return _single_equal(x, y)


@functools.lru_cache(maxsize=1 << 16)
def is_equiv(pred: str | None, gold: str | None) -> bool:
    """Whether answer ``pred`` equals ``gold`` (module docstring); cached: samples repeat their answers."""
    if pred is None or gold is None:
        return False
    try:
        return _normalised_equal(strip_math(pred), strip_math(gold))
    except (ArithmeticError, TypeError, ValueError, RecursionError, TimeoutError):
        return False
