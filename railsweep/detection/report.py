"""What to do with flagged items: the full-set score and the clean-subset score side by side.

Steps of :func:`subset_report` for one per-question table (results schema) and the flagged indices:
1. the readout per question (``solve_prob`` or ``r01``) and a keep weight: 1 unflagged, ``w`` flagged;
2. the point estimates: full-set mean, clean-subset mean, contamination rate (share flagged), full −
   clean (it bounds the contamination effect) and, with ``w``, the down-weighted mean
   ``Σ w_i x_i / Σ w_i`` (w = 0: the clean subset, w = 1: the full set);
3. a paired bootstrap: one (n_boot, N) matrix of resampled questions (one stratum, explicit seed) serves
   every row, so the difference's CI comes from its terms' resamples; a resample with no unflagged
   question is left out of those rows' CIs (``n_boot_used``).

:func:`sa_ppg_report` gives SA-PPG and the other paired metrics (:func:`railsweep.metrics.score_counts`,
the numbers of :func:`railsweep.analysis.scoring.score_pair`) on all and on the unflagged questions, each
with its own stratified CI; their difference has none (the clean model's strata differ between the sets).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from railsweep.errors import ConfigError, DataError
from railsweep.metrics import METRICS, score_counts
from railsweep.metrics.bootstrap import check_bootstrap_args, percentile_ci, stratified_indices
from railsweep.results.readouts import aligned_readouts

REPORT_COLUMNS = ("statistic", "readout", "value", "ci_low", "ci_high", "n_questions", "n_boot_used")


def _flag_mask(question_index: np.ndarray, flagged: Iterable[int]) -> np.ndarray:
    flagged = {int(q) for q in flagged}
    unknown = sorted(flagged - set(question_index.tolist()))
    if unknown:
        raise DataError(f"flagged question_index {unknown[:10]}{' ...' if len(unknown) > 10 else ''} "
                        f"({len(unknown)}) not in the per-question table")  # fmt: skip
    return np.isin(question_index, list(flagged))


def check_weight(weight: float | None) -> None:
    if weight is not None and not (np.isfinite(weight) and 0.0 <= weight <= 1.0):
        raise ConfigError(f"weight w for flagged items must lie in [0, 1], got {weight!r}")


def weighted_means(x: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``Σ keep·x / Σ keep`` over the last axis of x, keep: float (..., N); NaN where the weights sum to 0."""
    total = keep.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (keep * x).sum(axis=-1) / total, np.nan)


def subset_report(
    questions: pd.DataFrame, flagged: Iterable[int], *, readout: str = "solve_prob", weight: float | None = None,
    n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
) -> pd.DataFrame:  # fmt: skip
    """Rows ``full``, ``clean``, ``contamination_rate``, ``full_minus_clean`` (and ``weighted w=<w>``),
    columns :data:`REPORT_COLUMNS` (``n_questions``: those averaged over); the steps are the module docstring's."""
    if readout not in ("solve_prob", "r01"):
        raise ConfigError(f"readout must be 'solve_prob' or 'r01', got {readout!r}")
    check_weight(weight)
    check_bootstrap_args(n_boot, alpha)
    for col in ("question_index", readout):
        if col not in questions.columns:
            raise DataError(f"per-question table lacks column {col!r}")
    if questions.empty:
        raise DataError("per-question table has no rows")
    qi = questions["question_index"].to_numpy()
    x = questions[readout].to_numpy(dtype=float)
    is_flagged = _flag_mask(qi, flagged)
    if is_flagged.all():
        raise DataError("every question is flagged: the clean subset is empty")
    n, n_flagged = x.size, int(is_flagged.sum())

    idx = stratified_indices(np.zeros(n, dtype=np.int64), n_boot, np.random.default_rng(seed))
    xb, fb = x[idx], is_flagged[idx].astype(float)
    stats = {"full": (float(x.mean()), xb.mean(axis=1), n),
             "clean": (float(x[~is_flagged].mean()), weighted_means(xb, 1.0 - fb), n - n_flagged),
             "contamination_rate": (n_flagged / n, fb.mean(axis=1), n)}  # fmt: skip
    (full, full_b, _), (clean, clean_b, _) = stats["full"], stats["clean"]
    stats["full_minus_clean"] = (full - clean, full_b - clean_b, n)
    if weight is not None:
        keep = np.where(is_flagged, weight, 1.0)
        stats[f"weighted w={weight:g}"] = (float(weighted_means(x, keep)), weighted_means(xb, keep[idx]), n)
    rows = []
    for name, (value, boot, count) in stats.items():
        ok = boot[np.isfinite(boot)]
        lo, hi = percentile_ci(ok, alpha) if ok.size else (np.nan, np.nan)
        rows.append((name, readout, value, lo, hi, count, int(ok.size)))
    return pd.DataFrame(rows, columns=list(REPORT_COLUMNS))


