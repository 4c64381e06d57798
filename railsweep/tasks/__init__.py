"""Evaluation tasks: GSM8K with the 8-shot CoT prompt, its grader, and the PQ paraphrases."""

from railsweep.tasks.answers import parse_gold, to_cot
from railsweep.tasks.base import Grade, Question, Task
from railsweep.tasks.grading import grade
from railsweep.tasks.gsm8k import GSM8KTask, render_fewshot_prefix
from railsweep.tasks.pq import load_paraphrases

__all__ = [
    "GSM8KTask",
    "Grade",
    "Question",
    "Task",
    "grade",
    "load_paraphrases",
    "parse_gold",
    "render_fewshot_prefix",
    "to_cot",
]
