"""Model side, behavioural: perturbation sensitivity, the solve probability lost when the question is reworded.

A model that memorised an item's surface form solves it more often in its original wording than in a
paraphrase. Per question, from two per-question tables of one model and strategy (a ``gsm8k`` cell on
the original wording, a ``pq`` cell on the paraphrase; :mod:`railsweep.results.schema`):

1. align the tables on ``question_index`` (the same questions, else a DataError naming the first mismatch);
2. ``p_o = c_o / m_o`` and ``p_p = c_p / m_p`` (NaN where ``m = 0``);
3. the score ``d = p_o − p_p`` (higher = more of the score came from the surface form);
4. its CI: Newcombe's hybrid score interval for a difference of two independent proportions (Newcombe
   1998, method 10) from each proportion's Wilson interval (:func:`wilson_interval`), a cell's m samples
   taken as independent Bernoulli draws.

Items without rows (control items, say) score NaN. There is no default threshold: give ``--threshold``
(e.g. 0.2), or control items with rows in both tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from railsweep.detection.base import DetectInputs, Detector, Item, Scores, register
from railsweep.errors import ConfigError, DataError
from railsweep.results.io import read_cell


@dataclass(frozen=True)
class PerturbConfig:
    """alpha: the per-item CI is a (1 − alpha) interval."""

    alpha: float = 0.05

    def __post_init__(self) -> None:
        if not 0.0 < float(self.alpha) < 1.0:
            raise ConfigError(f"perturb alpha must lie in (0, 1), got {self.alpha!r}")


def _z(alpha: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def wilson_interval(c, m, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of c successes in m trials, each float (N,); NaN where m = 0.

    ``(p + z²/2m ± z·sqrt(p(1−p)/m + z²/4m²)) / (1 + z²/m)`` with ``p = c/m``.
    """
    c, m = np.asarray(c, dtype=float), np.asarray(m, dtype=float)
    z = _z(alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = c / m
        denom = 1.0 + z * z / m
        centre = (p + z * z / (2 * m)) / denom
        half = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / denom
    lo, hi = centre - half, centre + half
    bad = m <= 0
    lo[bad], hi[bad] = np.nan, np.nan
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def aligned(original: pd.DataFrame, paraphrased: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables sorted by question_index; different question sets -> DataError naming the smallest mismatch."""
    for role, df in (("original", original), ("paraphrased", paraphrased)):
        missing = [c for c in ("question_index", "c", "m") if c not in df.columns]
        if missing:
            raise DataError(f"{role} table lacks column(s) {missing}")
        if df.empty:
            raise DataError(f"{role} table has no rows")
        dup = df["question_index"][df["question_index"].duplicated()]
        if len(dup):
            raise DataError(f"{role} table repeats question_index {int(dup.iloc[0])}")
    o = original.sort_values("question_index", kind="stable").reset_index(drop=True)
    p = paraphrased.sort_values("question_index", kind="stable").reset_index(drop=True)
    qo, qp = set(o["question_index"].tolist()), set(p["question_index"].tolist())
    only = sorted(qo ^ qp)
    if only:
        first = int(only[0])
        where = "original" if first in qo else "paraphrased"
        raise DataError(
            f"original and paraphrased tables cover different questions ({len(qo)} vs {len(qp)}; "
            f"{len(only)} in only one): first mismatched question_index={first}, only in the {where} table"
        )
    return o, p


def perturbation_table(original: pd.DataFrame, paraphrased: pd.DataFrame,
                       alpha: float = 0.05) -> pd.DataFrame:  # fmt: skip
    """Per question: question_index, leaked (the original table's, NA when absent), p_original,
    p_paraphrased, difference, ci_low, ci_high; the steps are the module docstring's."""
    o, p = aligned(original, paraphrased)
    co, mo = o["c"].to_numpy(dtype=float), o["m"].to_numpy(dtype=float)
    cp, mp = p["c"].to_numpy(dtype=float), p["m"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        po = np.where(mo > 0, co / mo, np.nan)
        pp = np.where(mp > 0, cp / mp, np.nan)
    d = po - pp
    lo_o, hi_o = wilson_interval(co, mo, alpha)
    lo_p, hi_p = wilson_interval(cp, mp, alpha)
    ci_low = d - np.sqrt((po - lo_o) ** 2 + (hi_p - pp) ** 2)
    ci_high = d + np.sqrt((hi_o - po) ** 2 + (pp - lo_p) ** 2)
    leaked = o["leaked"] if "leaked" in o.columns else pd.Series([None] * len(o))
    return pd.DataFrame(
        {"question_index": o["question_index"].to_numpy(dtype=np.int64),
         "leaked": pd.array(leaked.tolist(), dtype="boolean"),
         "p_original": po, "p_paraphrased": pp, "difference": d, "ci_low": ci_low, "ci_high": ci_high}
    )  # fmt: skip


def read_pair(original: str | Path, paraphrased: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two per-question files (schema-checked by :func:`railsweep.results.io.read_cell`)."""
    return read_cell(original)[1], read_cell(paraphrased)[1]


@register("perturb", PerturbConfig)
class Perturb(Detector):
    def score(self, items: Sequence[Item], inputs: DetectInputs) -> list[Scores]:
        inputs.require(self.name, "original", "paraphrased")
        table = perturbation_table(*read_pair(inputs.original, inputs.paraphrased), self.config.alpha)
        row = {int(q): i for i, q in enumerate(table["question_index"])}
        pos = np.array([row.get(it.item_id, -1) if it.group == "test" else -1 for it in items])
        out: dict[str, np.ndarray] = {}
        for col in ("difference", "ci_low", "ci_high", "p_original", "p_paraphrased"):
            values = table[col].to_numpy(dtype=float)
            out[col] = np.where(pos >= 0, values[np.maximum(pos, 0)], np.nan)
        score = out.pop("difference")
        return [Scores(f"alpha={self.config.alpha:g}", score, out)]


def items_of(original: pd.DataFrame) -> list[Item]:
    """Test items standing for the table's questions (no texts), with the table's leak truth."""
    leaked = original["leaked"] if "leaked" in original.columns else [None] * len(original)
    return [Item(int(q), "test", "", "", None if pd.isna(lk) else bool(lk))
            for q, lk in zip(original["question_index"], leaked)]  # fmt: skip