def _score(clean: pd.DataFrame, mitigated: pd.DataFrame, *, B, n_boot, alpha, seed) -> dict:
    """Every metric of one pair with CIs (:func:`railsweep.metrics.score_counts`, seeded as ``score_pair``)."""
    r = aligned_readouts(clean=clean, mitigated=mitigated)
    return score_counts(r["clean"], r["mitigated"], B=B, n_boot=n_boot, alpha=alpha,
                        rng=np.random.default_rng(seed))  # fmt: skip


def sa_ppg_report(
    clean: pd.DataFrame, mitigated: pd.DataFrame, flagged: Iterable[int], *, B: int = 50, n_boot: int = 1000,
    alpha: float = 0.05, seed: int = 0,
) -> pd.DataFrame:  # fmt: skip
    """Every :data:`railsweep.metrics.METRICS` aggregate on all questions and on the unflagged ones (columns
    metric, full, full_ci_low/high, clean_subset, clean_subset_ci_low/high; last row ``n_questions``)."""
    is_flagged = _flag_mask(clean["question_index"].to_numpy(), flagged)
    if is_flagged.all():
        raise DataError("every question is flagged: the clean subset is empty")
    kept = set(clean["question_index"][~is_flagged].tolist())
    args = {"B": B, "n_boot": n_boot, "alpha": alpha, "seed": seed}
    full = _score(clean, mitigated, **args)
    sub = _score(clean[clean["question_index"].isin(kept)], mitigated[mitigated["question_index"].isin(kept)],
                 **args)  # fmt: skip
    rows = [
        (m, full[m]["value"], full[m]["ci_low"], full[m]["ci_high"],
         sub[m]["value"], sub[m]["ci_low"], sub[m]["ci_high"])
        for m in METRICS
    ]  # fmt: skip
    nq = ("n_questions", full["n_questions"], np.nan, np.nan, sub["n_questions"], np.nan, np.nan)
    return pd.DataFrame(
        [*rows, nq],
        columns=["metric", "full", "full_ci_low", "full_ci_high",
                 "clean_subset", "clean_subset_ci_low", "clean_subset_ci_high"],
    )  # fmt: skip


def flags_from_detections(
    detections: pd.DataFrame, detector: str, setting: str | None = None, family: str | None = None,
    domain: str | None = None,
) -> set[int]:  # fmt: skip
    """The test items one detector setting flagged (one setting × family × domain, else ConfigError)."""
    rows = detections[(detections["detector"] == detector) & (detections["group"] == "test")]
    if rows.empty:
        have = sorted(detections["detector"].unique().tolist())
        raise ConfigError(f"no test rows for detector {detector!r} in the detections; it has {have}")
    for col, want in (("setting", setting), ("family", family), ("domain", domain)):
        if want is not None:
            rows = rows[rows[col] == want]
            if rows.empty:
                raise ConfigError(f"no rows for detector {detector!r} with {col}={want!r}")
    combos = rows[["setting", "family", "domain"]].astype(object).drop_duplicates()
    if len(combos) > 1:
        listed = "; ".join(", ".join(f"{k}={v}" for k, v in r.items() if v is not None and v == v)
                           for r in combos.to_dict("records"))  # fmt: skip
        raise ConfigError(f"detector {detector!r} has {len(combos)} settings here ({listed}): pick one with "
                          "--setting/--family/--domain")  # fmt: skip
    return {int(q) for q in rows.loc[rows["flagged"].fillna(False).astype(bool), "item_id"]}
