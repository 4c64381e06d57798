"""CDD's peakedness against a literal transcription of the official CDD.py."""

from __future__ import annotations

import numpy as np
import pytest

from railsweep.detection.base import DetectInputs, Item
from railsweep.detection.cdd import CDD, CDDConfig, peakedness
from railsweep.errors import ConfigError


def official_levenshtein(str1, str2):
    """CDD.py's levenshtein_distance, transcribed."""
    if len(str1) > len(str2):
        str1, str2 = str2, str1
    distances = range(len(str1) + 1)
    for index2, char2 in enumerate(str2):
        new_distances = [index2 + 1]
        for index1, char1 in enumerate(str1):
            if char1 == char2:
                new_distances.append(distances[index1])
            else:
                new_distances.append(1 + min((distances[index1], distances[index1 + 1], new_distances[-1])))
        distances = new_distances
    return distances[-1]


def official_peak(greedy, samples, alpha=0.05, length=100):
    """get_edit_distance_distribution_star + calculate_ratio, transcribed (token ids given)."""
    gready_sample = greedy[:length]
    distances = []
    max_length = len(gready_sample)
    for sample in samples:
        sample = sample[:length]
        distances.append(official_levenshtein(gready_sample, sample))
        max_length = max(max_length, len(sample))
    count = sum(1 for num in distances if num <= alpha * max_length)
    return count / len(distances) if len(distances) > 0 else 0


def lopsided_case(rng, n_samples, peaked):
    greedy = rng.integers(1, 8, size=int(rng.integers(0, 140))).tolist()
    samples = []
    for _ in range(n_samples):
        if peaked and rng.random() < 0.7:  # near copies of the greedy answer
            s = list(greedy)
            for _ in range(int(rng.integers(0, 4))):
                if s:
                    s[int(rng.integers(0, len(s)))] = int(rng.integers(1, 8))
        else:
            s = rng.integers(1, 8, size=int(rng.integers(0, 140))).tolist()
        samples.append(s)
    return greedy, samples


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("alpha,length", [(0.05, 100), (0.0, 100), (0.2, 30)])
def test_peakedness_equals_the_official_definition(seed, alpha, length):
    rng = np.random.default_rng(seed)
    greedy, samples = lopsided_case(rng, int(rng.integers(0, 12)), peaked=seed % 2 == 0)
    cfg = CDDConfig(alpha=alpha, max_length=length)
    assert peakedness(greedy, samples, cfg) == pytest.approx(official_peak(greedy, samples, alpha, length))


def test_identical_samples_are_fully_peaked_and_no_samples_score_zero():
    assert peakedness([1, 2, 3], [[1, 2, 3]] * 5, CDDConfig()) == 1.0
    assert peakedness([1, 2, 3], [], CDDConfig()) == 0.0


@pytest.mark.parametrize("params", [{"alpha": -0.1}, {"xi": 1.5}, {"max_length": 0}, {"temperature": 0}])
def test_bad_cdd_settings_are_refused(params):
    with pytest.raises(ConfigError):
        CDDConfig(**params)


def test_cdd_reads_greedy_and_samples_from_a_ted_cell(tmp_path):
    from railsweep.config import CellConfig
    from railsweep.engines.base import Sample
    from railsweep.results.io import write_cell
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Grade, Question

    qs = [Question(i, f"q{i}", "x\n#### 1", "1", leaked=i == 0) for i in range(2)]
    grade = Grade(True, "1", "strict")
    outs = []
    samples_of = {0: [[5, 6, 7]] * 3, 1: [[1], [2, 2], [9, 9, 9, 9]]}
    for q in qs:
        samples = [Sample(ids, "t", "stop") for ids in samples_of[q.index]]
        outs.append(
            QuestionOutcome(q.index, samples, [grade] * 3, 3, 3, 1, greedy=Sample([5, 6, 7], "g", "stop"))
        )
    cell = CellConfig(model="m", strategy="ted", task_dir=str(tmp_path), m=3)
    paths = write_cell(tmp_path / "cells", cell, outs, qs, provenance={})
    items = [Item(i, "test", f"q{i}", "x\n#### 1") for i in range(2)] + [Item(0, "control", "c", "y\n#### 2")]
    (scores,) = CDD().score(items, DetectInputs(responses=paths.responses))
    assert scores.score[0] == 1.0
    assert scores.score[1] == official_peak([5, 6, 7], samples_of[1])
    assert np.isnan(scores.score[2])  # control items have no responses in a cell
