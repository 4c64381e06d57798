"""GSM8K with the standard 8-shot chain-of-thought prompt (lm-eval ``gsm8k_cot``).

Prompt: ``"Q: {question}\\nA: {answer}\\n\\n"`` per exemplar, then ``"Q: {question}\\nA:"``: byte for byte
lm-evaluation-harness's prefix without a chat template (``shared/data/gsm8k/cot_8shot_prefix.txt``).

Stop strings **[decision]**: lm-eval's ``until`` is ``"Q:"`` (plus ``</s>``/``<|im_end|>``, EOS to engines);
railsweep stops on ``("\\n\\nQ:", "\\nQ:", "Q:")``: the same cut, the longer first so that an engine cutting
at the first matching stop string drops the blank line too. Graded by :mod:`railsweep.tasks.answers.gsm8k_rules`.
"""

from __future__ import annotations

from railsweep.tasks.answers.gsm8k_rules import STOP, check_answer_rule, grade
from railsweep.tasks.answers.gsm8k_solution import parse_gold, to_cot
from railsweep.tasks.data.gsm8k_rows import load_exemplars, read_jsonl
from railsweep.tasks.kinds.coded import CodedTask


class GSM8KTask(CodedTask):
    """GSM8K questions + the 8-shot CoT prompt + the grader under ``answer_rule``."""

    name = "gsm8k"
    stop = STOP
    answer_type = "numeric"
    fields = ("question", "answer")
    labels = ("Q", "A")
    check_rule = staticmethod(check_answer_rule)
    read_rows = staticmethod(read_jsonl)
    load_exemplars = staticmethod(load_exemplars)
    gold = staticmethod(parse_gold)
    default_fewshot = staticmethod(lambda data_dir: data_dir / "cot_8shot.json")
    grader = staticmethod(grade)
    to_chain = staticmethod(to_cot)
