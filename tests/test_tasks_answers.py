"""Gold parsing and the CoT rendering of GSM8K solutions used to build training data."""

from __future__ import annotations

import pytest

from railsweep.errors import DataError
from railsweep.tasks import parse_gold, to_cot

SOLUTION = (
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
    "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer\u2019s market\n"
    "#### 18"
)


def test_parse_gold_removes_thousands_commas():
    assert parse_gold("Total is 2,125\n#### 2,125") == "2125"


def test_parse_gold_keeps_a_negative_sign():
    assert parse_gold("Lost\n#### -3") == "-3"


def test_parse_gold_without_answer_line_raises_data_error():
    with pytest.raises(DataError, match="####"):
        parse_gold("no final line")


def test_to_cot_strips_annotations_and_ends_with_the_answer_sentence():
    assert to_cot(SOLUTION) == (
        "Janet sells 16 - 3 - 4 = 9 duck eggs a day. "
        "She makes 9 * 2 = $18 every day at the farmer\u2019s market. The answer is 18."
    )


def test_to_cot_is_one_line_without_the_hash_marker():
    out = to_cot("A is 1,000+<<1000+5=1005>>1,005\n\nB:  2\n#### 1,005")
    assert "\n" not in out and "####" not in out and "<<" not in out
    assert out == "A is 1,000+1,005. B: 2. The answer is 1005."
