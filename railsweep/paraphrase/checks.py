"""The checks every paraphrase passes before it is kept; a failed check names its reason.

A PQ item trains the contaminated model on a reworded question with the ORIGINAL reasoning chain and gold, so a
paraphrase is usable only when that chain still solves it: the same numbers, nothing of the answer, really
reworded. In order:

1. ``empty``: no words;
2. ``answer_leak``: a solution marker (``####``, ``answer is``, ``answer:``, ``solution:``) or the gold (as a
   value, a formula or words) where the original has none;
3. ``numbers_missing`` / ``numbers_added``: every number of the original (:mod:`railsweep.paraphrase.numbers`)
   stated at least as often, and no value the original lacks (``each of the 16 eggs`` restates a number);
4. ``formulas_missing`` (``math`` answers; GSM8K's ``$`` is currency): every LaTeX span of the original kept;
5. ``names_missing`` (string answers): every capitalised word not starting a sentence kept;
6. ``near_copy``: ROUGE-L to the original at or above ``max_rouge``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from railsweep.errors import ConfigError
from railsweep.paraphrase.numbers import numbers, value
from railsweep.paraphrase.rouge import rouge_l, rouge_tokens
from railsweep.paraphrase.spans import formulas, names, states_answer

REASONS = ("format", "empty", "answer_leak", "numbers_missing", "numbers_added", "formulas_missing", "names_missing",
           "near_copy")  # fmt: skip
ANSWER_TYPES = ("numeric", "math", "string")
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


def _leak(original: str, paraphrase: str, gold: str, answer_type: str) -> str | None:
    marker = _LEAK.search(paraphrase)
    if marker and not _LEAK.search(original):
        return f"solution marker {marker.group(0)!r}"
    g = value(gold)
    if g is not None:
        stated = numbers(paraphrase)[g] and not numbers(original)[g]
    else:
        stated = states_answer(paraphrase, gold, answer_type) and not states_answer(original, gold, answer_type)
    return f"states the gold answer {gold}" if stated else None


def _kept_facts(original: str, paraphrase: str, answer_type: str) -> Verdict | None:
    """The refusal for a number, formula or name of the original that the paraphrase changed; None if kept."""
    want, got = numbers(original), numbers(paraphrase)
    missing = want - got
    if missing:
        return Verdict("numbers_missing", f"missing {_show(missing)}")
    added = Counter({v: n for v, n in got.items() if v not in want})
    if added:
        return Verdict("numbers_added", f"added {_show(added)}")
    lost = formulas(original) - formulas(paraphrase) if answer_type == "math" else Counter()
    if lost:
        return Verdict("formulas_missing", "missing " + ", ".join(f"${k}$" for k in sorted(lost)))
    gone = names(original) - set(re.findall(r"\w+(?:[-']\w+)?", paraphrase)) if answer_type == "string" else set()
    if gone:
        return Verdict("names_missing", "missing " + ", ".join(sorted(gone)))
    return None


def check_paraphrase(original: str, paraphrase: str, gold: str, max_rouge: float,
                     answer_type: str = "numeric") -> Verdict:  # fmt: skip
    """The verdict on ``paraphrase`` of ``original`` (gold ``gold``, answers of ``answer_type``; module docstring)."""
    if answer_type not in ANSWER_TYPES:
        raise ConfigError(f"answer type must be one of {', '.join(ANSWER_TYPES)}, got {answer_type!r}")
    if not rouge_tokens(paraphrase):
        return Verdict("empty", "no words")
    leak = _leak(original, paraphrase, gold, answer_type)
    if leak:
        return Verdict("answer_leak", leak)
    changed = _kept_facts(original, paraphrase, answer_type)
    if changed:
        return changed
    score = rouge_l(original, paraphrase)
    if score >= max_rouge:
        return Verdict("near_copy", f"ROUGE-L {score:.3f} >= {max_rouge:g}", score)
    return Verdict(None, "", score)
