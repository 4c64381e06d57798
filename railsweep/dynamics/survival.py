"""Survival of a memorised solution: P(T) from the per-token loss curve, and temperature as alpha / tau.

Background (generative contamination): teacher-forced NLL along a solution follows ``L_t = E + A
t^(-alpha)``; with independent per-token errors the chance to reproduce a T-token solution is
``exp(-sum_t L_t)``, which the integral from 1 to T turns into

    P(T) = exp(-E (T - 1) - A / (1 - alpha) (T^(1 - alpha) - 1))        (alpha != 1)
    P(T) = exp(-E (T - 1) - A ln T)                                      (alpha == 1)

and sampling at temperature tau divides the logit gaps by tau, read as ``alpha_eff = alpha / tau`` (tau =
0: alpha_eff = inf, the A term vanishes). Pure numpy; every function broadcasts over its arguments.
"""

from __future__ import annotations

import numpy as np

from railsweep.errors import ConfigError

_NEAR_ONE = 1e-9


def loss_curve(t, E, A, alpha) -> np.ndarray:
    """``L_t = E + A t^(-alpha)`` (t >= 1)."""
    t = np.asarray(t, dtype=float)
    return E + A * np.power(t, -np.asarray(alpha, dtype=float))


def alpha_eff(alpha, tau) -> np.ndarray:
    """``alpha / tau``; ``inf`` at tau = 0 (greedy); a negative or non-finite tau is refused."""
    tau = np.asarray(tau, dtype=float)
    if np.any(~np.isfinite(tau)) or np.any(tau < 0):
        raise ConfigError(f"temperature must be finite and >= 0, got tau={tau.tolist()!r}")
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tau == 0, np.inf, alpha / np.where(tau == 0, 1.0, tau))


def power_term(alpha, T) -> np.ndarray:
    """``integral_1^T t^(-alpha) dt``: (T^(1-alpha) - 1) / (1 - alpha), ln T at alpha = 1, 0 at alpha = inf."""
    alpha = np.asarray(alpha, dtype=float)
    T = np.asarray(T, dtype=float)
    one_minus = 1.0 - alpha
    near = np.abs(one_minus) < _NEAR_ONE
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        safe = np.where(near | ~np.isfinite(alpha), 0.5, one_minus)
        general = (np.power(T, safe) - 1.0) / safe
    out = np.where(near, np.log(T), general)
    return np.where(np.isinf(alpha), 0.0, out)


def survival(E, A, alpha, T) -> np.ndarray:
    """Closed-form ``P(T)`` (the module docstring's formula); T in tokens, T >= 1."""
    E, A, T = (np.asarray(x, dtype=float) for x in (E, A, T))
    if np.any(T < 1):
        raise ConfigError(f"solution length T must be >= 1 token, got {T.min()!r}")
    return np.exp(-E * (T - 1.0) - A * power_term(alpha, T))


def survival_at(E, A, alpha, T, tau) -> np.ndarray:
    """``P(T)`` at temperature tau: the same (E, A) with alpha replaced by ``alpha_eff = alpha / tau``."""
    return survival(E, A, alpha_eff(alpha, tau), T)
