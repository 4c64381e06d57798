"""The survival theory's formulas: power-law fits recover known curves, P(T) against direct sums, alpha/tau,
regimes, and the contamination gain against a naive recomputation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from railsweep.dynamics.gain import gain_table
from railsweep.dynamics.powerlaw import fit_curve, fit_group, fit_log_slope, mean_curve
from railsweep.dynamics.regimes import regime
from railsweep.dynamics.survival import alpha_eff, loss_curve, survival, survival_at
from railsweep.errors import ConfigError

TRUE = [(0.3, 2.0, 0.6), (0.0, 1.5, 1.4), (0.05, 3.0, 0.9), (1.2, 0.8, 2.0)]


@pytest.mark.parametrize("E,A,alpha", TRUE)
def test_the_fit_recovers_known_parameters_from_a_noisy_mean_curve(E, A, alpha):
    rng = np.random.default_rng(0)
    t = np.arange(1, 201)
    y = loss_curve(t, E, A, alpha) + rng.normal(0, 0.01, t.size)
    f = fit_curve(t, y)
    assert f.E == pytest.approx(E, abs=0.02)
    assert f.A == pytest.approx(A, rel=0.05, abs=0.02)
    assert f.alpha == pytest.approx(alpha, rel=0.06, abs=0.03)


def test_group_fit_ci_over_noisy_items_covers_the_truth_and_narrows_with_more_items():
    E, A, alpha = 0.1, 2.0, 0.8
    rng = np.random.default_rng(1)

    def items(n):
        # items of unequal lengths, each with zero-mean per-token noise and its own level shift
        out = []
        for _ in range(n):
            T = int(rng.integers(30, 80))
            t = np.arange(1, T + 1)
            out.append(loss_curve(t, E, A, alpha) + rng.normal(0, 0.3, T) + rng.normal(0, 0.02))
        return out

    small = fit_group(items(20), n_boot=100, rng=np.random.default_rng(2))
    big = fit_group(items(200), n_boot=100, rng=np.random.default_rng(2))
    for g in (small, big):
        for name, true in (("E", E), ("A", A), ("alpha", alpha)):
            lo, hi = g.ci[name]
            assert lo <= true <= hi, (name, g.ci)
    assert big.ci["alpha"][1] - big.ci["alpha"][0] < small.ci["alpha"][1] - small.ci["alpha"][0]
    assert big.n_items == 200


def test_mean_curve_averages_only_the_items_that_reach_each_position():
    t, y, n = mean_curve([np.array([1.0, 2.0, 3.0]), np.array([3.0])], min_items=1)
    assert t.tolist() == [1, 2, 3] and y.tolist() == [2.0, 2.0, 3.0] and n.tolist() == [2, 1, 1]
    t, y, n = mean_curve([np.array([1.0, 2.0, 3.0]), np.array([3.0])], min_items=2)
    assert t.tolist() == [1] and y.tolist() == [2.0]


def test_a_fit_needs_three_positions():
    with pytest.raises(ConfigError, match="at least 3"):
        fit_curve([1, 2], [1.0, 0.5])


@pytest.mark.parametrize("E,A,alpha", TRUE + [(0.2, 1.0, 1.0), (0.0, 2.0, 1.0 + 1e-12)])
@pytest.mark.parametrize("T", [1, 2, 17, 300])
def test_closed_form_survival_is_exp_minus_the_integral_of_the_loss_curve(E, A, alpha, T):
    integral = quad(lambda x: E + A * x ** (-alpha), 1, T)[0] if T > 1 else 0.0
    assert survival(E, A, alpha, T) == pytest.approx(np.exp(-integral), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("E,A,alpha", TRUE)
@pytest.mark.parametrize("T", [5, 40, 400])
def test_closed_form_survival_lies_between_the_direct_products_it_approximates(E, A, alpha, T):
    # L_t decreases in t, so sum_{t=2}^{T} L_t <= integral_1^T L <= sum_{t=1}^{T-1} L_t
    L = loss_curve(np.arange(1, T + 1), E, A, alpha)
    p = survival(E, A, alpha, T)
    assert np.exp(-np.sum(L[:-1])) <= p * (1 + 1e-12)
    assert p <= np.exp(-np.sum(L[1:])) * (1 + 1e-12)


def test_the_regimes_have_their_limits():
    T = np.array([1e3, 1e5, 1e7])
    assert np.all(np.diff(survival(0.0, 1.0, 0.5, T)) < 0) and survival(0.0, 1.0, 0.5, 1e7) < 1e-100
    assert survival(0.0, 1.0, 2.0, 1e9) == pytest.approx(np.exp(-1.0 / (2.0 - 1.0)), rel=1e-6)
    assert survival(0.1, 1.0, 3.0, 1e4) < 1e-40  # E > 0: exponential decoherence whatever alpha


def test_alpha_eff_is_alpha_over_tau_and_greedy_leaves_only_the_E_term():
    assert alpha_eff(0.8, 0.2) == pytest.approx(4.0)
    assert alpha_eff(0.8, 1.5) == pytest.approx(0.8 / 1.5)
    assert np.isinf(alpha_eff(0.8, 0.0))
    assert survival_at(0.01, 3.0, 0.8, 50, 0.0) == pytest.approx(np.exp(-0.01 * 49))
    assert survival_at(0.01, 3.0, 0.8, 50, 1.0) == pytest.approx(survival(0.01, 3.0, 0.8, 50))
    assert survival_at(0.0, 1.0, 0.8, 50, 0.5) > survival_at(0.0, 1.0, 0.8, 50, 1.0)
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="temperature"):
            alpha_eff(0.8, bad)


@pytest.mark.parametrize(
    "E,alpha,expected",
    [(0.5, 0.5, "decoherence"), (0.5, 3.0, "decoherence"), (0.0, 0.7, "brittle"), (0.01, 1.0, "brittle"),
     (0.01, 1.3, "lock-in")],
)  # fmt: skip
def test_regime_classification_uses_the_stated_e_cut(E, alpha, expected):
    assert regime(E, alpha) == expected
    assert regime(E, alpha, e_cut=1.0) == ("lock-in" if alpha > 1 else "brittle")


def test_log_slope_recovers_a_line_in_ln_t():
    t = np.arange(1, 60)
    assert fit_log_slope(t, 0.4 + 1.7 * np.log(t)) == pytest.approx((0.4, 1.7))


def test_gains_and_collapse_factor_match_a_naive_recomputation_on_lopsided_inputs():
    rng = np.random.default_rng(3)
    leaked = np.array([True] * 7 + [False] * 23)
    r_co = {0.0: rng.random(30), 1.0: rng.random(30) * 0.5}
    r_cl = {0.0: rng.random(30) * 0.2, 1.0: rng.random(30) * 0.2}
    r_co[0.0][leaked] += 1.0  # a big greedy gain on the leaked items
    rows = gain_table(r_co, r_cl, leaked, n_boot=300, rng=np.random.default_rng(0))
    for row, t in zip(rows, (0.0, 1.0)):
        model = np.mean(r_co[t][leaked] - r_cl[t][leaked])
        split = np.mean(r_co[t][leaked]) - np.mean(r_co[t][~leaked])
        assert row["model_gain"] == pytest.approx(model) and row["split_gain"] == pytest.approx(split)
        assert row["model_gain_lo"] <= model <= row["model_gain_hi"]
    g0 = np.mean(r_co[0.0][leaked] - r_cl[0.0][leaked])
    g1 = np.mean(r_co[1.0][leaked] - r_cl[1.0][leaked])
    assert rows[1]["model_gain_collapse"] == pytest.approx(g0 / g1)
    assert rows[0]["model_gain_collapse"] == pytest.approx(1.0) and rows[0]["tau_ref"] == 0.0
