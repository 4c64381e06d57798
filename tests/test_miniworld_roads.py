"""Several roads per problem: equivalent, correct wordings; the single-road world is unchanged."""

from __future__ import annotations

import random
import re

import pytest

from railsweep.errors import ConfigError
from railsweep.miniworld.generator import make_problems
from railsweep.miniworld.presets import WorldConfig, preset_config
from railsweep.miniworld.roads import add_noise, noise_vocabulary, render_cot, render_solution
from railsweep.tasks import grade, parse_gold, to_cot


def _results(solution: str) -> list[int]:
    """The result of every step, whichever equation form wrote it."""
    out = []
    for line in solution.splitlines()[:-1]:
        m = re.search(
            r"(\d+) (?:[-+*/]|plus|minus|times|divided by) (\d+) (?:=|is|makes) (?:<<[^>]*>>)?(\d+)", line
        )
        if m:
            out.append(int(m.group(3)))
    return out


def test_every_road_is_correct_arithmetic_and_ends_at_the_answer():
    for p in make_problems(200, seed=3, roads=True, limit=40, max_operand=10):
        rng = random.Random(0)
        for _ in range(5):
            sol = p.render(rng)
            assert parse_gold(sol) == str(p.answer)
            for expr, result in re.findall(r"<<([^=]+)=(\d+)>>", sol):
                assert eval(expr) == int(result)  # noqa: S307 - generated digits only
            assert _results(sol) == [r for _, _, _, r in p.steps]
            assert grade(to_cot(sol), str(p.answer)).correct
            assert grade(render_cot(rng, sol, p.answer), str(p.answer)).correct


def test_a_problem_has_many_distinct_roads_with_a_favourite():
    p = make_problems(1, seed=1, roads=True, limit=40, max_operand=10)[0]
    rng = random.Random(0)
    roads = [p.render(rng) for _ in range(400)]
    assert len(set(roads)) >= 50
    first = [r.splitlines()[0].split(" ")[0] for r in roads]
    counts = sorted((first.count(w) for w in set(first)), reverse=True)
    assert (
        len(counts) >= 3 and counts[0] > counts[1]
    )  # Zipf-weighted choices: one favourite, real alternatives


def test_roads_keep_questions_paraphrases_and_answers_of_the_single_road_generator():
    one = make_problems(100, seed=5, limit=40, max_operand=10)
    many = make_problems(100, seed=5, roads=True, limit=40, max_operand=10)
    assert [(p.question, p.paraphrase, p.answer) for p in one] == [
        (p.question, p.paraphrase, p.answer) for p in many
    ]
    assert sum(a.solution != b.solution for a, b in zip(one, many)) > 50


def test_the_single_road_world_keeps_its_digest():
    # the world every earlier figure was measured on; a change here silently rebuilds it
    assert preset_config("mini_one_road").digest() == "62613dd7fb13"
    assert preset_config("mini").roads and preset_config("mini").digest() != "62613dd7fb13"


def test_noise_replaces_one_wording_word_and_never_a_number_or_the_closing():
    p = make_problems(1, seed=2, roads=True)[0]
    rng = random.Random(3)
    vocab = noise_vocabulary()
    for _ in range(200):
        cot = render_cot(rng, render_solution(rng, p.start, p.steps, p.name, p.item), p.answer)
        noisy = add_noise(rng, cot, vocab)
        a, b = cot.split(" "), noisy.split(" ")
        assert len(a) == len(b)
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        assert len(diff) <= 1
        for i in diff:
            assert a[i].isalpha() and b[i] in vocab and i < len(a) - 4
        assert re.findall(r"\d+", cot) == re.findall(r"\d+", noisy)


@pytest.mark.parametrize(
    "kw",
    [dict(renderings=0, roads=True), dict(renderings=2), dict(noise=0.1), dict(noise=1.5, roads=True)],
)
def test_bad_road_settings_are_config_errors(kw):
    with pytest.raises(ConfigError):
        WorldConfig(**kw)
