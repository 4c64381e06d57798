"""What the coded task kinds (:mod:`~railsweep.tasks.kinds.gsm8k`, :mod:`~railsweep.tasks.kinds.math`) share.

Both read ``<data_dir>/<split>.jsonl`` (a question's index: its 0-based line) and a few-shot exemplar file;
``leaked`` comes from a leak split. A kind declares its readers, prompt labels and rule check as class attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from railsweep.errors import ConfigError
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, Grade, Question
from railsweep.tasks.data.leak_split import read_leak_split

_T = TypeVar("_T", bound="CodedTask")


class CodedTask:
    """Questions + a few-shot prefix rendered once from the exemplars + the files read (a ``Task``)."""

    name: str
    stop: tuple[str, ...]
    answer_type: str
    fields: tuple[str, str]  # a row's question and solution fields
    labels: tuple[str, str]  # the prompt's labels of a question and its answer ("Q", "A")
    check_rule: Callable[[str], str]  # ConfigError unless the kind reads answers under the rule
    read_rows: Callable[[Path], list[dict[str, str]]]
    load_exemplars: Callable[[Path], list[dict[str, str]]]
    gold: Callable[[str], str]  # a solution's gold answer
    default_fewshot: Callable[[Path], Path]  # the exemplar file read from a data folder when none is given
    grader: Callable[[str, str, tuple[str, ...], str], Grade]  # (response, gold, stop, answer rule)
    to_chain: Callable[[str], str]  # a solution in the exemplars' answer format

    def __init__(self, questions: Sequence[Question], exemplars: Sequence[dict[str, str]], split: str = "test",
                 answer_rule: str = DEFAULT_ANSWER_RULE):  # fmt: skip
        self.answer_rule = self.check_rule(answer_rule)
        self._questions = tuple(questions)
        self.exemplars = tuple(exemplars)
        self.split = split
        self.prefix = self.render_prefix(self.exemplars)
        self.files: tuple[Path, ...] = ()  # data files read, for provenance checksums

    @classmethod
    def render_prefix(cls, exemplars: Sequence[dict[str, str]]) -> str:
        """The few-shot prefix: ``"{Q}: {question}\\n{A}: {answer}\\n\\n"`` per exemplar (:attr:`labels`)."""
        (q, a), (qf, af) = cls.labels, cls.fields
        return "".join(f"{q}: {ex[qf]}\n{a}: {ex[af]}\n\n" for ex in exemplars)

    @classmethod
    def from_dir(cls: type[_T], data_dir: str | Path, split: str = "test", fewshot_path: str | Path | None = None,
                 limit: int | None = None, leak_split: str | Path | None = None,
                 answer_rule: str = DEFAULT_ANSWER_RULE) -> _T:  # fmt: skip
        """Read ``<data_dir>/<split>.jsonl`` and the exemplars (default :meth:`default_fewshot`)."""
        cls.check_rule(answer_rule)
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ConfigError(f"limit must be a positive integer or None, got {limit!r}")
        if leak_split is not None and split != "test":
            raise ConfigError(f"leak_split indexes the test split; got split={split!r}")
        data_path = Path(data_dir) / f"{split}.jsonl"
        fewshot = Path(fewshot_path) if fewshot_path is not None else cls.default_fewshot(Path(data_dir))
        rows = cls.read_rows(data_path)
        leaked = read_leak_split(leak_split, len(rows))
        q, a = cls.fields
        questions = [Question(i, row[q], row[a], cls.gold(row[a]), None if leaked is None else i in leaked)
                     for i, row in enumerate(rows)]  # fmt: skip
        task = cls(questions[:limit], cls.load_exemplars(fewshot), split=split, answer_rule=answer_rule)
        task.files = (data_path, fewshot, *([Path(leak_split)] if leak_split else []))
        return task

    def questions(self) -> Sequence[Question]:
        return self._questions

    def prompt(self, question: Question) -> str:
        q, a = self.labels
        return f"{self.prefix}{q}: {question.question}\n{a}:"

    def grade(self, response: str, question: Question) -> Grade:
        return self.grader(response, question.gold, self.stop, self.answer_rule)

    def gold_chain(self, question: Question) -> str:
        """The gold chain of thought as the exemplars write an answer: what the dynamics step teacher-forces
        after the prompt and counts verbatim reproductions of."""
        return self.to_chain(question.solution)
