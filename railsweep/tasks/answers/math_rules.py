"""Grade a MATH-style response (LaTeX answer in ``\\boxed{}``) against the gold answer.

Steps, under the ``final`` rule (the default) or the ``first`` rule:

1. **cut** the response at its first stop string (the task's, e.g. ``"Problem:"``);
2. **strict**: the LAST well-formed ``\\boxed{}``/``\\fbox{}`` of what is left (``first``: the first);
3. **flexible**, only without a box: the last (``first``: the first) "The answer is X";
4. compare with :func:`~railsweep.tasks.answers.math_equiv.is_equiv`; ``Grade.pred`` is the answer after
   :func:`~railsweep.tasks.answers.math_boxed.strip_math`.
"""

from __future__ import annotations

from railsweep.errors import ConfigError
from railsweep.tasks.answers.gsm8k_rules import cut_at_stop
from railsweep.tasks.answers.math_boxed import answer_is, boxed_answers, strip_math
from railsweep.tasks.answers.math_equiv import is_equiv
from railsweep.tasks.base import RULES_BY_TYPE, Grade

RULES = RULES_BY_TYPE["math"]
# The MATH CoT prompt's stop strings (a model starting the next "Problem:"), longest first.
STOP: tuple[str, ...] = ("\n\nProblem:", "\nProblem:", "Problem:")


def check_math_rule(rule: str) -> str:
    """``rule`` if a MATH-style answer is read under it, else ConfigError naming it."""
    if rule not in RULES:
        raise ConfigError(f"a MATH-style answer is read under {', '.join(RULES)}, got answer_rule={rule!r}")
    return rule


def extract_math(response: str, stop: tuple[str, ...] = STOP, rule: str = "final") -> tuple[str | None, str]:
    """(answer as written or None, step) under ``rule`` (module docstring, steps 1-3)."""
    check_math_rule(rule)
    response = cut_at_stop(response, stop)
    boxes = boxed_answers(response)
    if boxes:
        return boxes[-1 if rule == "final" else 0], "strict"
    said = answer_is(response, rule)
    return (said, "flexible") if said is not None else (None, "none")


def grade_math(response: str, gold: str, stop: tuple[str, ...] = STOP, rule: str = "final") -> Grade:
    """Grade one response: the answer ``rule`` reads, compared with ``gold`` by :func:`is_equiv`."""
    pred, step = extract_math(response, stop, rule)
    if pred is None:
        return Grade(correct=False, pred=None, rule="none")
    return Grade(correct=is_equiv(pred, gold), pred=strip_math(pred), rule=step)  # type: ignore[arg-type]
