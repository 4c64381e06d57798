"""A task run from a task file (:mod:`railsweep.tasks.kinds.file_spec`), every prompt rendered up front.

Building a :class:`FileTask` (steps):

1. fill ``{task_dir}`` and ``{split}`` into the data and few-shot paths and read the rows;
2. drop the rows ``data.keep_if`` rejects; number the rest by ``fields.index`` (else the row number), once each;
3. render the few-shot block once (``description``, then per exemplar ``doc_to_text + target_delimiter +
   doc_to_target + fewshot_delimiter``, as lm-eval does), then every prompt and gold, so a template failing on
   any row fails before a model loads, naming the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from railsweep.errors import ConfigError, DataError
from railsweep.tasks.answers.file_rules import grade_with
from railsweep.tasks.base import Grade, Question
from railsweep.tasks.data.leak_split import read_leak_split
from railsweep.tasks.data.rows import format_of, read_hub, read_rows
from railsweep.tasks.data.text import existing_file
from railsweep.tasks.kinds.file_spec import TaskSpec, fill_path
from railsweep.tasks.kinds.file_templates import compile_condition, compile_template


def _render(fn: Any, row: dict[str, Any], where: str, field: str) -> str:
    try:
        return fn(row)
    except (TemplateError, TypeError, AttributeError) as e:  # a missing field, a method on a non-string
        raise DataError(f"{where}: task field {field} does not render ({type(e).__name__}: {e})") from None


class FileTask:
    """The task a task file declares, on one split, graded under one of its answer rules."""

    def __init__(self, spec: TaskSpec, task_dir: str | Path | None = None, split: str = "test",
                 fewshot_path: str | Path | None = None, limit: int | None = None, leak_split: str | Path | None = None,
                 answer_rule: str | None = None):  # fmt: skip
        self.spec = spec
        self.name = spec.name
        self.stop = spec.stop
        self.answer_type = spec.answer_type
        self.answer_rule = answer_rule or spec.rule_names[0]
        self._extractor = spec.rule(self.answer_rule)
        self.split = split
        rows, data_file = self._read_data(task_dir, split)
        self.files: tuple[Path, ...] = (data_file,) if data_file else ()
        self.prefix = self._render_prefix(task_dir, fewshot_path)
        kept = self._number(rows, data_file)
        leaked = read_leak_split(leak_split, len(rows))
        self.files += (Path(leak_split),) if leak_split is not None else ()
        self._build(kept[:limit] if limit else kept, leaked, data_file or spec.source)

    def _read_data(self, task_dir: Any, split: str) -> tuple[list[dict[str, Any]], Path | None]:
        d = self.spec.data
        if d.hub is not None:
            return read_hub(d.hub, d.config, split), None
        path = fill_path(self.spec, d.path, task_dir, split)  # type: ignore[arg-type]
        return read_rows(path, format_of(path, d.format)), path  # type: ignore[arg-type]

    def _render_prefix(self, task_dir: Any, override: str | Path | None) -> str:
        f = self.spec.fewshot
        if f is None:
            return self.spec.description
        if override is not None or f.path is not None:
            given = override if override is not None else fill_path(self.spec, f.path, task_dir, self.split)  # type: ignore[arg-type]
            path = existing_file(given, "few-shot exemplar")
            exemplars = read_rows(path, format_of(path) or "json")
            self.files += (path,)
        else:
            exemplars = self._read_data(task_dir, f.split)[0]  # type: ignore[arg-type]
        exemplars = exemplars[: f.n] if f.n else exemplars
        if not exemplars:
            raise DataError(f"task {self.name!r}: the few-shot source has no exemplars")
        text, target = compile_template(f.doc_to_text), compile_template(f.doc_to_target)
        parts = []
        for i, ex in enumerate(exemplars):
            where = f"{self.name} few-shot exemplar {i}"
            parts.append(
                _render(text, ex, where, "fewshot.doc_to_text") + self.spec.target_delimiter
                + _render(target, ex, where, "fewshot.doc_to_target") + self.spec.fewshot_delimiter
            )
        return self.spec.description + "".join(parts)

    def _number(self, rows: list[dict[str, Any]], source: Path | None) -> list[tuple[int, dict[str, Any]]]:
        keep = compile_condition(self.spec.data.keep_if) if self.spec.data.keep_if else None
        field = self.spec.index_field
        out, seen = [], set()
        for lineno, row in enumerate(rows):
            where = f"{source or self.spec.data.hub} row {lineno}"
            if keep is not None and not _render(keep, row, where, "data.keep_if"):
                continue
            index = lineno if field is None else row.get(field)
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise DataError(f"{where}: index field {field!r} must be a non-negative integer, got {index!r}")
            if index in seen:
                raise DataError(f"{where}: index {index} appears twice")
            seen.add(index)
            out.append((index, row))
        return out

    def _build(self, kept: list[tuple[int, dict[str, Any]]], leaked: frozenset[int] | None, source: Any) -> None:
        s = self.spec
        text, target = compile_template(s.doc_to_text), compile_template(s.doc_to_target)
        chain = compile_template(s.gold_chain) if s.gold_chain else None
        self._prompts: dict[int, str] = {}
        self._chains: dict[int, str] = {}
        questions = []
        for index, row in kept:
            where = f"{source} question {index}"
            for name in (s.question_field, s.solution_field):
                if name is not None and not isinstance(row.get(name), str):
                    raise DataError(f"{where}: field {name!r} must be a string, got {row.get(name)!r}")
            gold = s.grader.gold(_render(target, row, where, "doc_to_target"))
            if not gold:
                raise DataError(f"{where}: doc_to_target renders an empty gold answer")
            self._prompts[index] = self.prefix + _render(text, row, where, "doc_to_text")
            if chain is not None:
                self._chains[index] = _render(chain, row, where, "gold_chain")
            solution = row[s.solution_field] if s.solution_field else ""
            was_leaked = None if leaked is None else index in leaked
            questions.append(Question(index, row[s.question_field], solution, gold, was_leaked))
        self._questions = tuple(questions)

    def questions(self) -> Sequence[Question]:
        return self._questions

    def prompt(self, question: Question) -> str:
        return self._prompts[question.index]

    def grade(self, response: str, question: Question) -> Grade:
        return grade_with(self._extractor, response, question.gold, self.stop)

    def grade_under(self, rule: str, response: str, question: Question) -> Grade:
        """``response`` graded under another of the file's answer rules (for the rule-agreement counts)."""
        return grade_with(self.spec.rule(rule), response, question.gold, self.stop)

    def gold_chain(self, question: Question) -> str:
        """The gold chain of thought the task file's ``gold_chain`` template renders (the dynamics step)."""
        if not self._chains:
            raise ConfigError(f"task {self.name!r} ({self.spec.source}) declares no gold_chain template")
        return self._chains[question.index]
