"""Evaluation tasks: the questions a cell decodes, their prompts, and how an answer is read and graded (the
package's layout: ``docs/architecture.md``, "Inside tasks/")."""

from railsweep.tasks.answers.gsm8k_rules import grade
from railsweep.tasks.answers.gsm8k_solution import parse_gold, to_cot
from railsweep.tasks.base import Grade, Question, Task
from railsweep.tasks.data.paraphrases import load_paraphrases
from railsweep.tasks.kinds.gsm8k import GSM8KTask

__all__ = ["GSM8KTask", "Grade", "Question", "Task", "grade", "load_paraphrases", "parse_gold", "to_cot"]
