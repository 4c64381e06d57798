"""Input checks shared by the metric functions (numpy only)."""

from __future__ import annotations

import numpy as np

from railsweep.errors import ConfigError, DataError


def as_counts(c, m, what: str = "") -> tuple[np.ndarray, np.ndarray]:
    """``c`` and ``m`` as int64 arrays of the same 1-D shape with ``0 <= c <= m``; else DataError."""
    tag = f" ({what})" if what else ""
    c_arr, m_arr = np.asarray(c), np.asarray(m)
    for name, a in (("c", c_arr), ("m", m_arr)):
        if a.ndim != 1:
            raise DataError(f"{name}{tag} must be a 1-D per-question array, got shape {a.shape}")
        af = a.astype(float)
        bad = ~np.isfinite(af) | (af != np.round(af))
        if np.any(bad):
            raise DataError(f"{name}{tag} must hold integer counts, got e.g. {af[bad][:3].tolist()}")
    if c_arr.shape != m_arr.shape:
        raise DataError(f"c{tag} has shape {c_arr.shape} but m has shape {m_arr.shape}")
    c_int, m_int = c_arr.astype(np.int64), m_arr.astype(np.int64)
    bad = np.flatnonzero((c_int < 0) | (m_int < 0) | (c_int > m_int))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"counts{tag} need 0 <= c <= m; {bad.size} position(s) violate it, first at position {i}: "
            f"c={c_int[i]}, m={m_int[i]}"
        )
    return c_int, m_int


def as_binary(r01, what: str = "r01") -> np.ndarray:
    """A 0/1 readout array (any leading axes) as float; anything else -> DataError."""
    a = np.asarray(r01, dtype=float)
    if a.size and not np.all((a == 0) | (a == 1)):
        raise DataError(
            f"{what} must be 0/1 per question, got values {np.unique(a[(a != 0) & (a != 1)])[:5]}"
        )
    return a


def same_question_axis(*arrays: np.ndarray) -> None:
    """All arrays share the last (question) axis length."""
    ns = {a.shape[-1] for a in arrays if np.ndim(a)}
    if len(ns) > 1:
        raise DataError(f"per-question arrays disagree on the number of questions: {sorted(ns)}")


B_MAX = int(np.iinfo(np.int64).max)  # stratum indices are int64, so B - 1 must fit


def check_bins(B: int) -> int:
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 1:
        raise ConfigError(f"B (number of strata) must be a positive integer, got B={B!r}")
    if B > B_MAX:
        raise ConfigError(
            f"B (number of strata) must be at most 2**63 - 1 = {B_MAX} (int64 stratum indices), got B={B}"
        )
    return int(B)
