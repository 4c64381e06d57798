"""Stratum occupancy and SA-PPG weight concentration (paper eq 12–13), pure numpy.

SA-PPG (eq 13) gives every non-empty stratum the weight 1/|ℬ|, so a question in a stratum of n_b questions
carries 1/(|ℬ|·n_b) of the metric. Concentration: the ⌈|ℬ|/2⌉ sparsest strata (fewest questions; ties by
index) hold at least half the weight; their k questions are a share x of all N. The warning fires when
x ≤ :data:`WARN_QUESTION_SHARE`: a tenth of the questions or fewer carry half of SA-PPG.
"""

from __future__ import annotations

import numpy as np

from railsweep.metrics._arrays import check_bins

HALF = 0.5  # the weight share the sparsest strata are counted up to
WARN_QUESTION_SHARE = 0.10  # warn when this share of the questions (or fewer) carries HALF of the weight


def stratum_counts(strata, B: int = 50) -> np.ndarray:
    """Questions per stratum: int64 (B,) from strata (N,) of :func:`~railsweep.metrics.stratified.stratify`."""
    return np.bincount(np.asarray(strata, dtype=np.int64), minlength=check_bins(B)).astype(np.int64)


def weight_concentration(strata, B: int = 50) -> dict[str, float | int | bool]:
    """How much of SA-PPG's weight the sparsest strata's questions carry.

    strata: int (N,). Returns ``sparse_questions`` k, ``sparse_share`` k/N,
    ``sparse_weight`` y (their share of the weight), ``sparse_strata`` (how many
    strata), ``filled_strata`` |ℬ| and ``concentrated`` (k/N <= WARN_QUESTION_SHARE).
    """
    n = stratum_counts(strata, B)
    filled = n[n > 0]
    K, N = int(filled.size), int(filled.sum())
    if K == 0:
        return {"sparse_questions": 0, "sparse_share": float("nan"), "sparse_weight": float("nan"),
                "sparse_strata": 0, "filled_strata": 0, "concentrated": False}  # fmt: skip
    j = int(np.ceil(HALF * K))  # each stratum weighs 1/K: the j sparsest hold >= HALF
    k = int(np.sort(filled, kind="stable")[:j].sum())
    return {
        "sparse_questions": k,
        "sparse_share": k / N,
        "sparse_weight": j / K,
        "sparse_strata": j,
        "filled_strata": K,
        "concentrated": bool(k / N <= WARN_QUESTION_SHARE),
    }


def question_weights(strata) -> np.ndarray:
    """Each question's weight in SA-PPG, float (N,): 1/(|ℬ|·n_b); sums to 1."""
    s = np.asarray(strata, dtype=np.int64)
    n = np.bincount(s)
    return 1.0 / (np.count_nonzero(n) * n[s])


def describe_concentration(conc: dict) -> str:
    """``"9 questions (4.5 %) in the 3 sparsest of 6 strata carry 50.0 % of the SA-PPG weight"``, plus a
    warning when they are concentrated."""
    if not conc["filled_strata"]:
        return "no questions"
    text = (
        f"{conc['sparse_questions']} questions ({100 * conc['sparse_share']:.1f} %) in the "
        f"{conc['sparse_strata']} sparsest of {conc['filled_strata']} strata carry "
        f"{100 * conc['sparse_weight']:.1f} % of the SA-PPG weight"
    )
    if conc["concentrated"]:
        text += f" (WARNING: at most {WARN_QUESTION_SHARE:.0%} of the questions carry half of SA-PPG)"
    return text


def describe_occupancy(counts, B: int | None = None) -> str:
    """``"0.00:41 0.50:3 ..."``: lower edge (b−1)/B and question count of every non-empty stratum."""
    n = np.asarray(counts)
    B = n.size if B is None else B
    return " ".join(f"{b / B:.2f}:{int(n[b])}" for b in np.flatnonzero(n))
