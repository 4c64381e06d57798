"""The lines printed beside every SA-PPG: both intervals, stratum occupancy, weight concentration.

SA-PPG (eq 13) weighs every filled stratum equally, so its within-strata
interval alone overstates what is known when a few questions in sparse strata
carry much of it. Every table and report that prints SA-PPG adds one of these
lines per cell (:func:`sappg_note`); the figures come from the score dict of
:func:`railsweep.analysis.scoring.score_pair`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from railsweep.metrics.aggregate import ACROSS, CONCENTRATION, concentration_fields
from railsweep.metrics.concentration import describe_concentration, describe_occupancy
from railsweep.metrics.stratified import stratify


def _interval(est: Mapping[str, Any] | None) -> str:
    if not isinstance(est, Mapping) or not np.isfinite(est.get("ci_low", np.nan)):
        return "—"
    return f"[{est['ci_low']:.2f}, {est['ci_high']:.2f}]"


def concentration_of(score: Mapping[str, Any]) -> dict[str, Any] | None:
    """The score's weight concentration as :func:`~railsweep.metrics.concentration.weight_concentration`
    returns it (None when the score predates it)."""
    if not all(f"sappg_{k}" in score for k in CONCENTRATION) or "n_strata" not in score:
        return None
    return {**{k: score[f"sappg_{k}"] for k in CONCENTRATION}, "filled_strata": int(score["n_strata"])}


def sappg_note(score: Mapping[str, Any]) -> str:
    """``SA-PPG 0.2255, within-strata CI [0.21, 0.25], across-strata CI [0.20, 0.25]; strata (lower edge:
    questions) 0.00:84 0.10:22 ...; 39 questions (19.5 %) in the 6 sparsest of 11 strata carry 54.5 % ...``"""
    sa = score.get("sa_ppg")
    value = f"{sa['value']:.4f}" if isinstance(sa, Mapping) else "—"
    parts = [
        f"SA-PPG {value}, within-strata CI {_interval(sa)}, across-strata CI {_interval(score.get(ACROSS))}"
    ]
    if score.get("stratum_n") is not None:
        parts.append(f"strata (lower edge:questions) {describe_occupancy(score['stratum_n'])}")
    conc = concentration_of(score)
    if conc is not None:
        parts.append(describe_concentration(conc))
    return "; ".join(parts)


def with_occupancy(score: Mapping[str, Any], clean_questions) -> dict[str, Any]:
    """``score`` with ``stratum_n`` and ``sappg_*`` (re)computed from the clean cell's per-question table
    (scores read back from MLflow carry numbers only, not the per-stratum list)."""
    strata = stratify(clean_questions["c"].to_numpy(), clean_questions["m"].to_numpy(), int(score["B"]))
    return {**score, **concentration_fields(strata, int(score["B"]))}
