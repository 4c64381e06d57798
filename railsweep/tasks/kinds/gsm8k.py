"""GSM8K with the standard 8-shot chain-of-thought prompt (lm-eval ``gsm8k_cot``).

Prompt: the 8 exemplars rendered as ``"Q: " + question + "\\nA: " + answer +
"\\n\\n"`` each, then ``"Q: " + test question + "\\nA:"`` (no trailing space).
This is byte for byte the prefix lm-evaluation-harness renders without a chat
template (``shared/data/gsm8k/cot_8shot_prefix.txt``).

Stop strings **[decision]**: lm-eval's ``until`` for gsm8k_cot is ``"Q:"`` (plus
``</s>``/``<|im_end|>``, which engines handle as EOS). railsweep stops on
``("\\n\\nQ:", "\\nQ:", "Q:")``: the same cut as ``"Q:"`` (a model starting the
next exemplar), with the longer variants first so that an engine cutting at
the first matching stop string also drops the blank line before it.

The grader reads each response under the task's ``answer_rule`` (``final``,
``first`` or ``lm_eval``, see :mod:`railsweep.tasks.answers.gsm8k_rules`).

Question indices are 0-based line numbers in the split's JSONL file (GSM8K
test index); ``leaked`` comes from a leak-split JSON ``{"leaked": [...]}``
(:mod:`railsweep.tasks.kinds.coded`). The rows and exemplars are read by
:mod:`railsweep.tasks.data.gsm8k_rows`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from railsweep.errors import ConfigError, DataError
from railsweep.tasks.answers.gsm8k_rules import STOP, check_answer_rule, grade
from railsweep.tasks.answers.gsm8k_solution import parse_gold, to_cot
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, Grade, Question
from railsweep.tasks.data.gsm8k_rows import load_exemplars, read_jsonl
from railsweep.tasks.kinds.coded import CodedTask, check_subset, files_read, numbered_questions

HUB_DATASET = ("openai/gsm8k", "main")
_FIELDS = ("question", "answer")


def render_fewshot_prefix(exemplars: Iterable[dict[str, str]]) -> str:
    """The few-shot prefix: ``"Q: {question}\\nA: {answer}\\n\\n"`` per exemplar."""
    return "".join(f"Q: {ex['question']}\nA: {ex['answer']}\n\n" for ex in exemplars)


def _check_args(split: str, limit: int | None, leak_split: str | Path | None, answer_rule: str) -> None:
    check_answer_rule(answer_rule)
    check_subset(split, limit, leak_split)


class GSM8KTask(CodedTask):
    """GSM8K questions + the 8-shot CoT prompt + the grader under ``answer_rule`` (implements ``Task``)."""

    name = "gsm8k"
    stop = STOP
    answer_type = "numeric"
    render_prefix = staticmethod(render_fewshot_prefix)

    def __init__(
        self,
        questions: Sequence[Question],
        exemplars: Sequence[dict[str, str]],
        split: str = "test",
        answer_rule: str = DEFAULT_ANSWER_RULE,
    ):
        self.answer_rule = check_answer_rule(answer_rule)
        super().__init__(questions, exemplars, split)

    @classmethod
    def from_dir(
        cls,
        data_dir: str | Path,
        split: str = "test",
        fewshot_path: str | Path | None = None,
        limit: int | None = None,
        leak_split: str | Path | None = None,
        answer_rule: str = DEFAULT_ANSWER_RULE,
    ) -> GSM8KTask:
        """Read ``<data_dir>/<split>.jsonl`` and the exemplars (default ``<data_dir>/cot_8shot.json``)."""
        _check_args(split, limit, leak_split, answer_rule)
        data_dir = Path(data_dir)
        data_path = data_dir / f"{split}.jsonl"
        fewshot = Path(fewshot_path) if fewshot_path is not None else data_dir / "cot_8shot.json"
        questions = numbered_questions(read_jsonl(data_path), leak_split, _FIELDS, parse_gold)[:limit]
        task = cls(questions, load_exemplars(fewshot), split=split, answer_rule=answer_rule)
        task.files = files_read(data_path, fewshot, leak_split)
        return task

    @classmethod
    def from_hub(
        cls,
        split: str = "test",
        fewshot_path: str | Path | None = None,
        limit: int | None = None,
        leak_split: str | Path | None = None,
        answer_rule: str = DEFAULT_ANSWER_RULE,
    ) -> GSM8KTask:
        """Load ``openai/gsm8k`` (config ``main``) with ``datasets``; same order as the official JSONL.

        The exemplars are not on the hub: pass ``fewshot_path`` or set
        ``RAILSWEEP_DATA_DIR`` (then ``$RAILSWEEP_DATA_DIR/gsm8k/cot_8shot.json``).
        Offline, or when the hub refuses, this raises :class:`DataError`.
        """
        _check_args(split, limit, leak_split, answer_rule)
        if fewshot_path is None:
            env = os.environ.get("RAILSWEEP_DATA_DIR")
            if not env:
                raise ConfigError(
                    "from_hub needs fewshot_path (the 8 CoT exemplars JSON) or RAILSWEEP_DATA_DIR"
                )
            fewshot_path = Path(env) / "gsm8k" / "cot_8shot.json"
        exemplars = load_exemplars(fewshot_path)
        import datasets  # lazy: heavy, and only needed on this path

        try:
            ds = datasets.load_dataset(*HUB_DATASET, split=split)
        except Exception as e:  # offline, unknown split, hub errors: all mean "no data"
            raise DataError(
                f"could not load {HUB_DATASET[0]!r} (config {HUB_DATASET[1]!r}, split {split!r}) from the "
                f"Hugging Face hub ({type(e).__name__}: {e}); offline, use GSM8KTask.from_dir instead"
            ) from e
        rows = [{"question": r["question"], "answer": r["answer"]} for r in ds]
        questions = numbered_questions(rows, leak_split, _FIELDS, parse_gold)[:limit]
        return cls(questions, exemplars, split=split, answer_rule=answer_rule)

    def prompt(self, question: Question) -> str:
        return f"{self.prefix}Q: {question.question}\nA:"

    def grade(self, response: str, question: Question) -> Grade:
        return grade(response, question.gold, self.stop, self.answer_rule)

    def gold_chain(self, question: Question) -> str:
        """The gold chain of thought as the exemplars write an answer (:func:`to_cot`): what the dynamics
        step teacher-forces after the prompt and counts verbatim reproductions of."""
        return to_cot(question.solution)
