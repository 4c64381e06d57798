"""Score a mitigated cell against its clean reference, from the per-question result tables.

The tables follow the results schema (``railsweep/results/schema.py``): one row
per question with at least ``question_index, c, m, solve_prob, r01``. Rows are
joined on ``question_index``; both tables must cover the same questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from railsweep.errors import DataError
from railsweep.metrics import (
    METRICS,
    Readouts,
    paired_difference_counts,
    readout_stability,
    score_counts,
    solve_prob,
)
from railsweep.metrics.aggregate import ACROSS

REQUIRED_COLUMNS: tuple[str, ...] = ("question_index", "c", "m", "solve_prob", "r01")


def _check_frame(df: pd.DataFrame, role: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"{role} results must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{role} results lack column(s) {missing}; have {list(df.columns)}")
    if df.empty:
        raise DataError(f"{role} results have no rows")
    dup = df["question_index"][df["question_index"].duplicated()]
    if len(dup):
        raise DataError(f"{role} results repeat question_index {sorted(dup.unique().tolist())[:10]}")
    for col in REQUIRED_COLUMNS:
        na = df["question_index"][df[col].isna()] if col != "question_index" else df.index[df[col].isna()]
        if len(na):
            raise DataError(
                f"{role} results: column {col!r} is missing values (at question_index {list(na)[:10]})"
            )
    out = df.sort_values("question_index", kind="stable").reset_index(drop=True)
    c, m = out["c"].to_numpy(dtype=float), out["m"].to_numpy(dtype=float)
    expected = np.divide(c, m, out=np.zeros(len(out)), where=m > 0)
    off = np.flatnonzero(~np.isclose(out["solve_prob"].to_numpy(dtype=float), expected, atol=1e-9))
    if off.size:
        q = int(out["question_index"].iloc[off[0]])
        raise DataError(
            f"{role} results: solve_prob disagrees with c/m at {off.size} question(s), "
            f"first question_index={q} (solve_prob={out['solve_prob'].iloc[off[0]]}, c={c[off[0]]}, m={m[off[0]]})"
        )
    return out


def _aligned(**frames: pd.DataFrame) -> dict[str, Readouts]:
    """Check and sort every frame, require identical question sets, build Readouts by position."""
    checked = {role: _check_frame(df, role) for role, df in frames.items()}
    roles = list(checked)
    ref_role = roles[0]
    ref = set(checked[ref_role]["question_index"].tolist())
    for role in roles[1:]:
        have = set(checked[role]["question_index"].tolist())
        if have != ref:
            only_ref, only_here = sorted(ref - have), sorted(have - ref)
            raise DataError(
                f"{ref_role} and {role} results cover different questions: "
                f"missing from {role}: {only_ref[:10]}{' ...' if len(only_ref) > 10 else ''} "
                f"({len(only_ref)}); missing from {ref_role}: {only_here[:10]}"
                f"{' ...' if len(only_here) > 10 else ''} ({len(only_here)})"
            )
    return {role: Readouts.of(df["c"], df["m"], df["r01"], role) for role, df in checked.items()}


def score_pair(
    clean: pd.DataFrame,
    mitigated: pd.DataFrame,
    B: int = 50,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Every aggregate of ``mitigated`` against ``clean`` with a stratified-bootstrap CI.

    Returns ``{metric: {"value", "ci_low", "ci_high"} for metric in METRICS}``
    (g_ap, g_app, a_ppg, delta_plus, delta_minus, sa_ppg, s_delta_plus,
    s_delta_minus) and ``sa_ppg_across`` (SA-PPG with its across-strata
    interval) plus ``n_questions``, ``n_strata`` (non-empty), ``B``,
    ``n_boot``, ``alpha``, ``seed``, ``stratum_n`` (questions per stratum) and
    the weight concentration ``sappg_*`` (:mod:`railsweep.metrics.concentration`).
    Same inputs and seed -> same numbers.
    """
    r = _aligned(clean=clean, mitigated=mitigated)
    out = score_counts(
        r["clean"], r["mitigated"], B=B, n_boot=n_boot, alpha=alpha, rng=np.random.default_rng(seed)
    )
    out["seed"] = int(seed)
    return out


def paired_difference(
    clean: pd.DataFrame,
    a: pd.DataFrame,
    b: pd.DataFrame,
    metric: str,
    B: int = 50,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """``metric(a) − metric(b)`` against the same clean model, CI from shared resampled questions.

    Returns ``{"metric", "value_a", "value_b", "difference", "ci_low", "ci_high",
    "frac_a_lower"}``; a CI entirely below 0 means a is better (lower) than b.
    """
    r = _aligned(clean=clean, a=a, b=b)
    out = paired_difference_counts(
        r["clean"], r["a"], r["b"], metric, B=B, n_boot=n_boot, alpha=alpha, rng=np.random.default_rng(seed)
    )
    return {**out, "seed": int(seed)}


def readout_stability_pair(batch_a: pd.DataFrame, batch_b: pd.DataFrame) -> dict[str, float]:
    """Readout stability (paper Fig 2) of two independent batches of the SAME model, joined on question_index.

    Returns ``{"r01": mean |r01_a − r01_b|, "solve_prob": mean |r_a − r_b|, "n_questions": N}``
    (paper, Llama-2 clean: 0.190 for the 0/1 readout, 0.041 for m = 50).
    """
    r = _aligned(batch_a=batch_a, batch_b=batch_b)
    a, b = r["batch_a"], r["batch_b"]
    return {
        "r01": float(readout_stability(a.r01, b.r01)),
        "solve_prob": float(readout_stability(solve_prob(a.c, a.m), solve_prob(b.c, b.m))),
        "n_questions": int(a.c.shape[0]),
    }


def flatten_scores(score: Mapping[str, Any]) -> dict[str, float]:
    """``{"sa_ppg": v, "sa_ppg_ci_low": lo, "sa_ppg_ci_high": hi, ..., "n_questions": n, ...}`` (for MLflow).

    Lists (``stratum_n``) are left out: a reader recomputes them from the clean cell's counts."""
    flat: dict[str, float] = {}
    for key, val in score.items():
        if isinstance(val, Mapping):
            flat[key] = float(val["value"])
            flat[f"{key}_ci_low"] = float(val["ci_low"])
            flat[f"{key}_ci_high"] = float(val["ci_high"])
        elif isinstance(val, (int, float, np.integer, np.floating)):
            flat[key] = float(val)
    return flat


_INT_KEYS = frozenset(
    {"n_questions", "n_strata", "B", "n_boot", "seed", "sappg_sparse_questions", "sappg_sparse_strata"}
)


def unflatten_scores(flat: Mapping[str, float]) -> dict[str, Any]:
    """Inverse of :func:`flatten_scores` (e.g. for metrics read back from MLflow)."""
    out: dict[str, Any] = {}
    for name in (*METRICS, ACROSS):
        if name in flat:
            out[name] = {
                "value": float(flat[name]),
                "ci_low": float(flat.get(f"{name}_ci_low", np.nan)),
                "ci_high": float(flat.get(f"{name}_ci_high", np.nan)),
            }
    for key, val in flat.items():
        if key not in out and not key.endswith(("_ci_low", "_ci_high")):
            out[key] = int(val) if key in _INT_KEYS else bool(val) if key == "sappg_concentrated" else val
    return out


__all__ = [
    "METRICS",
    "REQUIRED_COLUMNS",
    "flatten_scores",
    "paired_difference",
    "score_pair",
    "unflatten_scores",
]
