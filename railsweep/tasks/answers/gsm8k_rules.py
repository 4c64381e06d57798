"""Grade a GSM8K chain-of-thought response against the gold answer, under a chosen answer rule.

Steps of the ``final`` (default) and ``first`` rules, after lm-evaluation-harness ``gsm8k_cot``'s filters:

1. **cut** at the first stop string (:data:`STOP`): a run-on into an invented next question is never graded;
2. **strict**: ``final`` takes the LAST "The answer is N" (case-insensitive, ``:``, ``$`` and spaces allowed),
   so a corrected answer ("I first thought the answer is 3, but 3 * 6 = 18. The answer is 18.") counts;
   ``first`` takes the FIRST, as the harness does;
3. **flexible**, only without a strict match: the LAST number anywhere in what is left.

Numbers compare as decimals after dropping thousands commas, ``$`` and a trailing period ("$18." and "18.00"
equal gold "18"). A space never groups digits ("18 000" reads 18, then 000): GSM8K writes thousands with
commas, and in worked arithmetic a space separates two numbers ("5 100-dollar bills"). A minus sign counts
only when it is not a binary minus (``5-3`` reads 3). The ``lm_eval`` rule is the harness's own filters and
comparison (:mod:`railsweep.tasks.answers.lm_eval_gsm8k`), after the same cut.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from railsweep.errors import ConfigError
from railsweep.tasks.answers.lm_eval_gsm8k import grade_lm_eval
from railsweep.tasks.base import ANSWER_RULES, ANSWER_TYPES, DEFAULT_ANSWER_RULE, RULES_BY_TYPE, Grade

# sign (not a binary minus: nothing word-like just before it), optional $, comma-grouped or plain digits, decimals
_NUMBER = (r"(?P<sign>(?<![\w)\]])[-\u2212]\s?)?\$?\s?"
           r"(?P<body>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?![\d,]*\d)")  # fmt: skip
_NUMBER_RE = re.compile(_NUMBER)
_STRICT_RE = re.compile(r"the answer is\s*:?\s*" + _NUMBER, re.IGNORECASE)
# The GSM8K 8-shot prompt's stop strings (lm-eval's ``until: ["Q:"]``), longest first; see railsweep.tasks.kinds.gsm8k.
STOP: tuple[str, ...] = ("\n\nQ:", "\nQ:", "Q:")


def normalize_number(text: str) -> str | None:
    """Canonical decimal string for a number as written ("$1,234.50" -> "1234.5"); None if not a number."""
    s = text.strip().replace(",", "").replace("$", "").replace("\u2212", "-").replace(" ", "")
    s = s.rstrip(".")  # a sentence period, not a decimal point
    try:
        d = Decimal(s)
    except InvalidOperation:
        return None
    return canonical_number(d) if d.is_finite() else None


def canonical_number(d: Decimal) -> str:
    """A finite decimal as a plain string without trailing zeros (``"0"`` for any zero)."""
    return "0" if d == 0 else format(d.normalize(), "f")


def _from_match(m: re.Match[str]) -> str | None:
    sign = "-" if m.group("sign") else ""
    return normalize_number(sign + m.group("body"))


def cut_at_stop(response: str, stop: tuple[str, ...] = STOP) -> str:
    """The response up to its first stop string, as an engine decoding with ``stop`` would return it."""
    hits = [i for i in (response.find(s) for s in stop if s) if i >= 0]
    return response[: min(hits)] if hits else response


def check_answer_rule(rule: object) -> str:
    """``rule`` if it names an answer rule, else ConfigError naming the value and the choices."""
    if rule not in ANSWER_RULES:
        raise ConfigError(f"answer_rule must be one of {', '.join(ANSWER_RULES)}, got answer_rule={rule!r}")
    return rule  # type: ignore[return-value]


def check_answer_type(answer_type: object, rule: str = DEFAULT_ANSWER_RULE) -> str:
    """``answer_type`` if it names an answer type that reads answers under ``rule``, else ConfigError."""
    if answer_type not in ANSWER_TYPES:
        raise ConfigError(f"answer_type must be one of {', '.join(ANSWER_TYPES)}, got answer_type={answer_type!r}")
    allowed = RULES_BY_TYPE[answer_type]  # type: ignore[index]
    if rule not in allowed:
        raise ConfigError(f"answer_rule={rule!r} does not apply to answer_type={answer_type!r}; "
                          f"its rules are {', '.join(allowed)}")  # fmt: skip
    return answer_type  # type: ignore[return-value]


def extract(response: str, stop: tuple[str, ...] = STOP,
            rule: str = DEFAULT_ANSWER_RULE) -> tuple[str | None, str]:  # fmt: skip
    """(normalised prediction or None, step) under the ``final`` or ``first`` rule (module docstring)."""
    if rule not in ("final", "first"):
        raise ConfigError(f"extract reads the final and first rules, got rule={rule!r}")
    response = cut_at_stop(response, stop)
    strict = list(_STRICT_RE.finditer(response))
    if strict:
        return _from_match(strict[-1 if rule == "final" else 0]), "strict"
    matches = list(_NUMBER_RE.finditer(response))
    if matches:
        return _from_match(matches[-1]), "flexible"
    return None, "none"


def grade(response: str, gold: str, stop: tuple[str, ...] = STOP, rule: str = DEFAULT_ANSWER_RULE) -> Grade:
    """Grade one response under ``rule``: as numbers (``final``/``first``) or as the harness does (``lm_eval``)."""
    check_answer_rule(rule)
    if rule == "lm_eval":
        return grade_lm_eval(cut_at_stop(response, stop), gold)
    pred, step = extract(response, stop, rule)
    if pred is None:
        return Grade(correct=False, pred=None, rule="none")
    gold_norm = normalize_number(gold)
    correct = pred == gold_norm if gold_norm is not None else pred == gold.strip()
    return Grade(correct=correct, pred=pred, rule=step)  # type: ignore[arg-type]
