"""Grade a GSM8K chain-of-thought response against the gold answer.

Steps, after lm-evaluation-harness ``gsm8k_cot`` (its "strict-match" and
"flexible-extract" filters):

1. **cut** the response at its first stop string (:data:`STOP`, the task's
   stop strings): a response ends where the model starts a new "Q:", so text an
   engine would not have returned (a run-on into an invented next question and
   its answer) is never graded;
2. **strict**: the LAST "The answer is N" of what is left (case-insensitive,
   an optional colon, ``$`` and spaces allowed before N, the trailing period
   optional), so a corrected answer ("I first thought the answer is 3, but
   3 * 6 = 18. The answer is 18.") counts, not the first guess;
3. **flexible**, only when no strict match exists: the LAST number anywhere in
   what is left.

A number is normalised before comparison: thousands commas and ``$`` removed,
a trailing sentence period ignored, then compared as a decimal, so "18",
"18.00" and "$18." are all equal to gold "18". A minus sign counts only when it
is not a binary minus (``5-3`` reads as 3, not -3). The rule that produced the
prediction is recorded ("none" when no number was found).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from railsweep.tasks.base import Grade

# sign (not a binary minus: nothing word-like just before it), optional $, then
# either comma-grouped thousands or plain digits, then an optional decimal part
_NUMBER = (
    r"(?P<sign>(?<![\w)\]])[-\u2212]\s?)?\$?\s?"
    r"(?P<body>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?![\d,]*\d)"
)
_NUMBER_RE = re.compile(_NUMBER)
_STRICT_RE = re.compile(r"the answer is\s*:?\s*" + _NUMBER, re.IGNORECASE)
# The GSM8K 8-shot prompt's stop strings (lm-eval's ``until: ["Q:"]``), longest first; see railsweep.tasks.gsm8k.
STOP: tuple[str, ...] = ("\n\nQ:", "\nQ:", "Q:")


def normalize_number(text: str) -> str | None:
    """Canonical decimal string for a number as written ("$1,234.50" -> "1234.5"); None if not a number."""
    s = text.strip().replace(",", "").replace("$", "").replace("\u2212", "-").replace(" ", "")
    s = s.rstrip(".")  # a sentence period, not a decimal point
    try:
        d = Decimal(s)
    except InvalidOperation:
        return None
    if not d.is_finite():
        return None
    if d == 0:
        return "0"
    return format(d.normalize(), "f")


def _from_match(m: re.Match[str]) -> str | None:
    sign = "-" if m.group("sign") else ""
    return normalize_number(sign + m.group("body"))


def cut_at_stop(response: str, stop: tuple[str, ...] = STOP) -> str:
    """The response up to its first stop string, as an engine decoding with ``stop`` would return it."""
    hits = [i for i in (response.find(s) for s in stop if s) if i >= 0]
    return response[: min(hits)] if hits else response


def extract(response: str, stop: tuple[str, ...] = STOP) -> tuple[str | None, str]:
    """(normalised prediction or None, rule) for a response, steps as in the module docstring."""
    response = cut_at_stop(response, stop)
    strict = list(_STRICT_RE.finditer(response))
    if strict:
        return _from_match(strict[-1]), "strict"
    matches = list(_NUMBER_RE.finditer(response))
    if matches:
        return _from_match(matches[-1]), "flexible"
    return None, "none"


def grade(response: str, gold: str, stop: tuple[str, ...] = STOP) -> Grade:
    """Grade one response: correct when the extracted number equals ``gold`` numerically."""
    pred, rule = extract(response, stop)
    if pred is None:
        return Grade(correct=False, pred=None, rule="none")
    gold_norm = normalize_number(gold)
    correct = pred == gold_norm if gold_norm is not None else pred == gold.strip()
    return Grade(correct=correct, pred=pred, rule=rule)  # type: ignore[arg-type]
