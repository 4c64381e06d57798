"""Restoration metrics (paper §3), pure numpy over per-question arrays; no torch, no pandas.

Per-question estimates (``readout``, ``ppg``) are kept apart from aggregation
(``gap``, ``ppg``, ``stratified``) and from confidence intervals (``bootstrap``,
``aggregate``); ``auc`` scores a detector against the known truth. Arrays put the question axis last.
"""

from railsweep.metrics.aggregate import METRICS, Readouts, paired_difference_counts, score_counts
from railsweep.metrics.auc import auc_ci, roc_auc, roc_curve
from railsweep.metrics.bootstrap import (
    abs_interval,
    across_strata_indices,
    bootstrap_ci,
    percentile_ci,
    stratified_indices,
)
from railsweep.metrics.concentration import question_weights, stratum_counts, weight_concentration
from railsweep.metrics.gap import g_ap, g_app
from railsweep.metrics.ppg import a_ppg, delta_minus, delta_plus, ppg
from railsweep.metrics.readout import readout_stability, solve_prob
from railsweep.metrics.stratified import (
    s_delta_minus,
    s_delta_plus,
    sa_ppg,
    sa_ppg_restratified,
    stratify,
    stratum_table,
)

__all__ = [  # fmt: skip
    "METRICS", "Readouts", "a_ppg", "abs_interval", "across_strata_indices", "auc_ci", "bootstrap_ci",
    "delta_minus", "delta_plus", "g_ap", "g_app", "paired_difference_counts", "percentile_ci", "ppg",
    "question_weights", "readout_stability", "roc_auc", "roc_curve", "s_delta_minus", "s_delta_plus",
    "sa_ppg", "sa_ppg_restratified", "score_counts", "solve_prob", "stratified_indices", "stratify",
    "stratum_counts", "stratum_table", "weight_concentration"
]
