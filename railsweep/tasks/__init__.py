"""Evaluation tasks: the questions a cell decodes, their prompts, and how an answer is read and graded.

The parts:

- ``base.py``: what a task is (:class:`Task`, :class:`Question`, :class:`Grade`) and the answer rules and types;
- ``task_ref.py``: a ``--task`` value (a task file, a shipped task's name, ``lm_eval:NAME``) turned into its spec
  and its task; ``agreement.py``: how differently a task's answer rules grade one cell's responses;
- ``kinds/``: the task kinds railsweep runs itself: GSM8K and MATH (coded, sharing ``coded.py``) and the task
  declared in a task file (``file_spec.py`` reads and checks the file, ``file_task.py`` runs it,
  ``file_templates.py`` renders its Jinja prompts);
- ``lm_eval/``: tasks that lm-evaluation-harness's own code runs (``spec.py``, ``task.py``, ``groups.py``);
- ``answers/``: reading and grading answers: GSM8K solutions and rules, the harness's gsm8k_cot filters, MATH's
  boxed answers, their equivalence (sympy) and rules, and the rules a task file declares;
- ``data/``: reading and fetching data: text and rows, GSM8K and MATH files, leak splits, the PQ paraphrases,
  the shared data folder and ``railsweep data gsm8k``;
- ``builtin/``: the shipped task files (``gsm8k``, ``math``, ``pq``); ``math_fewshot.json``: MATH's four shipped
  exemplars.
"""

from railsweep.tasks.answers.gsm8k_rules import grade
from railsweep.tasks.answers.gsm8k_solution import parse_gold, to_cot
from railsweep.tasks.base import Grade, Question, Task
from railsweep.tasks.data.paraphrases import load_paraphrases
from railsweep.tasks.kinds.gsm8k import GSM8KTask, render_fewshot_prefix

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
