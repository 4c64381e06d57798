"""Per-question readouts: the 0/1 mark (eq 1), the solve probability (eq 3), readout stability (Fig 2)."""

from __future__ import annotations

import numpy as np

from railsweep.metrics._arrays import as_counts, same_question_axis


def solve_prob(c, m) -> np.ndarray:
    """Solve probability estimate ``r^prob(q) = c/m`` (paper eq 3), 0 where ``m = 0``.

    c, m: int (N,) correct responses and responses counted (m may vary per
    question, e.g. TED keeps only some samples). Returns float (N,).
    The 0/1 readout ``r^{0/1}`` (eq 1) is the special case m = 1.
    """
    c, m = as_counts(c, m)
    return np.divide(c, m, out=np.zeros(c.shape, dtype=float), where=m > 0)


def readout_stability(r_a, r_b) -> np.ndarray:
    """Mean per-question gap between two independent readouts of the SAME model (paper Fig 2).

    r_a, r_b: float (..., N) readouts of batch 1 and batch 2 (0/1 marks for
    m = 1, or solve probabilities). Returns (...) ``mean_q |r_a(q) - r_b(q)|``;
    the paper reports 0.190 for the 0/1 readout and 0.041 for m = 50.
    """
    r_a, r_b = np.asarray(r_a, dtype=float), np.asarray(r_b, dtype=float)
    same_question_axis(r_a, r_b)
    return np.mean(np.abs(r_a - r_b), axis=-1)
