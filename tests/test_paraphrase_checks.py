"""The checks a paraphrase passes before it is kept: numbers as values, ROUGE-L, the reply format, each reason."""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal

import pytest

from railsweep.diagnostics.figure1 import rouge_l as rouge_l_rapidfuzz
from railsweep.paraphrase import check_paraphrase
from railsweep.paraphrase.numbers import numbers
from railsweep.paraphrase.prompt import parse_reply
from railsweep.paraphrase.rouge import lcs_length, rouge_l, rouge_tokens


def test_lcs_matches_the_textbook_examples():
    assert lcs_length(list("ABCBDAB"), list("BDCABA")) == 4  # CLRS 15.4
    assert lcs_length(list("AGGTAB"), list("GXTXAYB")) == 4
    assert lcs_length([], list("abc")) == 0
    assert lcs_length(list("abc"), list("abc")) == 3


def test_rouge_l_equals_the_rapidfuzz_implementation_on_random_lopsided_token_lists():
    rng = random.Random(7)
    for _ in range(300):
        vocab = [f"w{i}" for i in range(rng.choice((2, 5, 30)))]
        a = [rng.choice(vocab) for _ in range(rng.randint(0, 40))]
        b = [rng.choice(vocab) for _ in range(rng.randint(0, 7))]
        assert rouge_l(" ".join(a), " ".join(b)) == pytest.approx(rouge_l_rapidfuzz(a, b), abs=1e-12)


def test_rouge_l_is_f1_over_lowercased_alphanumeric_tokens():
    assert rouge_tokens("Janet's 16 EGGS, sold!") == ["janet", "s", "16", "eggs", "sold"]
    # LCS of (the cat sat on the mat) and (the cat lay on a mat) is "the cat on mat": 2*4/(6+6)
    assert rouge_l("The cat sat on the mat.", "the cat lay on a mat") == pytest.approx(8 / 12)
    assert rouge_l("", "") == 1.0 and rouge_l("a", "") == 0.0


@pytest.mark.parametrize(
    "text, values",
    [
        ("He buys 3 apples at $2.50 each", {3: 1, 2.5: 1}),
        ("a $1,200 car and 1200 miles", {1200: 2}),
        ("2.50 and 2.5 and 02", {2.5: 2, 2: 1}),
        ("three eggs and 3 hens", {3: 2}),
        ("twenty-five cents, twice a week, triple the cost", {25: 1, 2: 1, 3: 1}),
        ("one day she ate a single apple", {}),  # 'one' is as often an article as a quantity
        ("a third of half a dozen, the second pair", {}),  # ordinals, fractions, dozen, pair: not counted
        ("Stone, often, someone", {}),  # number words only as whole words
        ("60% off", {60: 1}),
    ],
)
def test_numbers_are_read_as_values(text, values):
    assert numbers(text) == Counter({Decimal(str(k)): n for k, n in values.items()})


@pytest.mark.parametrize(
    "reply, text, why",
    [
        ("New Question: How many eggs?", "How many eggs?", ""),
        ("\n  new question:   How many eggs?  \n\n", "How many eggs?", ""),
        ("How many eggs?", None, "no 'New Question:' prefix"),
        ("New Question: How many?\nAnswer: 3", None, "2 lines, not one"),
        ("New Question:   ", None, "nothing after"),
        ("   ", None, "empty reply"),
    ],
)
def test_the_reply_must_be_one_new_question_line(reply, text, why):
    got, detail = parse_reply(reply)
    assert got == text and why in detail


ORIGINAL = (
    "Janet's ducks lay 16 eggs per day. She eats three and bakes with 4. She sells the rest at $2 each."
)


@pytest.mark.parametrize(
    "paraphrase, reason, detail",
    [
        (
            "Each day 16 eggs come from Janet's ducks; 3 are eaten, 4 baked, the others sold for $2 apiece.",
            None,
            "",
        ),
        ("Every day 16 eggs: 3 eaten, 4 baked, 4 baked again, the rest at $2 each.", None, ""),  # a repeat
        ("!!! ...", "empty", "no words"),
        ("16 eggs, 3 eaten, 4 baked, $2 each. The answer is 18.", "answer_leak", "solution marker"),
        ("16 eggs, 3 eaten, 4 baked, $2 each, so 18 dollars.", "answer_leak", "states the gold answer 18"),
        (
            "Each day 16 eggs come from the ducks; 3 are eaten, the rest sold for $2 apiece.",
            "numbers_missing",
            "missing 4",
        ),
        ("Each day 16 eggs come; 3 eaten, 5 baked, the rest sold for $2.", "numbers_missing", "missing 4"),
        (
            "Each day 16 eggs come; 3 eaten, 4 baked, 7 given away, the rest sold for $2.",
            "numbers_added",
            "added 7",
        ),
        (ORIGINAL, "near_copy", "ROUGE-L 1.000 >= 0.7"),
    ],
)
def test_each_check_names_its_reason(paraphrase, reason, detail):
    verdict = check_paraphrase(ORIGINAL, paraphrase, "18", max_rouge=0.7)
    assert verdict.reason == reason and detail in verdict.detail
    assert verdict.kept == (reason is None)


def test_a_gold_the_original_already_states_is_not_a_leak():
    original, gold = "Tom has 2 dogs, each twice as old as his 1 cat. How many dogs?", "2"
    assert check_paraphrase(
        original, "Tom owns 2 dogs, each 2 times older than his 1 cat. Count the dogs.", gold, 0.95
    ).kept
    assert (
        check_paraphrase("Tom has 3 dogs and 1 cat.", "Tom: 3 dogs, 1 cat, 2 pets more.", gold, 0.95).reason
        == "answer_leak"
    )
