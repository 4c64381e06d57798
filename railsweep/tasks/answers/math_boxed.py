"""MATH-style answers: the ``\\boxed{}`` answer of a solution and its string normalisation.

A MATH solution (Hendrycks et al. 2021) ends with the answer in ``\\boxed{...}`` (rarely ``\\fbox{...}`` or
``\\boxed 5``); the gold answer is the LAST box (one whose braces never close is none). A response without a
box falls back to the last "The answer is X" (Minerva's "The final answer is $X$." included).
:func:`strip_math` is MATH's ``strip_string`` with lm-evaluation-harness ``minerva_math``'s additions.
"""

from __future__ import annotations

import re

_BOX = re.compile(r"\\(?:boxed|fbox)")
_ANSWER_IS = re.compile(r"answer is\s*:?\s*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_TEXT = re.compile(r"\\(?:text|textbf|textrm|mbox|mathrm)\s*{([^{}]*)}")
_TRAILING_UNIT = re.compile(r"^(.+?)\\(?:text|textbf|textrm|mbox|mathrm)\s*{\s*[a-zA-Z][^{}]*}$")
_THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_INT_SLASH = re.compile(r"^(-?\d+)/(\d+)$")
_FRAC_SHORTHAND = re.compile(r"\\frac(?![a-zA-Z])\s*(\{[^{}]*\}|[^{\s\\])\s*(\{[^{}]*\}|[^{\s\\])")  # \frac12, \frac1{2}
_SPACING = ("\\!", "\\,", "\\;", "\\:", "\\ ", "~", "\\displaystyle")


def _braced(text: str, start: int) -> tuple[str, int] | None:
    """(content, index after the closing brace) of the ``{...}`` opening at ``start``; None if unbalanced."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
    return None


def boxed_answers(text: str) -> list[str]:
    """The content of every well-formed ``\\boxed{}``/``\\fbox{}`` (and ``\\boxed X``), in order."""
    found = []
    for m in _BOX.finditer(text):
        pos = m.end()
        rest = text[pos:]
        if rest.lstrip().startswith("{"):
            got = _braced(text, pos + len(rest) - len(rest.lstrip()))
            if got is not None:
                found.append(got[0].strip())
        elif rest[:1] == " ":  # "\boxed 5": the argument runs to the next space or "$"
            arg = re.match(r"\s*([^\s$]+)", rest)
            if arg:
                found.append(arg.group(1))
    return found


def answer_is(text: str, which: str = "final") -> str | None:
    """The X of the last (``final``) or first "The answer is X": to the end of its line or sentence, or the
    content of a ``$...$`` span."""
    hits = list(_ANSWER_IS.finditer(text))
    if not hits:
        return None
    rest = text[hits[-1 if which == "final" else 0].end() :].split("\n", 1)[0].strip()
    if rest.startswith("$"):
        close = rest.find("$", 1)
        rest = rest[1:close] if close > 0 else rest[1:]
    else:
        end = _SENTENCE_END.search(rest)
        rest = rest[: end.start()] if end else rest
    rest = rest.strip().rstrip(".")
    return rest or None


def gold_answer(solution: str) -> str | None:
    """A MATH reference solution's answer: its last well-formed box."""
    boxes = boxed_answers(solution)
    return boxes[-1] if boxes else None


def last_boxed(solution: str) -> str:
    """:func:`gold_answer`, '' when there is none (a task then refuses the row's empty gold, naming it)."""
    return gold_answer(solution) or ""


def strip_math(answer: str) -> str:
    """Normalise one answer string (MATH's ``strip_string`` steps, then minerva's additions).

    Steps:
      1. drop line breaks, LaTeX spacing (``\\!``, ``\\,``, ``~``, ...) and ``\\displaystyle``;
         ``\\dfrac``/``\\tfrac`` → ``\\frac``; drop ``\\left``/``\\right``;
      2. drop degrees (``^\\circ``, ``^{\\circ}``), dollars (``\\$``, ``$``), a trailing unit in
         ``\\text{}``, percent signs (``\\%``, ``%``); ``\\text{X}`` → ``X``;
      3. a leading ``.5`` → ``0.5``; an ``x =`` prefix (one ``=``, a left side of at most two
         characters) is dropped;
      4. ``\\sqrt2`` → ``\\sqrt{2}``, spaces removed, ``\\frac12`` → ``\\frac{1}{2}``;
      5. a trailing period removed; thousands separators removed (``1,000`` and ``1{,}000`` → ``1000``);
      6. ``0.5`` → ``\\frac{1}{2}`` and an integer ``a/b`` → ``\\frac{a}{b}``, as MATH's reference does.
    """
    s = answer.replace("\n", "")
    for token in _SPACING:
        s = s.replace(token, "" if token != "\\ " else " ")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\\left(?![a-zA-Z])|\\right(?![a-zA-Z])", "", s)
    for unit in ("^{\\circ}", "^\\circ", "\\circ", "°"):
        s = s.replace(unit, "")
    s = s.replace("\\$", "").replace("$", "")
    s = s.strip()
    m = _TRAILING_UNIT.match(s)  # 5\text{ cm} -> 5; a \text{} standing alone keeps its content
    if m and re.search(r"[\d}]\s*$", m.group(1)):
        s = m.group(1)
    s = _TEXT.sub(r"\1", s)
    s = s.replace("\\%", "").replace("%", "")
    s = s.strip()
    s = re.sub(r"(^|[\s{(\[,])\.(\d)", r"\g<1>0.\2", s)
    if s.count("=") == 1 and len(s.split("=")[0].strip()) <= 2:
        s = s.split("=")[1]
    s = re.sub(r"\\sqrt(?![a-zA-Z])\s*([^{\[\s\\])", r"\\sqrt{\1}", s)
    s = s.replace(" ", "")
    s = _FRAC_SHORTHAND.sub(lambda m: "\\frac" + "".join(a if a[0] == "{" else "{" + a + "}" for a in m.groups()), s)
    s = s.rstrip(".")
    s = s.replace("{,}", ",")
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    if s == "0.5":
        s = "\\frac{1}{2}"
    m = _INT_SLASH.match(s)
    if m:
        s = f"\\frac{{{m.group(1)}}}{{{m.group(2)}}}"
    return s
