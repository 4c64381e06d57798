"""Gaps of aggregate performance: G-AP (eq 2) and G-APP (eq 7). Both average BEFORE differencing."""

from __future__ import annotations

import numpy as np

from railsweep.metrics._arrays import as_binary, same_question_axis


def g_ap(r01_co, r01_cl) -> np.ndarray:
    """G-AP (paper eq 2): ``|mean_q r01_co^s(q) - mean_q r01_cl(q)|``.

    r01_co, r01_cl: 0/1 (..., N), one sampled response per question for the
    mitigated model and the clean model. Returns (...).
    """
    co, cl = as_binary(r01_co, "r01 (mitigated)"), as_binary(r01_cl, "r01 (clean)")
    same_question_axis(co, cl)
    return np.abs(np.mean(co, axis=-1) - np.mean(cl, axis=-1))


def g_app(delta) -> np.ndarray:
    """G-APP (paper eq 7 = eq 11): ``|mean_q Δ(q)|`` = ``|Δ+ − Δ−|``.

    delta: float (..., N) per-question probability gaps (eq 4). Returns (...).
    Over- and under-suppression cancel: half +δ, half −δ gives 0.
    """
    return np.abs(np.mean(np.asarray(delta, dtype=float), axis=-1))
