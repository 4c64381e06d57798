"""The lines printed beside the stratified metrics: interval (or why there is none), noise floor, occupancy.

SA-PPG (eq 13) weighs every filled stratum equally, and every |Δ| metric carries the binomial noise of two
m-sample readouts: every table and report that prints SA-PPG adds one of these lines per cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from railsweep.metrics.aggregate import CONCENTRATION, concentration_fields
from railsweep.metrics.concentration import describe_concentration, describe_occupancy
from railsweep.metrics.stratified import stratify


def concentration_of(score: Mapping[str, Any]) -> dict[str, Any] | None:
    """The score's weight concentration as :func:`~railsweep.metrics.concentration.weight_concentration`
    returns it (None when the score predates it)."""
    if not all(f"sappg_{k}" in score for k in CONCENTRATION) or "n_strata" not in score:
        return None
    return {**{k: score[f"sappg_{k}"] for k in CONCENTRATION}, "filled_strata": int(score["n_strata"])}


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float, np.floating)) and bool(np.isfinite(x))


def estimate_note(label: str, est: Mapping[str, Any] | None) -> str:
    """``SA-PPG 0.2255 [0.19, 0.26] (jackknife, simulated coverage 0.95), noise floor 0.156, floor-corrected
    0.141`` or ``SA-PPG 0.2255, no interval (withheld: ...)``."""
    if not isinstance(est, Mapping):
        return f"{label} —"
    text = f"{label} {est['value']:.4f}"
    if _finite(est.get("ci_low")) and _finite(est.get("ci_high")):
        how = est.get("interval", "")
        check = f", simulated coverage {est['check']:.2f}" if _finite(est.get("check")) else ""
        text += f" [{est['ci_low']:.2f}, {est['ci_high']:.2f}]" + (f" ({how}{check})" if how else "")
    else:
        text += f", no interval ({est.get('why') or 'withheld'})"
    if _finite(est.get("floor")):
        text += f", noise floor {est['floor']:.3f}"
    if _finite(est.get("corrected")):
        text += f", floor-corrected {est['corrected']:.3f}"
    return text


def sappg_note(score: Mapping[str, Any]) -> str:
    """SA-PPG with its interval, floor and corrected reading; the strata (lower edge:questions) and the
    weight concentration."""
    parts = [estimate_note("SA-PPG", score.get("sa_ppg"))]
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
