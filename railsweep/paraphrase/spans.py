"""What a question states beyond numbers, so a paraphrase of a task with string or LaTeX answers can be checked.

:func:`formulas`: its LaTeX spans (``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``; ``\\$`` is a dollar
sign); :func:`names`: its capitalised words not starting a sentence (people, places, titles). A paraphrase
lacking one is refused: the original reasoning chain, trained on with the paraphrase, refers to them.
"""

from __future__ import annotations

import re
from collections import Counter

_FORMULA = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\$(.+?)(?<!\\)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_SPACING = re.compile(r"\\[!,;:> ]|\\left|\\right|\\displaystyle|~|\s+")
_NAME = re.compile(r"(?<![\w$\\])([A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?)\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)[\"'(]?$")


def latex_key(formula: str) -> str:
    """``formula`` with what does not change its meaning dropped: spacing commands, sizing, blanks."""
    key = _SPACING.sub("", formula)
    return key.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")


def formulas(text: str) -> Counter[str]:
    """The multiset of LaTeX spans ``text`` writes, by :func:`latex_key` (empty spans ignored)."""
    keys = (latex_key(next(g for g in m.groups() if g is not None)) for m in _FORMULA.finditer(text))
    return Counter(k for k in keys if k)


def names(text: str) -> set[str]:
    """The capitalised words ``text`` uses other than at the start of a sentence (outside LaTeX spans)."""
    prose = _FORMULA.sub(" ", text)
    return {m[1] for m in _NAME.finditer(prose) if not _SENTENCE_START.search(prose[: m.start()])}


def states_answer(text: str, gold: str, answer_type: str) -> bool:
    """Whether ``text`` states ``gold``: a LaTeX gold (``math``) as a formula key anywhere in the text, a string
    gold as whole words, case and spacing ignored. A gold with no letter or digit is never found."""
    if not re.search(r"\w", gold):
        return False
    if answer_type == "math":
        key = latex_key(gold)
        return key in latex_key(text) and (len(key) > 1 or bool(re.search(rf"(?<![\w\\]){re.escape(key)}(?!\w)", text)))
    gold, text = " ".join(gold.lower().split()), " ".join(text.lower().split())  # case and spacing ignored
    return re.search(rf"(?<!\w){re.escape(gold)}(?!\w)", text) is not None
