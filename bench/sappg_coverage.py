"""Split-half coverage of SA-PPG's two intervals for the paired difference of two cells.

SA-PPG (eq 12–13) gives every filled stratum the same weight; the within-strata
bootstrap cannot see the variance of a sparse stratum, the across-strata one
(re-stratified resamples) can. This measures how often each interval, computed
on one half of the questions, covers the difference measured on the other half.

Steps (``--repeats`` times, one seeded generator):
  1. split the questions at random into halves A and B (sizes differ by at most one);
  2. on each half, the paired difference SA-PPG(cell) − SA-PPG(reference) against the
     clean cell, with its within-strata and its across-strata percentile interval;
  3. interval of half A covers B's point, and the other way round: two trials per repeat.

Reading: the two halves' points are independent draws, each with the variance of
one half, so their difference has twice that variance. A calibrated (normal) 95 %
interval then covers the other half's point with probability
P(|Z| < 1.96/√2) = 0.834 (:data:`CALIBRATED_95`), not 0.95; clearly lower means the
interval is too narrow.

Run: ``python bench/sappg_coverage.py --clean CLEAN.parquet --cell RAILCAP.parquet
--reference IDENTITY.parquet [--B 50 --repeats 200 --n-boot 500 --seed 0]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from railsweep.metrics import Readouts, paired_difference_counts

CALIBRATED_95 = math.erf(1.96 / 2)  # P(|Z| < 1.96/sqrt(2)) = erf(1.96/2) ≈ 0.834
INTERVALS = ("within", "across")


def load_counts(path: str) -> pd.DataFrame:
    """``question_index, c, m`` of a per-question Parquet (results schema), sorted by question."""
    df = pd.read_parquet(path, columns=["question_index", "c", "m"])
    return df.sort_values("question_index", kind="stable").reset_index(drop=True)


def _readouts(df: pd.DataFrame, rows: np.ndarray) -> Readouts:
    c, m = df["c"].to_numpy()[rows], df["m"].to_numpy()[rows]
    return Readouts.of(c, m, np.zeros_like(c))  # r01 is not used by SA-PPG


def _half(clean, cell, ref, rows, *, B: int, n_boot: int, alpha: float, rng) -> dict[str, float]:
    d = paired_difference_counts(
        _readouts(clean, rows), _readouts(cell, rows), _readouts(ref, rows), "sa_ppg",
        B=B, n_boot=n_boot, alpha=alpha, rng=rng,
    )  # fmt: skip
    return {
        "point": float(d["difference"]),
        "within": (float(d["ci_low"]), float(d["ci_high"])),
        "across": (float(d["ci_low_across"]), float(d["ci_high_across"])),
    }


def split_half_coverage(
    clean: pd.DataFrame,
    cell: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    B: int = 50,
    repeats: int = 200,
    n_boot: int = 500,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, object]:
    """Steps 1–3 on three aligned count tables (same questions in the same order).

    Returns ``{"coverage": {"within": f, "across": f}, "trials": 2·repeats, "width": {...}
    (mean interval width), "spread": sd of the half-to-half point difference, "calibrated_95", ...}``.
    """
    n = len(clean)
    for name, df in (("cell", cell), ("reference", reference)):
        if not np.array_equal(df["question_index"].to_numpy(), clean["question_index"].to_numpy()):
            raise ValueError(f"{name} and clean cover different questions")
    if n < 4:
        raise ValueError(f"need at least 4 questions to split in halves, got {n}")
    rng = np.random.default_rng(seed)
    hits = {k: 0 for k in INTERVALS}
    widths: dict[str, list[float]] = {k: [] for k in INTERVALS}
    gaps = []
    for _ in range(repeats):
        perm = rng.permutation(n)
        halves = [
            _half(clean, cell, reference, np.sort(h), B=B, n_boot=n_boot, alpha=alpha, rng=rng)
            for h in (perm[: n // 2], perm[n // 2 :])
        ]
        gaps.append(halves[0]["point"] - halves[1]["point"])
        for mine, other in (halves, halves[::-1]):
            for k in INTERVALS:
                lo, hi = mine[k]
                hits[k] += lo <= other["point"] <= hi
                widths[k].append(hi - lo)
    trials = 2 * repeats
    return {
        "coverage": {k: hits[k] / trials for k in INTERVALS},
        "width": {k: float(np.mean(widths[k])) for k in INTERVALS},
        "spread": float(np.std(gaps, ddof=1)) if repeats > 1 else float("nan"),
        "calibrated_95": CALIBRATED_95 if alpha == 0.05 else None,
        "trials": trials,
        "n_questions": n,
        "settings": {"B": B, "repeats": repeats, "n_boot": n_boot, "alpha": alpha, "seed": seed},
    }


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clean", required=True, help="the clean reference cell's per-question Parquet")
    p.add_argument("--cell", required=True, help="the cell compared (e.g. RailCap)")
    p.add_argument("--reference", required=True, help="the cell it is compared against (e.g. Identity)")
    p.add_argument("--B", type=int, default=50, dest="B")
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--n-boot", type=int, default=500)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if args.repeats < 1 or args.n_boot < 1 or args.B < 1 or not 0 < args.alpha < 1:
        print(f"railsweep: error: need --repeats, --n-boot, --B >= 1 and 0 < --alpha < 1, got {vars(args)}",
              file=sys.stderr)  # fmt: skip
        return 2
    tables = [load_counts(p) for p in (args.clean, args.cell, args.reference)]
    out = split_half_coverage(
        *tables, B=args.B, repeats=args.repeats, n_boot=args.n_boot, alpha=args.alpha, seed=args.seed
    )
    out["files"] = {"clean": args.clean, "cell": args.cell, "reference": args.reference}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
