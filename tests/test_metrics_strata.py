"""Stratum binning (eq 12) is exact on edges, and empty strata never count as zero gaps (eq 13)."""

from __future__ import annotations

import numpy as np
import pytest

from railsweep.metrics import s_delta_plus, sa_ppg, stratify, stratum_table


def test_question_on_a_stratum_edge_goes_to_the_upper_stratum():
    # r = c/m exactly b/B -> stratum b (0-based), not b-1
    assert stratify([1, 2, 10, 25], [50, 50, 50, 50], 50).tolist() == [1, 2, 10, 25]
    assert stratify([1, 2, 3], [4, 4, 4], 4).tolist() == [1, 2, 3]
    assert stratify([1], [3], 3).tolist() == [1]


def test_edges_where_float_floor_would_round_down_are_binned_exactly():
    c = np.arange(51)
    m = np.full(51, 50)
    exact = stratify(c, m, 50)
    assert exact.tolist() == [min(k, 49) for k in range(51)]
    floats = np.minimum(np.floor((c / m) * 50).astype(int), 49)
    assert (floats != exact).any()  # e.g. 29/50*50 = 28.999999999999996 in floating point


def test_solve_probability_one_lands_in_the_closed_last_stratum():
    assert stratify([50, 7, 1], [50, 7, 1], 50).tolist() == [49, 49, 49]


def test_just_below_an_edge_stays_in_the_lower_stratum():
    assert stratify([48, 1], [49, 51], 50).tolist() == [48, 0]


def test_empty_stratum_is_excluded_not_zero():
    # clean solve probs in two of B = 50 strata only: SA-PPG averages those two, not 50
    c_cl = np.array([0, 0, 0, 50])
    m_cl = np.full(4, 50)
    delta = np.array([0.2, 0.2, 0.2, 0.8])
    s = stratify(c_cl, m_cl, 50)
    assert sa_ppg(delta, s) == pytest.approx((0.2 + 0.8) / 2)
    assert s_delta_plus(delta, s) == pytest.approx(0.5)


def test_stratum_weights_do_not_depend_on_stratum_size():
    # 99 questions in stratum 0 with gap 0, one question alone with gap 1: SA-PPG = 1/2, A-PPG = 1/100
    c_cl = np.array([0] * 99 + [50])
    delta = np.array([0.0] * 99 + [1.0])
    assert sa_ppg(delta, stratify(c_cl, np.full(100, 50), 50)) == pytest.approx(0.5)


def test_stratum_table_marks_empty_strata_as_nan_with_zero_count():
    table = stratum_table(np.array([0.1, -0.3]), stratify([0, 50], [50, 50], 5), 5)
    assert table["n"].tolist() == [1, 0, 0, 0, 1]
    assert np.isnan(table["mean_abs"][1:4]).all()
    assert table["mean_pos"][0] == pytest.approx(0.1) and table["mean_neg"][4] == pytest.approx(0.3)


def _naive_sa_ppg(c_cl, m_cl, delta, B):
    """SA-PPG (eq 12-13) written out with exact fractions: stratum floor(r·B) clipped to B−1."""
    from fractions import Fraction

    groups: dict[int, list[float]] = {}
    for c, m, d in zip(c_cl, m_cl, delta):
        b = min(int(Fraction(int(c), max(int(m), 1)) * B), B - 1)
        groups.setdefault(b, []).append(abs(d))
    return sum(sum(v) / len(v) for v in groups.values()) / len(groups), len(groups)


@pytest.mark.parametrize("B", [2**62, 10**18, 2**63 - 1, 7919])
def test_huge_B_gives_the_exact_strata_of_the_reference(B):
    """c·B overflows int64 for B = 2**62 once c >= 2; the strata must still be floor(c/m · B)."""
    rng = np.random.default_rng(3)
    m_cl = rng.choice([7, 50, 64], size=60)
    c_cl = (rng.random(60) * (m_cl + 1)).astype(int)
    delta = rng.normal(size=60)
    strata = stratify(c_cl, m_cl, B)
    want, n_strata = _naive_sa_ppg(c_cl, m_cl, delta, B)
    assert np.unique(strata).size == n_strata
    assert sa_ppg(delta, strata) == pytest.approx(want, rel=1e-12)
    assert strata.tolist() == [min(int(c) * B // int(m), B - 1) for c, m in zip(c_cl, m_cl)]


def test_B_beyond_int64_is_refused_with_the_limit():
    from railsweep.errors import ConfigError

    with pytest.raises(ConfigError, match=r"at most 2\*\*63 - 1 .* got B=9223372036854775808"):
        stratify([1], [2], 2**63)
