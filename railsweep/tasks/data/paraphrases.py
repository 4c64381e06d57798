"""Paraphrased GSM8K test questions (the "PQ" contamination domain).

PQ only builds M_co's training data (leaked questions reworded, with the original chain and gold); evaluation
uses the originals. One ``{"idx", "question", "answer", "empty"}`` per line, ``idx`` the line in ``test.jsonl``.

Empty paraphrases **[decision]**: the public file has 4 (idx 309, 669, 727, 948); a row is empty when
``"empty"`` is true or its question is blank. Given ``originals`` it falls back to the ORIGINAL question
(every leaked question is still trained on), else it is left out; a warning lists them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from railsweep.errors import DataError
from railsweep.tasks.answers.gsm8k_solution import parse_gold
from railsweep.tasks.base import Question
from railsweep.tasks.data.text import existing_file, json_lines

log = logging.getLogger(__name__)


def _parse_row(row: Any, where: str) -> tuple[int, str, str, bool]:
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in ("idx", "question", "answer") if k not in row]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing}")
    idx, question, answer = row["idx"], row["question"], row["answer"]
    if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
        raise DataError(f"{where}: 'idx' must be a non-negative integer, got {idx!r}")
    if not isinstance(question, str) or not isinstance(answer, str):
        raise DataError(f"{where}: 'question' and 'answer' must be strings")
    empty = bool(row.get("empty", False)) or not question.strip()
    return idx, question.strip(), answer.strip(), empty


def load_paraphrases(path: str | Path,
                     originals: Sequence[Question] | Mapping[int, str] | None = None) -> dict[int, str]:  # fmt: skip
    """Paraphrase text by GSM8K test index. ``originals``: the test questions or index -> text; given Questions,
    each row's answer must equal its gold (commas ignored), else the file is misaligned: DataError."""
    path = existing_file(path, "paraphrase")
    questions = [] if originals is None or isinstance(originals, Mapping) else list(originals)
    by_index = originals if isinstance(originals, Mapping) else {q.index: q.question for q in questions}
    gold = {q.index: q.gold for q in questions}

    out: dict[int, str] = {}
    empty: list[int] = []
    for lineno, row in json_lines(path, skip_blank=True):
        idx, question, answer, is_empty = _parse_row(row, f"{path}:{lineno}")
        if idx in out or idx in empty:
            raise DataError(f"{path}:{lineno}: duplicate idx {idx}")
        if idx in gold and parse_gold("#### " + answer) != gold[idx]:
            raise DataError(f"{path}:{lineno}: answer {answer!r} for idx {idx} differs from the test gold {gold[idx]!r}")
        if not is_empty:
            out[idx] = question
            continue
        empty.append(idx)
        if originals is not None and idx not in by_index:
            raise DataError(f"{path}:{lineno}: empty paraphrase for idx {idx} and no original question")
        if originals is not None:
            out[idx] = by_index[idx]
    if empty:
        what = "fell back to the original question" if originals is not None else "were left out"
        log.warning("%d empty paraphrase(s) in %s %s: idx %s", len(empty), path, what, sorted(empty))
    return out
