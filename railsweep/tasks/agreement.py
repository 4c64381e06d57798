"""How differently the answer rules grade one cell's responses.

A cell is graded under one answer rule, but a reader comparing with lm-evaluation-harness numbers, or judging
whether the rule matters, needs to know how many responses another rule grades the other way; so every graded
response is re-graded under every rule of its task (counts in the cell's ``railsweep.grading``). The harness's
gsm8k_cot counts are kept for GSM8K's questions only; on any other task they are absent, not 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from railsweep.tasks.answers.gsm8k_rules import STOP, check_answer_rule, check_answer_type, cut_at_stop, grade
from railsweep.tasks.answers.lm_eval_gsm8k import flexible_extract_correct, strict_match_correct
from railsweep.tasks.answers.math_rules import grade_math
from railsweep.tasks.base import DEFAULT_ANSWER_TYPE, RULES_BY_TYPE, Grade, Question
from railsweep.tasks.kinds.file_task import FileTask
from railsweep.tasks.lm_eval.task import LmEvalTask


@dataclass(frozen=True)
class RuleAgreement:
    """Counts over a cell's graded responses (greedy trajectories, which are not graded, excluded)."""

    answer_rule: str  # the rule the cell was graded under
    n_responses: int = 0
    n_correct: dict[str, int] = field(default_factory=dict)  # {rule: responses it grades correct}
    n_differ: dict[str, int] = field(default_factory=dict)  # {other rule: responses it grades otherwise}
    n_disagree: int = 0  # responses the rules do not all grade the same
    # GSM8K only (else None): responses correct under gsm8k_cot's exact_match,strict-match / flexible-extract
    lm_eval_strict_match: int | None = None
    lm_eval_flexible_extract: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if self.lm_eval_strict_match is None:
            del d["lm_eval_strict_match"], d["lm_eval_flexible_extract"]
        return d


def rule_agreement(responses: Iterable[tuple[str, str | Question]], answer_rule: str, stop: tuple[str, ...] = STOP,
                   answer_type: str = DEFAULT_ANSWER_TYPE,
                   task: FileTask | LmEvalTask | None = None) -> RuleAgreement:  # fmt: skip
    """Grade every ``(response text, gold or question)`` under every rule of ``answer_type`` (of ``task``, when it
    is a task file's or a harness task's, which need the :class:`Question`) and count where they part ways."""
    # GSM8K (built in, or the shipped gsm8k / pq files): the harness's gsm8k_cot counts apply
    gsm8k = answer_type == "numeric" and (task is None or (isinstance(task, FileTask) and task.spec.builtin))
    if task is not None:
        rules = task.spec.rule_names
        task.spec.rule(answer_rule)

        def grader(text: str, question: Question, stop: tuple[str, ...], rule: str) -> Grade:
            return task.grade_under(rule, text, question)
    else:
        check_answer_rule(answer_rule)
        check_answer_type(answer_type, answer_rule)
        rules = RULES_BY_TYPE[answer_type]
        grader = grade if answer_type == "numeric" else grade_math
    others = [r for r in rules if r != answer_rule]
    n = disagree = strict = flexible = 0
    correct = dict.fromkeys(rules, 0)
    differ = dict.fromkeys(others, 0)
    for text, item in responses:
        gold = item.gold if isinstance(item, Question) else item
        verdicts = {rule: grader(text, item if task is not None else gold, stop, rule).correct for rule in rules}
        n += 1
        for rule, ok in verdicts.items():
            correct[rule] += ok
        for rule in others:
            differ[rule] += verdicts[rule] != verdicts[answer_rule]
        disagree += len(set(verdicts.values())) > 1
        if not gsm8k:
            continue
        cut = cut_at_stop(text, stop)  # as the lm_eval rule reads it (railsweep.tasks.answers.gsm8k_rules.grade)
        strict += strict_match_correct(cut, gold)
        flexible += flexible_extract_correct(cut, gold)
    counts = (strict, flexible) if gsm8k else (None, None)
    return RuleAgreement(answer_rule, n, correct, differ, disagree, *counts)
