"""Every metric against a naive pure-Python re-computation on lopsided inputs."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from railsweep.errors import ConfigError, DataError
from railsweep.metrics import (
    a_ppg,
    delta_minus,
    delta_plus,
    g_ap,
    g_app,
    ppg,
    readout_stability,
    s_delta_minus,
    s_delta_plus,
    sa_ppg,
    solve_prob,
    stratify,
)


def lopsided(seed: int, n: int = 257):
    """Clean probs piled at 0 with a thin tail, varying m (incl. m = 0), a contaminated model piled at 1."""
    rnd = random.Random(seed)
    m_cl = [rnd.choice([0, 1, 7, 50, 50, 50, 13]) for _ in range(n)]
    c_cl = [0 if m == 0 or rnd.random() < 0.6 else rnd.randint(0, m) for m in m_cl]
    m_co = [rnd.choice([1, 3, 50, 50, 9]) for _ in range(n)]
    c_co = [m if rnd.random() < 0.5 else rnd.randint(0, m) for m in m_co]
    r01_cl = [int(rnd.random() < 0.3) for _ in range(n)]
    r01_co = [int(rnd.random() < 0.8) for _ in range(n)]
    return c_cl, m_cl, c_co, m_co, r01_cl, r01_co


def naive_r(c, m):
    return [ci / mi if mi else 0.0 for ci, mi in zip(c, m)]


def naive_strata(c, m, B):
    return [min(B - 1, math.floor(Fraction(ci, mi) * B)) if mi else 0 for ci, mi in zip(c, m)]


def naive_stratified(values, strata):
    groups: dict[int, list[float]] = {}
    for v, s in zip(values, strata):
        groups.setdefault(s, []).append(v)
    return sum(sum(g) / len(g) for g in groups.values()) / len(groups)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("B", [1, 7, 50])
def test_all_aggregates_match_naive_recomputation(seed, B):
    c_cl, m_cl, c_co, m_co, r01_cl, r01_co = lopsided(seed)
    r_cl, r_co = naive_r(c_cl, m_cl), naive_r(c_co, m_co)
    d = [a - b for a, b in zip(r_co, r_cl)]
    n = len(d)
    strata = naive_strata(c_cl, m_cl, B)

    delta = ppg(solve_prob(c_co, m_co), solve_prob(c_cl, m_cl))
    s = stratify(c_cl, m_cl, B)
    assert s.tolist() == strata
    np.testing.assert_allclose(delta, d, atol=1e-12)
    assert a_ppg(delta) == pytest.approx(sum(abs(x) for x in d) / n)
    assert g_app(delta) == pytest.approx(abs(sum(d) / n))
    assert delta_plus(delta) == pytest.approx(sum(max(x, 0) for x in d) / n)
    assert delta_minus(delta) == pytest.approx(sum(max(-x, 0) for x in d) / n)
    assert g_ap(r01_co, r01_cl) == pytest.approx(abs(sum(r01_co) / n - sum(r01_cl) / n))
    assert sa_ppg(delta, s) == pytest.approx(naive_stratified([abs(x) for x in d], strata))
    assert s_delta_plus(delta, s) == pytest.approx(naive_stratified([max(x, 0) for x in d], strata))
    assert s_delta_minus(delta, s) == pytest.approx(naive_stratified([max(-x, 0) for x in d], strata))


def test_decomposition_identities_hold():
    c_cl, m_cl, c_co, m_co, *_ = lopsided(5)
    delta = ppg(solve_prob(c_co, m_co), solve_prob(c_cl, m_cl))
    s = stratify(c_cl, m_cl, 50)
    assert a_ppg(delta) == pytest.approx(delta_plus(delta) + delta_minus(delta))  # eq 8
    assert g_app(delta) == pytest.approx(abs(delta_plus(delta) - delta_minus(delta)))  # eq 11
    assert g_app(delta) <= a_ppg(delta)
    assert sa_ppg(delta, s) == pytest.approx(s_delta_plus(delta, s) + s_delta_minus(delta, s))


def test_metrics_vectorise_over_leading_axes():
    c_cl, m_cl, c_co, m_co, *_ = lopsided(3)
    delta = ppg(solve_prob(c_co, m_co), solve_prob(c_cl, m_cl))
    s = stratify(c_cl, m_cl, 50)
    stacked = np.stack([delta, -delta, delta * 0.5])
    np.testing.assert_allclose(
        sa_ppg(stacked, s), [sa_ppg(delta, s), sa_ppg(-delta, s), sa_ppg(delta * 0.5, s)]
    )
    np.testing.assert_allclose(a_ppg(stacked), [a_ppg(delta), a_ppg(-delta), a_ppg(delta * 0.5)])


def test_solve_probability_is_zero_when_m_is_zero():
    assert solve_prob([0, 3, 0], [0, 4, 5]).tolist() == [0.0, 0.75, 0.0]


def test_readout_stability_is_mean_absolute_batch_difference():
    assert readout_stability([1, 0, 1, 1], [0, 0, 1, 0]) == pytest.approx(0.5)
    assert readout_stability([0.2, 0.4], [0.3, 0.1]) == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("c", "m", "match"),
    [([3], [2], "0 <= c <= m"), ([-1], [2], "0 <= c <= m"), ([1.5], [2], "integer"), ([1, 2], [3], "shape")],
)
def test_bad_counts_raise_data_error_naming_the_problem(c, m, match):
    with pytest.raises(DataError, match=match):
        solve_prob(c, m)


def test_r01_outside_zero_one_raises_data_error():
    with pytest.raises(DataError, match="0/1"):
        g_ap([0, 2], [0, 1])


@pytest.mark.parametrize("B", [0, -3, 2.5, True])
def test_bad_number_of_strata_raises_config_error(B):
    with pytest.raises(ConfigError, match="B"):
        stratify([1], [2], B)
