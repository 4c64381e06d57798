"""Loading the PQ paraphrases: empty rows, bad lines, alignment with the test split."""

from __future__ import annotations

import json
import logging

import pytest

from railsweep.errors import DataError
from railsweep.tasks import GSM8KTask, load_paraphrases
from railsweep.tasks.data.shared_data import shared_data_dir

DATA = shared_data_dir()
PQ = DATA / "gsm8k_paraphrase" / "lmsys_rephrase" / "pq_test.jsonl"
EMPTY = [309, 669, 727, 948]


def test_empty_paraphrases_fall_back_to_the_original_question_with_a_warning(caplog):
    questions = GSM8KTask.from_dir(DATA / "gsm8k").questions()
    with caplog.at_level(logging.WARNING, logger="railsweep.tasks.data.paraphrases"):
        pq = load_paraphrases(PQ, originals=questions)
    assert len(pq) == 1319
    for i in EMPTY:
        assert pq[i] == questions[i].question
    assert pq[0] != questions[0].question and "16 eggs" in pq[0]
    assert str(EMPTY) in caplog.text


def test_empty_paraphrases_are_left_out_without_originals(caplog):
    with caplog.at_level(logging.WARNING, logger="railsweep.tasks.data.paraphrases"):
        pq = load_paraphrases(PQ)
    assert len(pq) == 1315 and not set(EMPTY) & set(pq)
    assert str(EMPTY) in caplog.text


def _write(tmp_path, lines):
    p = tmp_path / "pq.jsonl"
    p.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return p


def test_malformed_line_raises_data_error_with_line_number(tmp_path):
    good = json.dumps({"idx": 0, "question": "Q0", "answer": "1", "empty": False})
    p = _write(tmp_path, [good, "{not json"])
    with pytest.raises(DataError, match=r"pq\.jsonl:2"):
        load_paraphrases(p)


def test_missing_field_raises_data_error_naming_it(tmp_path):
    p = _write(tmp_path, [json.dumps({"idx": 0, "answer": "1"})])
    with pytest.raises(DataError, match=r"pq\.jsonl:1.*question"):
        load_paraphrases(p)


def test_duplicate_idx_raises_data_error(tmp_path):
    row = json.dumps({"idx": 3, "question": "Q", "answer": "1"})
    with pytest.raises(DataError, match="duplicate idx 3"):
        load_paraphrases(_write(tmp_path, [row, row]))


def test_answer_misaligned_with_test_gold_raises_data_error(tmp_path):
    questions = GSM8KTask.from_dir(DATA / "gsm8k", limit=2).questions()
    p = _write(tmp_path, [json.dumps({"idx": 1, "question": "reworded", "answer": "999"})])
    with pytest.raises(DataError, match="idx 1"):
        load_paraphrases(p, originals=questions)


def test_blank_question_counts_as_empty_even_when_flag_is_false(tmp_path):
    p = _write(tmp_path, [json.dumps({"idx": 0, "question": "  ", "answer": "1", "empty": False})])
    assert load_paraphrases(p, originals={0: "original"}) == {0: "original"}
