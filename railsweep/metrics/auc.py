"""ROC AUC of a score against 0/1 labels, its stratified bootstrap CI and the ROC curve (pure numpy).

Scores are oriented so that higher means more likely positive (a detector: contaminated).
NaN scores (an item a detector could not score) are dropped before anything is counted.
"""

from __future__ import annotations

import numpy as np

from railsweep.metrics.bootstrap import check_bootstrap_args, percentile_ci


def _labelled(score, label) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Scores and labels with NaN scores dropped, and the counts of positives and negatives."""
    s = np.asarray(score, dtype=float)
    y = np.asarray(label, dtype=bool)
    keep = ~np.isnan(s)
    s, y = s[keep], y[keep]
    return s, y, int(y.sum()), int((~y).sum())


def roc_auc(score: np.ndarray, label: np.ndarray) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney) formula, ties counted one half.

    AUC = (sum of the positives' midranks - P (P + 1) / 2) / (P N), which equals
    P(score of a random positive > score of a random negative) + P(tie) / 2.
    score: float (K,); label: bool (K,). NaN scores are dropped; NaN when a class is empty.
    """
    s, y, p, n = _labelled(score, label)
    if p == 0 or n == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(s.size)
    sorted_s = s[order]
    # midranks: each run of equal scores gets the mean of its 1-based ranks
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], s.size]
    mid = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(mid, ends - starts)
    return float((ranks[y].sum() - p * (p + 1) / 2.0) / (p * n))


def auc_ci(
    score: np.ndarray, label: np.ndarray, n_boot: int = 1000, alpha: float = 0.05, rng=None
) -> tuple[float, float]:
    """Percentile bootstrap CI of :func:`roc_auc`, resampling positives and negatives apart (stratified).

    rng: a ``numpy.random.Generator`` (default: seeded with 0).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    check_bootstrap_args(n_boot, alpha, rng)
    s = np.asarray(score, dtype=float)
    y = np.asarray(label, dtype=bool)
    keep = ~np.isnan(s)
    pos, neg = s[keep & y], s[keep & ~y]
    if not pos.size or not neg.size:
        return float("nan"), float("nan")
    stats = np.empty(n_boot)
    both = np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]
    for b in range(n_boot):
        draw = np.r_[pos[rng.integers(0, pos.size, pos.size)], neg[rng.integers(0, neg.size, neg.size)]]
        stats[b] = roc_auc(draw, both)
    return percentile_ci(stats, alpha)


def roc_curve(score: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ROC curve's corners (FPR, TPR), each float (K + 1,), from (0, 0) to (1, 1).

    One corner per distinct score, highest first: flagging every item with score >= s.
    Tied scores move both rates at once (the diagonal step whose area :func:`roc_auc`
    counts one half). score: float (N,); label: bool (N,); NaN scores dropped; both
    arrays empty when a class is empty.
    """
    s, y, p, n = _labelled(score, label)
    if p == 0 or n == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[s[1:] != s[:-1], True]  # the last item of each run of equal scores
    tp, fp = np.cumsum(y)[last], np.cumsum(~y)[last]
    return np.r_[0.0, fp / n], np.r_[0.0, tp / p]
