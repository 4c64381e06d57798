"""The miniature benchmark: deterministic problems, faithful paraphrases, exact tokenizer, tiny family configs."""

from __future__ import annotations

import random
import re

import pytest
import torch

from railsweep.errors import ConfigError
from railsweep.miniworld.generator import make_filler, make_problem, make_problems
from railsweep.miniworld.models import FAMILIES, ModelSize, model_config
from railsweep.miniworld.tokenizer import train_tokenizer
from railsweep.tasks import grade, parse_gold, to_cot


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+", text)


def test_same_seed_gives_the_same_problems_and_distinct_questions():
    a, b = make_problems(300, seed=7), make_problems(300, seed=7)
    assert a == b
    assert len({p.question for p in a}) == 300
    assert make_problems(5, seed=8) != a[:5]


def test_problems_take_two_to_four_steps_with_small_exact_arithmetic():
    for p in make_problems(500, seed=1):
        steps = p.solution.splitlines()[:-1]
        assert 2 <= len(steps) <= 4
        for expr, result in re.findall(r"<<([^=]+)=(\d+)>>", p.solution):
            assert eval(expr) == int(result) and 0 <= int(result) <= 100  # noqa: S307 - generated digits only
        assert parse_gold(p.solution) == str(p.answer)


def test_difficulty_bounds_every_number_and_every_gain_or_loss():
    for p in make_problems(300, seed=5, limit=40, max_operand=10):
        for a, sym, x, result in re.findall(r"<<(\d+)([-+*/])(\d+)=(\d+)>>", p.solution):
            assert max(int(a), int(x), int(result)) <= 40
            if sym in "+-":
                assert int(x) <= 10


def test_paraphrase_keeps_the_numbers_and_answer_but_changes_the_wording():
    for p in make_problems(200, seed=2):
        assert _numbers(p.paraphrase) == _numbers(p.question)
        assert p.paraphrase != p.question
        assert p.paraphrase.split(".")[0] != p.question.split(".")[0]


def test_cot_rendering_of_every_gold_solution_grades_correct():
    for p in make_problems(200, seed=3):
        assert grade(to_cot(p.solution), str(p.answer)).correct


def test_solution_wording_varies_between_problems_with_the_same_operation():
    openings = {p.solution.splitlines()[0].split(" ")[0] for p in make_problems(300, seed=4)}
    assert len(openings) >= 6


def test_filler_has_no_arithmetic():
    assert not any(_numbers(t) for t in make_filler(100, seed=0))


def test_tokenizer_round_trips_text_and_keeps_numbers_whole(tmp_path):
    from transformers import AutoTokenizer

    problems = make_problems(200, seed=5)
    texts = [f"Q: {p.question}\nA: {to_cot(p.solution)}" for p in problems]
    tok = AutoTokenizer.from_pretrained(train_tokenizer(texts, tmp_path / "tok", max_number=120))
    for t in texts[:50]:
        ids = tok(t).input_ids
        assert tok.unk_token_id not in ids
        assert tok.decode(ids, skip_special_tokens=True) == t
    for n in (0, 7, 58, 100, 120):
        assert len(tok(f" {n}", add_special_tokens=False).input_ids) == 1
        assert len(tok(f"{n}", add_special_tokens=False).input_ids) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_builds_a_tiny_model_with_head_dim_64(family):
    from transformers import AutoModelForCausalLM

    cfg = model_config(
        family, ModelSize(hidden=128, layers=2, intermediate=256), vocab_size=50, bos=2, eos=3, pad=0
    )
    model = AutoModelForCausalLM.from_config(cfg)
    assert cfg.hidden_size // cfg.num_attention_heads == 64
    assert model(input_ids=torch.tensor([[2, 5, 6, 7]])).logits.shape == (1, 4, 50)


def test_unknown_family_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown model family 'gpt2'"):
        model_config("gpt2", ModelSize(), vocab_size=10, bos=1, eos=2, pad=0)


def test_make_problem_depends_only_on_its_rng():
    assert make_problem(random.Random(11)) == make_problem(random.Random(11))
