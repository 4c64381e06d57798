"""The checks every paraphrase passes before it is kept; a failed check names its reason.

A PQ item trains the contaminated model on a reworded test question with the ORIGINAL reasoning chain
and gold answer, so a paraphrase is usable only when that chain still solves it: it states the same
numbers, says nothing of the answer, and is really reworded. In order:

1. ``empty``: no words;
2. ``answer_leak``: a solution marker (``####``, ``answer is``, ``answer:``, ``solution:``) the original
   lacks, or the gold value stated where the original never states it;
3. ``numbers_missing`` / ``numbers_added``: every number of the original (see
   :mod:`railsweep.paraphrase.numbers`) stated at least as often, and no value the original lacks (a
   value may be repeated: ``each of the 16 eggs`` restates a number, it does not change one);
4. ``near_copy``: ROUGE-L to the original at or above ``max_rouge``.

The gold answer is never checked against the model's output: it is carried over from the input.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from railsweep.paraphrase.numbers import numbers, value
from railsweep.paraphrase.rouge import rouge_l, rouge_tokens

REASONS = ("format", "empty", "answer_leak", "numbers_missing", "numbers_added", "near_copy")
_LEAK = re.compile(r"####|\banswer\s*(?:is\b|:)|\bsolution\s*:", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """Why a paraphrase was refused (``reason`` one of :data:`REASONS`, None when kept), and its ROUGE-L."""

    reason: str | None
    detail: str = ""
    rouge: float | None = None

    @property
    def kept(self) -> bool:
        return self.reason is None


def _show(values: Counter[Decimal]) -> str:
    return ", ".join(f"{format(v, 'f')}" + (f" x{n}" if n > 1 else "") for v, n in sorted(values.items()))


def _leak(original: str, paraphrase: str, gold: str) -> str | None:
    marker = _LEAK.search(paraphrase)
    if marker and not _LEAK.search(original):
        return f"solution marker {marker.group(0)!r}"
    g = value(gold)
    if g is not None and numbers(paraphrase)[g] and not numbers(original)[g]:
        return f"states the gold answer {gold}"
    return None


def check_paraphrase(original: str, paraphrase: str, gold: str, max_rouge: float) -> Verdict:
    """The verdict on ``paraphrase`` of ``original`` whose gold answer is ``gold`` (see the module docstring)."""
    if not rouge_tokens(paraphrase):
        return Verdict("empty", "no words")
    leak = _leak(original, paraphrase, gold)
    if leak:
        return Verdict("answer_leak", leak)
    want, got = numbers(original), numbers(paraphrase)
    missing = want - got
    if missing:
        return Verdict("numbers_missing", f"missing {_show(missing)}")
    added = Counter({v: n for v, n in got.items() if v not in want})
    if added:
        return Verdict("numbers_added", f"added {_show(added)}")
    score = rouge_l(original, paraphrase)
    if score >= max_rouge:
        return Verdict("near_copy", f"ROUGE-L {score:.3f} >= {max_rouge:g}", score)
    return Verdict(None, "", score)
