"""Evaluation tasks: the questions a cell decodes, their prompts, and how an answer is read and graded.

``base.py``: what a task is; ``task_ref.py``: a ``--task`` value turned into its spec and task;
``agreement.py``: how differently a task's answer rules grade a cell; ``kinds/``: coded GSM8K and MATH, and task
files; ``lm_eval/``: tasks lm-evaluation-harness's own code runs; ``answers/``: reading and grading answers;
``data/``: reading and fetching data; ``builtin/``: the shipped task files and MATH's four exemplars.
"""

from railsweep.tasks.answers.gsm8k_rules import grade
from railsweep.tasks.answers.gsm8k_solution import parse_gold, to_cot
from railsweep.tasks.base import Grade, Question, Task
from railsweep.tasks.data.paraphrases import load_paraphrases
from railsweep.tasks.kinds.gsm8k import GSM8KTask

__all__ = ["GSM8KTask", "Grade", "Question", "Task", "grade", "load_paraphrases", "parse_gold", "to_cot"]
