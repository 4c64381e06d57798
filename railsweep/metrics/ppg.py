"""Per-question probability gaps: Δ (eq 4), A-PPG (eq 5) and its split Δ+ / Δ− (eqs 8–10)."""

from __future__ import annotations

import numpy as np

from railsweep.metrics._arrays import same_question_axis


def ppg(r_co, r_cl) -> np.ndarray:
    """PPG (paper eq 4): ``Δ(q) = r_co^s(q) − r_cl(q)``; r_co, r_cl float (..., N) -> (..., N)."""
    r_co, r_cl = np.asarray(r_co, dtype=float), np.asarray(r_cl, dtype=float)
    same_question_axis(r_co, r_cl)
    return r_co - r_cl


def a_ppg(delta) -> np.ndarray:
    """A-PPG (paper eq 5): ``mean_q |Δ(q)|``; delta float (..., N) -> (...). Zero iff every Δ(q) = 0."""
    return np.mean(np.abs(np.asarray(delta, dtype=float)), axis=-1)


def delta_plus(delta) -> np.ndarray:
    """Δ+ (paper eq 9): ``mean_q max(Δ(q), 0)``, under-suppression (residual contamination); (..., N) -> (...)."""
    return np.mean(np.maximum(np.asarray(delta, dtype=float), 0.0), axis=-1)


def delta_minus(delta) -> np.ndarray:
    """Δ− (paper eq 10): ``mean_q max(−Δ(q), 0)``, over-suppression (collateral damage); (..., N) -> (...).

    A-PPG = Δ+ + Δ− (eq 8) and G-APP = |Δ+ − Δ−| (eq 11).
    """
    return np.mean(np.maximum(-np.asarray(delta, dtype=float), 0.0), axis=-1)
