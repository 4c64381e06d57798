"""The checks a paraphrase passes before it is kept: numbers as values, ROUGE-L, the reply format, each reason."""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal

import pytest

from railsweep.diagnostics.figure1 import rouge_l as rouge_l_rapidfuzz
from railsweep.errors import ConfigError
from railsweep.paraphrase import check_paraphrase
from railsweep.paraphrase.numbers import numbers
from railsweep.paraphrase.prompt import parse_reply
from railsweep.paraphrase.rouge import lcs_length, rouge_l, rouge_tokens
from railsweep.paraphrase.spans import formulas, names


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
        ("twenty-one eggs and one day", {21: 1}),  # 'one' after a tens word is a quantity, never an article
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


MATH_Q = r"If $\frac{1}{2} x + 3 = 7$, what is the value of $x$?"


@pytest.mark.parametrize(
    ("paraphrase", "gold", "reason", "detail"),
    [
        (r"What value of \(x\) makes \(\dfrac{1}{2}x+3=7\) true?", r"8", None, ""),
        (r"Find $x$ when $\frac{1}{2} x = 7 - 3$.", r"8", "formulas_missing", r"$\frac{1}{2}x+3=7$"),
        (r"Find $x$ for $\frac{1}{2} x + 3 = 7$ (it is $\frac{3}{4}$).", r"\frac{3}{4}", "answer_leak", r"\frac{3}{4}"),
        (r"Find $x$ for $\left(\frac{1}{2} x\right) + 3 = 7$.", r"\frac{3}{4}", "formulas_missing", "missing"),
        (r"Solve $\frac{1}{2} x + 3 = 7$ for the unknown $x$.", r"\frac{3}{4}", None, ""),
    ],
)
def test_a_math_paraphrase_keeps_every_formula_and_never_states_a_latex_gold(paraphrase, gold, reason, detail):
    verdict = check_paraphrase(MATH_Q, paraphrase, gold, max_rouge=0.9, answer_type="math")
    assert verdict.reason == reason and detail in verdict.detail


def test_formulas_are_compared_without_spacing_sizing_or_the_frac_variant():
    assert formulas(r"$\left( \dfrac{1}{2}\, x \right)$ and \[ y^2 \]") == Counter({r"(\frac{1}{2}x)": 1, "y^2": 1})
    assert formulas(r"costs \$5 and \$6") == Counter()  # MATH writes currency as an escaped dollar


STRING_Q = "Which city hosted the 1900 Summer Olympics, according to Pierre de Coubertin?"


@pytest.mark.parametrize(
    ("paraphrase", "reason", "detail"),
    [
        ("Pierre de Coubertin says the Summer Olympics of 1900 were hosted by which city?", None, ""),
        ("According to Coubertin, which city hosted the Summer Olympics in 1900?", "names_missing", "Pierre"),
        ("According to Pierre de Coubertin, did PARIS host the 1900 Summer Olympics?", "answer_leak", "Paris"),
        ("According to Pierre de Coubertin, which city hosted the 1904 Summer Olympics?", "numbers_missing", "1900"),
    ],
)
def test_a_string_answer_paraphrase_keeps_the_names_and_never_states_the_gold(paraphrase, reason, detail):
    verdict = check_paraphrase(STRING_Q, paraphrase, "Paris", max_rouge=0.9, answer_type="string")
    assert verdict.reason == reason and detail in verdict.detail


def test_names_are_capitalised_words_that_do_not_start_a_sentence():
    assert names("Alice met Bob in Paris. Then she left. The Eiffel Tower stood.") == {"Bob", "Paris", "Eiffel", "Tower"}
    assert check_paraphrase(STRING_Q, "Which city was host in 1900 to the Olympics?", "Paris", 0.9).kept  # numeric task


def test_an_unknown_answer_type_is_refused():
    with pytest.raises(ConfigError, match="answer type must be one of"):
        check_paraphrase("a b", "c d", "1", 0.9, answer_type="boolean")
