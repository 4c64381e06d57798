"""The paper's worked arguments (§3.2.2, §3.3) reproduced numerically."""

from __future__ import annotations

import numpy as np
import pytest

from railsweep.metrics import a_ppg, delta_minus, delta_plus, g_app, ppg, sa_ppg, solve_prob, stratify


@pytest.mark.parametrize("delta_size", [0.1, 0.37])
def test_cancellation_half_plus_half_minus_gives_zero_g_app_and_a_ppg_delta(delta_size):
    n = 200
    delta = np.where(np.arange(n) < n // 2, delta_size, -delta_size)
    assert g_app(delta) == pytest.approx(0.0, abs=1e-12)
    assert a_ppg(delta) == pytest.approx(delta_size)
    assert delta_plus(delta) == pytest.approx(delta_size / 2) == delta_minus(delta)


def test_all_zero_looks_good_on_a_ppg_but_is_worst_on_sa_ppg():
    """A clean model whose solve probabilities pile up at 0: All-Zero beats an honest
    but noisy strategy on A-PPG, and loses to it on SA-PPG."""
    rng = np.random.default_rng(7)
    m = np.full(1000, 50)
    zero = rng.random(1000) < 0.75  # three quarters never solved
    c_cl = np.where(zero, 0, rng.integers(1, 51, 1000))
    r_cl = solve_prob(c_cl, m)
    # "noisy" strategy: every question off by 0.25 in a random direction, clipped to [0, 1]
    r_noisy = np.clip(r_cl + rng.choice([-0.25, 0.25], 1000), 0, 1)
    r_zero = np.zeros(1000)
    s = stratify(c_cl, m, 50)
    d_noisy, d_zero = ppg(r_noisy, r_cl), ppg(r_zero, r_cl)
    assert a_ppg(d_zero) < a_ppg(d_noisy)  # equal weighting rewards answering nothing
    assert sa_ppg(d_zero, s) > sa_ppg(d_noisy, s)  # stratification exposes it
    assert sa_ppg(d_zero, s) > 0.45  # ~ mean stratum centre when strata spread over [0, 1]
