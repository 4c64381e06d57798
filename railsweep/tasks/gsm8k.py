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
``first`` or ``lm_eval``, see :mod:`railsweep.tasks.grading`).

Question indices are 0-based line numbers in the split's JSONL file (GSM8K
test index); ``leaked`` comes from a leak-split JSON ``{"leaked": [...]}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError, DataError
from railsweep.tasks.answers import parse_gold, to_cot
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, Grade, Question
from railsweep.tasks.grading import STOP, check_answer_rule, grade
from railsweep.tasks.text import exemplar_list, json_lines, read_utf8

HUB_DATASET = ("openai/gsm8k", "main")


def render_fewshot_prefix(exemplars: Iterable[dict[str, str]]) -> str:
    """The few-shot prefix: ``"Q: {question}\\nA: {answer}\\n\\n"`` per exemplar."""
    return "".join(f"Q: {ex['question']}\nA: {ex['answer']}\n\n" for ex in exemplars)


def load_exemplars(path: str | Path) -> list[dict[str, str]]:
    """The CoT exemplars: a JSON list of ``{"question", "answer"}`` (answers end "The answer is N.")."""
    data = exemplar_list(path, "question, answer")
    for i, ex in enumerate(data):
        if not (
            isinstance(ex, dict) and isinstance(ex.get("question"), str) and isinstance(ex.get("answer"), str)
        ):
            raise DataError(f"{path}: exemplar {i} is not an object with string 'question' and 'answer'")
    return [{"question": ex["question"], "answer": ex["answer"]} for ex in data]


def read_jsonl(path: str | Path) -> list[dict[str, str]]:
    """Official-format GSM8K rows ``{"question", "answer"}``; a malformed line -> DataError with its number."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"GSM8K file not found: {path}")
    rows = []
    for lineno, row in json_lines(path):
        if not (isinstance(row, dict) and isinstance(row.get("question"), str)):
            raise DataError(f"{path}:{lineno}: expected an object with string 'question' and 'answer'")
        if not isinstance(row.get("answer"), str) or "####" not in row["answer"]:
            raise DataError(f"{path}:{lineno}: 'answer' must be a solution string ending in '#### N'")
        try:
            parse_gold(row["answer"])
        except DataError as e:
            raise DataError(f"{path}:{lineno}: {e}") from e
        rows.append(row)
    return rows


def read_leak_split(path: str | Path, n_total: int) -> frozenset[int]:
    """The leaked test indices from ``{"leaked": [...], ...}``; each must lie in ``[0, n_total)``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"leak split file not found: {path}")
    try:
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    leaked = data.get("leaked") if isinstance(data, dict) else None
    if not isinstance(leaked, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in leaked
    ):
        raise DataError(f"{path}: expected an object with 'leaked': a list of integer test indices")
    bad = sorted(i for i in leaked if not 0 <= i < n_total)
    if bad:
        raise DataError(f"{path}: leaked indices out of range [0, {n_total}): {bad[:10]}")
    return frozenset(leaked)


def _build_questions(rows: Sequence[dict[str, Any]], leaked: frozenset[int] | None) -> list[Question]:
    return [
        Question(
            index=i,
            question=row["question"],
            solution=row["answer"],
            gold=parse_gold(row["answer"]),
            leaked=None if leaked is None else i in leaked,
        )
        for i, row in enumerate(rows)
    ]


def _check_args(split: str, limit: int | None, leak_split: str | Path | None, answer_rule: str) -> None:
    check_answer_rule(answer_rule)
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a positive integer or None, got {limit!r}")
    if leak_split is not None and split != "test":
        raise ConfigError(f"leak_split indexes the test split; got split={split!r}")


class GSM8KTask:
    """GSM8K questions + the 8-shot CoT prompt + the grader under ``answer_rule`` (implements ``Task``)."""

    name = "gsm8k"
    stop = STOP
    answer_type = "numeric"

    def __init__(
        self,
        questions: Sequence[Question],
        exemplars: Sequence[dict[str, str]],
        split: str = "test",
        answer_rule: str = DEFAULT_ANSWER_RULE,
    ):
        self.answer_rule = check_answer_rule(answer_rule)
        self._questions = tuple(questions)
        self.exemplars = tuple(exemplars)
        self.split = split
        self.prefix = render_fewshot_prefix(self.exemplars)
        self.files: tuple[Path, ...] = ()  # data files read, for provenance checksums

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
        rows = read_jsonl(data_path)
        leaked = read_leak_split(leak_split, len(rows)) if leak_split is not None else None
        questions = _build_questions(rows, leaked)[:limit]
        task = cls(questions, load_exemplars(fewshot), split=split, answer_rule=answer_rule)
        task.files = tuple(p for p in (data_path, fewshot, Path(leak_split) if leak_split else None) if p)
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
        leaked = read_leak_split(leak_split, len(rows)) if leak_split is not None else None
        return cls(_build_questions(rows, leaked)[:limit], exemplars, split=split, answer_rule=answer_rule)

    def questions(self) -> Sequence[Question]:
        return self._questions

    def prompt(self, question: Question) -> str:
        return f"{self.prefix}Q: {question.question}\nA:"

    def grade(self, response: str, question: Question) -> Grade:
        return grade(response, question.gold, self.stop, self.answer_rule)

    def gold_chain(self, question: Question) -> str:
        """The gold chain of thought as the exemplars write an answer (:func:`to_cot`): what the dynamics
        step teacher-forces after the prompt and counts verbatim reproductions of."""
        return to_cot(question.solution)
