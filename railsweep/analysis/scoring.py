"""Score a mitigated cell against its clean reference from their per-question tables (the results schema,
joined on ``question_index`` by :mod:`railsweep.results.readouts`), and flatten scores for a tracker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from railsweep.metrics import METRICS, paired_difference_counts, score_counts
from railsweep.metrics.aggregate import MEAN_METRICS, MIN_NONZERO, too_sparse_reason, withheld_reason
from railsweep.results.readouts import aligned_readouts


def score_pair(
    clean: pd.DataFrame, mitigated: pd.DataFrame, B: int = 50, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05,
) -> dict[str, Any]:  # fmt: skip
    """Every aggregate of ``mitigated`` against ``clean`` with its checked interval, noise floor and corrected
    reading: :func:`railsweep.metrics.score_counts`'s dict plus ``seed``. Same inputs and seed -> same numbers."""
    r = aligned_readouts(clean=clean, mitigated=mitigated)
    out = score_counts(r["clean"], r["mitigated"], B=B, n_boot=n_boot, alpha=alpha,
                       rng=np.random.default_rng(seed))  # fmt: skip
    out["seed"] = int(seed)
    return out


def paired_difference(clean: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame, metric: str, B: int = 50,
                      n_boot: int = 1000, seed: int = 0, alpha: float = 0.05) -> dict[str, Any]:  # fmt: skip
    """``metric(a) − metric(b)`` against the same clean model, CI from shared resampled questions; verdict
    "lower" means a is closer to M_cl than b on this metric."""
    r = aligned_readouts(clean=clean, a=a, b=b)
    out = paired_difference_counts(r["clean"], r["a"], r["b"], metric, B=B, n_boot=n_boot, alpha=alpha,
                                   rng=np.random.default_rng(seed))  # fmt: skip
    return {**out, "seed": int(seed)}


ENTRY_NUMBERS = ("ci_low", "ci_high", "floor", "corrected", "check", "nonzero", "sharp_min")  # logged as <metric>_<key>


def flatten_scores(score: Mapping[str, Any]) -> dict[str, float]:
    """``{"sa_ppg": v, "sa_ppg_ci_low": lo, ...}`` for MLflow: numbers only (``interval`` and ``why`` follow
    from them; ``stratum_n`` is recomputed from the clean cell's counts)."""
    flat: dict[str, float] = {}
    for key, val in score.items():
        if isinstance(val, Mapping):
            flat[key] = float(val["value"])
            flat.update({f"{key}_{k}": float(val[k]) for k in ENTRY_NUMBERS
                         if k in val and not (k == "check" and np.isnan(val[k]))})  # fmt: skip
        elif isinstance(val, (int, float, np.integer, np.floating)):
            flat[key] = float(val)
    return flat


_INT_KEYS = frozenset(
    {"n_questions", "n_strata", "B", "n_boot", "seed", "m", "sappg_sparse_questions", "sappg_sparse_strata"}
)
# The scoring design: one value for every cell of a sweep, so a tracker logs them as params, not metrics
SCORE_CONSTANTS = ("B", "n_boot", "alpha", "seed")


def split_constants(flat: Mapping[str, float]) -> tuple[dict[str, float], dict[str, str]]:
    """``(metrics, params)`` of :func:`flatten_scores`'s dict: the :data:`SCORE_CONSTANTS` as params named
    ``score.<name>`` (integers written as integers), everything else as metrics."""
    metrics = {k: v for k, v in flat.items() if k not in SCORE_CONSTANTS}
    params = {f"score.{k}": str(int(flat[k])) if k in _INT_KEYS else repr(float(flat[k]))
              for k in SCORE_CONSTANTS if k in flat}  # fmt: skip
    return metrics, params


def join_constants(metrics: Mapping[str, float], params: Mapping[str, str]) -> dict[str, float]:
    """:func:`split_constants` undone: the metrics with the ``score.<name>`` params back as numbers."""
    return {**metrics, **{k: float(params[f"score.{k}"]) for k in SCORE_CONSTANTS if f"score.{k}" in params}}


def _entry(flat: Mapping[str, float], name: str) -> dict[str, Any]:
    e = {"value": float(flat[name])}
    e.update({k: float(flat.get(f"{name}_{k}", np.nan)) for k in ENTRY_NUMBERS
              if k not in ("corrected", "nonzero", "sharp_min") or f"{name}_{k}" in flat})  # fmt: skip
    for k in ("nonzero", "sharp_min"):
        if k in e:
            e[k] = int(e[k])
    shown = np.isfinite(e["ci_low"]) and np.isfinite(e["ci_high"])
    e["interval"] = ("bootstrap" if name in MEAN_METRICS else "jackknife") if shown else "none"
    m = int(flat.get("m", 0)) or None
    if shown:
        e["why"] = ""
    elif e.get("nonzero", MIN_NONZERO) < MIN_NONZERO:  # as score_counts: this reason comes first
        e["why"] = too_sparse_reason(e["nonzero"])
    else:
        e["why"] = withheld_reason(e["check"], int(flat.get("n_questions", 0)), m, int(flat.get("B", 0)),
                                   e.get("sharp_min"))
    return e


def unflatten_scores(flat: Mapping[str, float]) -> dict[str, Any]:
    """Inverse of :func:`flatten_scores` (e.g. for metrics read back from MLflow)."""
    out: dict[str, Any] = {name: _entry(flat, name) for name in METRICS if name in flat}
    entry_keys = {f"{n}_{k}" for n in METRICS for k in ENTRY_NUMBERS}
    for key, val in flat.items():
        if key not in out and key not in entry_keys:
            out[key] = int(val) if key in _INT_KEYS else bool(val) if key == "sappg_concentrated" else val
    return out


__all__ = ["METRICS", "flatten_scores", "paired_difference", "score_pair", "unflatten_scores"]
