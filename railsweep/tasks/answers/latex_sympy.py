"""A small LaTeX → sympy reader for the answers MATH-style problems have.

sympy's ``sympy.parsing.latex`` needs ``antlr4`` (or ``lark``); MATH answers use a narrow corner of LaTeX, so a
recursive-descent reader is shorter than another dependency and never executes text (``parse_expr`` would
``eval`` it). It reads numbers (a decimal exactly, as a Rational),
single-letter variables, ``\\pi``, ``\\infty``, ``\\frac``, ``\\sqrt``/``\\sqrt[n]``, ``^``, ``!``,
``+ - * / \\cdot \\times \\div``, implicit products (``2x``, ``2(x+1)``), brackets, ``|x|`` and
``\\sin \\cos \\tan \\ln \\log \\exp``. Anything else raises :class:`LatexError`; so does a number too
large to compute with (past :data:`MAX_EXPONENT` or :data:`MAX_BITS`), so no answer can stall the grader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy

MAX_EXPONENT = 1000  # larger integer exponents / factorial arguments are refused, not computed
MAX_BITS = 100_000  # an exact power with a larger result is refused, not computed
MAX_LENGTH = 400  # longer answers are not read (no MATH answer comes close)

_TOKEN = re.compile(r"\s*(\\[a-zA-Z]+|\d+\.\d*|\.\d+|\d+|[a-zA-Z]|[-+*/^!(){}\[\]|])")
_FUNCTIONS = {"\\sin": sympy.sin, "\\cos": sympy.cos, "\\tan": sympy.tan,
              "\\ln": sympy.log, "\\log": sympy.log, "\\exp": sympy.exp}  # fmt: skip
_CONSTANTS = {"\\pi": sympy.pi, "\\infty": sympy.oo}
_TIMES = ("*", "\\cdot", "\\times")
_DIVIDE = ("/", "\\div")


class LatexError(ValueError):
    """The text is not LaTeX this reader understands (or would be too costly to evaluate)."""


@dataclass(frozen=True)
class Parsed:
    """A parsed answer: the sympy value and whether a decimal was written (then equality is numeric)."""

    expr: sympy.Expr
    has_decimal: bool


def tokenize(text: str) -> list[str]:
    """Split LaTeX into commands, numbers, letters and operators; an unknown character raises LatexError."""
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise LatexError(f"unexpected character {text[pos:].lstrip()[:1]!r} in {text!r}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


class _Reader:
    """Recursive descent over the tokens: expr := term (± term)*; term := unary (op? unary)*;
    unary := -unary | power; power := postfix (^ group)?; postfix := atom !*."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.i = 0
        self.has_decimal = False

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise LatexError(f"expected {expected or 'more input'}, got {tok!r}")
        self.i += 1
        return tok

    def expr(self) -> sympy.Expr:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            right = self.term()
            value = value + right if op == "+" else value - right
        return value

    def term(self) -> sympy.Expr:
        value = self.unary()
        while True:
            tok = self.peek()
            if tok in _TIMES:
                self.take()
                value = value * self.unary()
            elif tok in _DIVIDE:
                self.take()
                value = value / _nonzero(self.unary())
            elif tok is not None and _starts_atom(tok):  # implicit product: 2x, 3\sqrt{2}, 2(x+1)
                value = value * self.power()
            else:
                return value

    def unary(self) -> sympy.Expr:
        if self.peek() in ("-", "+"):
            return -self.unary() if self.take() == "-" else self.unary()
        return self.power()

    def power(self) -> sympy.Expr:
        base = self.postfix()
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.group() if self.peek() != "-" else -self.unary()
        _check_size(exponent)
        _check_bits(base, exponent)
        return base**exponent

    def postfix(self) -> sympy.Expr:
        value = self.atom()
        while self.peek() == "!":
            self.take()
            _check_size(value)
            value = sympy.factorial(value)
        return value

    def group(self) -> sympy.Expr:
        """A macro argument: a ``{...}`` group, or one token, of a digit run only the first digit (LaTeX
        reads ``x^23`` as ``x^{2}3`` and ``\\frac12`` as ``\\frac{1}{2}``); :meth:`atom` reads a group."""
        tok = self.peek()
        if tok is not None and tok.isdigit() and len(tok) > 1:
            self.tokens[self.i] = tok[1:]
            return sympy.Integer(tok[0])
        return self.atom()

    def atom(self) -> sympy.Expr:
        tok = self.take()
        if tok[0].isdigit() or tok[0] == ".":
            if "." in tok:
                self.has_decimal = True
            return sympy.Rational(tok)
        if len(tok) == 1 and tok.isalpha():
            return sympy.Symbol(tok)
        if tok in _CONSTANTS:
            return _CONSTANTS[tok]
        if tok in ("(", "{", "[", "|"):
            value = self.expr()
            self.take({"(": ")", "{": "}", "[": "]", "|": "|"}[tok])
            return sympy.Abs(value) if tok == "|" else value
        if tok == "\\frac":
            num = self.group()
            return num / _nonzero(self.group())
        if tok == "\\sqrt":
            return self.sqrt()
        if tok in _FUNCTIONS:
            return _FUNCTIONS[tok](self.power())
        raise LatexError(f"cannot read {tok!r}")

    def sqrt(self) -> sympy.Expr:
        if self.peek() != "[":
            return sympy.sqrt(self.group())
        self.take("[")
        index = self.expr()
        self.take("]")
        return sympy.root(self.group(), index)


def _starts_atom(tok: str) -> bool:
    named = ("(", "{", "\\frac", "\\sqrt", *_CONSTANTS, *_FUNCTIONS)
    return tok[0].isdigit() or tok[0] == "." or (len(tok) == 1 and tok.isalpha()) or tok in named


def _nonzero(value: sympy.Expr) -> sympy.Expr:
    if value == 0:
        raise LatexError("division by zero")
    return value


def _check_size(value: sympy.Expr) -> None:
    if value.is_number and value.is_real and abs(value) > MAX_EXPONENT:
        raise LatexError(f"exponent or factorial argument {value} is larger than {MAX_EXPONENT}")


def _check_bits(base: sympy.Expr, exponent: sympy.Expr) -> None:
    """Refuse an exact power whose result would be larger than :data:`MAX_BITS` (``((2^{999})^{999})^{999}``)."""
    if base.is_Rational and exponent.is_Rational:
        bits = abs(exponent) * max(int(base.p).bit_length(), int(base.q).bit_length())
        if bits > MAX_BITS:
            raise LatexError(f"power of about {int(bits)} bits is larger than {MAX_BITS}")


def parse_latex(text: str) -> Parsed:
    """The sympy value of one LaTeX answer; LatexError when it is not readable (see the module docstring)."""
    if len(text) > MAX_LENGTH:
        raise LatexError(f"answer longer than {MAX_LENGTH} characters")
    tokens = tokenize(text)
    if not tokens:
        raise LatexError("empty answer")
    reader = _Reader(tokens)
    value = reader.expr()
    if reader.peek() is not None:
        raise LatexError(f"unexpected {reader.peek()!r} after a complete expression in {text!r}")
    return Parsed(sympy.sympify(value), reader.has_decimal)
