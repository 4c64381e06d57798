"""Coverage of SA-PPG's printed interval (the jackknife with its calibrated critical value), of the plain
jackknife t, and of the two bootstraps they replaced, on halves and subsamples of the questions of real cells.

SA-PPG (eq 12–13) gives every filled stratum the same weight; the within-strata
bootstrap cannot see the variance of a sparse stratum, the across-strata one
(re-stratified resamples) sees some of it, the jackknife (each question left out
once, :mod:`railsweep.metrics.jackknife`) all of it. This measures how often each interval, computed on
part of the questions, covers the value measured on the rest or on all of them, for
three targets: SA-PPG of the cell (e.g. RailCap), of the reference (e.g. Identity),
and their paired difference, all against the same clean cell.

Steps, per setting (one seeded generator for everything):
  1. full set: each target's point and both intervals on all N questions, with the
     clean strata's weight concentration;
  2. ordered split: the first and the last ⌊N/2⌋ questions (by question_index),
     each half's point and intervals, and whether each covers the other's point;
  3. random split halves (``--repeats`` times): split at random into halves A and B;
     A's interval covers B's point and the other way round (two trials per repeat),
     and each half's interval covers the full-set point;
  4. subsamples (``--sizes``, ``--repeats`` draws each): k questions without
     replacement; the subsample's interval covers the full-set point;
  5. pooled: the mean of each figure over the settings.

Reading: SA-PPG is treated as a mean of the questions (approximately true; its per-stratum
|mean| is not). Two halves' points are independent, so their gap has twice one half's
variance and a calibrated 95 % interval covers the other half's point with probability
P(|Z| < 1.96/√2) = 0.834 (:data:`CALIBRATED_95`). A subsample of a share f of the questions
differs from the full set with (1 − f) times its own variance: P(|Z| < 1.96/√(1 − f)),
0.994 for f = 1/2. ``calibrated_width`` is the width a calibrated interval of one half would
have, 2·1.96·sd/√2 from the sd of the half-to-half gap: compare it with the mean widths.

Run (the figures of docs/metrics.md, from the `mini` sweep's MLflow artifact store):
``python bench/sappg_coverage.py --results-dir runs/mlflow/mlartifacts --B 20 --out coverage.json
--markdown coverage.md`` (defaults: RailCap against Identity, ``--repeats 200 --n-boot 500
--sizes 50 100 150 --seed 0``). One setting from three files instead:
``--clean CLEAN.parquet --cell RAILCAP.parquet --reference IDENTITY.parquet``. JSON on stdout
unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from railsweep.errors import RailsweepError
from railsweep.metrics import (
    Readouts,
    across_strata_indices,
    percentile_ci,
    sa_ppg,
    sa_ppg_restratified,
    solve_prob,
    stratified_indices,
    stratify,
    weight_concentration,
)
from railsweep.metrics.selfcheck import fitted_population, jackknife_interval, self_check
from railsweep.metrics.simulate import Population
from railsweep.results.io import RESPONSES_SUFFIX, read_cell, read_metadata

CALIBRATED_95 = math.erf(1.96 / 2)  # P(|Z| < 1.96/sqrt(2)) = erf(1.96/2) ≈ 0.834
# the printed interval (calibrated jackknife), the plain jackknife t, the two bootstraps they replaced
INTERVALS = ("printed", "jackknife", "within", "across")
CHECK_REPS = 200  # simulated cells of each calibration here (railsweep prints with 400)
TARGETS = ("cell", "reference", "difference")


def calibrated_other_half(alpha: float = 0.05) -> float:
    """Chance that a calibrated 1−α interval of one half covers the other half's point: P(|Z| < z/√2)."""
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return 2 * NormalDist().cdf(z / math.sqrt(2)) - 1


def calibrated_full_set(fraction: float, alpha: float = 0.05) -> float:
    """Chance that a calibrated 1−α interval of a subsample (share f) covers the full set's point."""
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return 2 * NormalDist().cdf(z / math.sqrt(1 - fraction)) - 1 if fraction < 1 else 1.0


# ---------------------------------------------------------------- inputs


def load_counts(path: str | Path) -> pd.DataFrame:
    """``question_index, c, m`` of a per-question Parquet (results schema), sorted by question."""
    df = pd.read_parquet(path, columns=["question_index", "c", "m"])
    return df.sort_values("question_index", kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Setting:
    """One (family, domain) of a sweep: its clean, compared and reference cells' per-question files."""

    name: str
    clean: Path
    cell: Path
    reference: Path


def _question_files(dirs: Sequence[str | Path]) -> list[Path]:
    files = []
    for d in dirs:
        if not Path(d).is_dir():
            raise RailsweepError(f"--results-dir {str(d)!r} is not a directory")
        files += [p for p in Path(d).rglob("*.parquet")
                  if not p.name.startswith(".") and not p.name.endswith(RESPONSES_SUFFIX)]  # fmt: skip
    return sorted(files)


def find_settings(dirs: Sequence[str | Path], cell_strategy: str, reference_strategy: str) -> list[Setting]:
    """Every (family, domain) under ``dirs`` with one clean cell, one ``cell_strategy`` cell and one
    ``reference_strategy`` cell (a cell id found twice counts once), sorted by domain then family."""
    by_id = {}
    for p in _question_files(dirs):
        cell = read_metadata(p)["cell"]
        by_id.setdefault(cell.cell_id, (p, cell))
    clean, found = {}, {}
    for p, c in by_id.values():
        readout = (c.family, c.m, c.temperature, c.seed, c.task_dir, c.split)
        if c.role == "clean":
            clean.setdefault(readout, []).append(p)
        elif c.strategy in (cell_strategy, reference_strategy):
            found.setdefault((c.domain, *readout), {}).setdefault(c.strategy, []).append(p)
    settings = []
    for key in sorted(found, key=lambda k: tuple(map(str, k))):
        name = f"{key[0]} × {key[1]}"
        paths = {"clean": clean.get(key[1:], []), **found[key]}
        if any(len(paths.get(k, [])) > 1 for k in ("clean", cell_strategy, reference_strategy)):
            raise RailsweepError(
                f"{name}: several cells of one role: {paths}; pass --clean/--cell/--reference"
            )
        if all(paths.get(k) for k in ("clean", cell_strategy, reference_strategy)):
            settings.append(
                Setting(name, paths["clean"][0], paths[cell_strategy][0], paths[reference_strategy][0])
            )
    if not settings:
        raise RailsweepError(
            f"no setting under {', '.join(map(str, dirs))} has a clean, a {cell_strategy!r} and a "
            f"{reference_strategy!r} cell"
        )
    return settings


def _readouts(clean: pd.DataFrame, cell: pd.DataFrame, reference: pd.DataFrame) -> tuple[Readouts, ...]:
    """Three aligned Readouts (r01 unused by SA-PPG); the tables must cover the same questions in order."""
    for name, df in (("cell", cell), ("reference", reference)):
        if not np.array_equal(df["question_index"].to_numpy(), clean["question_index"].to_numpy()):
            raise ValueError(f"{name} and clean cover different questions")
    return tuple(
        Readouts.of(df["c"].to_numpy(), df["m"].to_numpy(), np.zeros(len(df), int), name)
        for name, df in (("clean", clean), ("cell", cell), ("reference", reference))
    )


# ---------------------------------------------------------------- estimates


def estimates(
    clean: Readouts, cell: Readouts, reference: Readouts, rows: np.ndarray, *,
    B: int, n_boot: int, alpha: float, rng: np.random.Generator,
) -> dict[str, dict[str, object]]:  # fmt: skip
    """SA-PPG (eq 13) of cell and reference and their difference on the questions ``rows`` (k,).

    Returns ``{target: {"point", "printed": (lo, hi), "jackknife": (lo, hi), "within": (lo, hi),
    "across": (lo, hi)}}`` for the targets
    cell, reference, difference. The questions are re-stratified by the clean cell on ``rows``;
    both cells share every resample; within-strata indices are drawn before across-strata ones,
    as in :func:`railsweep.metrics.paired_difference_counts` and ``score_counts``, so with the
    same generator all three match those functions' intervals.
    """
    strata = stratify(clean.c[rows], clean.m[rows], B)
    base = solve_prob(clean.c, clean.m)[rows]
    deltas = {"cell": solve_prob(cell.c, cell.m)[rows] - base,
              "reference": solve_prob(reference.c, reference.m)[rows] - base}  # fmt: skip
    within = stratified_indices(strata, n_boot, rng)
    across = across_strata_indices(rows.size, n_boot, rng)
    point = {k: float(sa_ppg(d, strata)) for k, d in deltas.items()}
    boot = {k: {"within": sa_ppg(d[within], strata), "across": sa_ppg_restratified(d[across], strata[across], B)}
            for k, d in deltas.items()}  # fmt: skip
    point["difference"] = point["cell"] - point["reference"]
    boot["difference"] = {i: boot["cell"][i] - boot["reference"][i] for i in INTERVALS[2:]}
    crit = _calibration(clean, cell, reference, rows, B, alpha, rng)
    args = {"cell": (deltas["cell"], None), "reference": (deltas["reference"], None),
            "difference": (deltas["cell"], deltas["reference"])}  # fmt: skip
    return {
        t: {
            "point": point[t],
            "printed": jackknife_interval(*args[t], strata, "sa_ppg", alpha, crit[t])[1:],
            "jackknife": jackknife_interval(*args[t], strata, "sa_ppg", alpha)[1:],
            **{i: percentile_ci(boot[t][i], alpha) for i in INTERVALS[2:]},
        }
        for t in TARGETS
    }


def _calibration(clean, cell, reference, rows, B, alpha, rng) -> dict[str, float]:
    """Each target's calibrated critical value, from the population fitted to the questions ``rows`` (the
    check :func:`railsweep.metrics.score_counts` runs; counted here whether or not it would print)."""
    m = int(clean.m[rows][0])
    pop = fitted_population(np.stack([r.c[rows] for r in (clean, cell, reference)]), m, np.zeros((3, rows.size)))
    sub = lambda idx: Population(tuple(pop.names[k] for k in idx), pop.p[idx], pop.greedy[idx])  # noqa: E731
    check = lambda p, pair: self_check(p, rows.size, m, B, alpha, rng, pair, CHECK_REPS, 5 * CHECK_REPS)  # noqa: E731
    return {"cell": check(sub([0, 1]), False)["sa_ppg"][1], "reference": check(sub([0, 2]), False)["sa_ppg"][1],
            "difference": check(pop, True)["sa_ppg"][1]}  # fmt: skip


def _covers(interval: tuple[float, float], x: float) -> bool:
    return bool(interval[0] <= x <= interval[1])


def _rounded(est: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    return {t: {"point": e["point"], **{i: list(e[i]) for i in INTERVALS}} for t, e in est.items()}


# ---------------------------------------------------------------- the studies


def ordered_split(clean, cell, reference, *, B: int, n_boot: int, alpha: float, rng) -> dict[str, object]:
    """Step 2: the first and the last ⌊N/2⌋ questions; ``covers[target][interval]`` = [first covers
    last, last covers first]."""
    n = clean.c.shape[0]
    first, last = (estimates(clean, cell, reference, rows, B=B, n_boot=n_boot, alpha=alpha, rng=rng)
                   for rows in (np.arange(n // 2), np.arange(n - n // 2, n)))  # fmt: skip
    covers = {t: {i: [_covers(first[t][i], last[t]["point"]), _covers(last[t][i], first[t]["point"])]
                  for i in INTERVALS} for t in TARGETS}  # fmt: skip
    return {"size": n // 2, "first": _rounded(first), "last": _rounded(last), "covers": covers}


def _summary(hits, widths, points, full_point: float, trials: int) -> dict[str, object]:
    """Coverage of the full-set point, mean widths, and ``bias``: the mean part's point minus the full set's
    (SA-PPG is not a mean of the questions: a part loses or thins sparse strata, so it is biased)."""
    return {
        "covers_full_set": {i: hits["full"][i] / trials for i in INTERVALS},
        "width": {i: float(np.mean(widths[i])) for i in INTERVALS},
        "bias": float(np.mean(points)) - full_point,
    }


def split_half_coverage(
    clean: pd.DataFrame, cell: pd.DataFrame, reference: pd.DataFrame, *,
    B: int = 50, repeats: int = 200, n_boot: int = 500, alpha: float = 0.05, seed: int = 0,
    full: dict | None = None, rng: np.random.Generator | None = None,
) -> dict[str, object]:  # fmt: skip
    """Step 3 on three aligned count tables (same questions in the same order).

    Returns ``{"trials": 2·repeats, "size", "n_questions", "calibrated": {"other_half",
    "full_set"}, target: {"covers_other_half": {interval: share}, "covers_full_set": {...},
    "width": {interval: mean width}, "shift": {interval: mean (interval midpoint − own point)},
    "bias", "spread": sd of the half-to-half gap, "calibrated_width"}}``.
    ``full`` (the full-set estimates) and ``rng`` default to fresh ones from ``seed``.
    """
    cl, co, ref = _readouts(clean, cell, reference)
    n = cl.c.shape[0]
    if n < 4:
        raise ValueError(f"need at least 4 questions to split in halves, got {n}")
    rng = np.random.default_rng(seed) if rng is None else rng
    kw = {"B": B, "n_boot": n_boot, "alpha": alpha}
    full = estimates(cl, co, ref, np.arange(n), rng=rng, **kw) if full is None else full
    hits = {t: {"other": dict.fromkeys(INTERVALS, 0), "full": dict.fromkeys(INTERVALS, 0)} for t in TARGETS}
    widths = {t: {i: [] for i in INTERVALS} for t in TARGETS}
    gaps = {t: [] for t in TARGETS}
    points = {t: [] for t in TARGETS}
    shifts = {t: {i: [] for i in INTERVALS} for t in TARGETS}
    for _ in range(repeats):
        perm = rng.permutation(n)
        halves = [estimates(cl, co, ref, np.sort(h), rng=rng, **kw) for h in (perm[: n // 2], perm[n // 2 :])]
        for t in TARGETS:
            gaps[t].append(halves[0][t]["point"] - halves[1][t]["point"])
            points[t] += [h[t]["point"] for h in halves]
            for mine, other in (halves, halves[::-1]):
                for i in INTERVALS:
                    hits[t]["other"][i] += _covers(mine[t][i], other[t]["point"])
                    hits[t]["full"][i] += _covers(mine[t][i], full[t]["point"])
                    widths[t][i].append(mine[t][i][1] - mine[t][i][0])
                    shifts[t][i].append((mine[t][i][0] + mine[t][i][1]) / 2 - mine[t]["point"])
    trials = 2 * repeats
    z = NormalDist().inv_cdf(1 - alpha / 2)
    out: dict[str, object] = {
        "trials": trials, "size": n // 2, "n_questions": n,
        "calibrated": {"other_half": calibrated_other_half(alpha), "full_set": calibrated_full_set(0.5, alpha)},
    }  # fmt: skip
    for t in TARGETS:
        spread = float(np.std(gaps[t], ddof=1)) if repeats > 1 else float("nan")
        out[t] = {
            "covers_other_half": {i: hits[t]["other"][i] / trials for i in INTERVALS},
            **_summary(hits[t], widths[t], points[t], full[t]["point"], trials),
            "shift": {i: float(np.mean(shifts[t][i])) for i in INTERVALS},
            "spread": spread,
            "calibrated_width": 2 * z * spread / math.sqrt(2),
        }
    return out


def subsample_coverage(
    clean: pd.DataFrame, cell: pd.DataFrame, reference: pd.DataFrame, size: int, *,
    B: int = 50, repeats: int = 200, n_boot: int = 500, alpha: float = 0.05, seed: int = 0,
    full: dict | None = None, rng: np.random.Generator | None = None,
) -> dict[str, object]:  # fmt: skip
    """Step 4: ``repeats`` subsamples of ``size`` questions (without replacement); how often each
    interval covers the full set's point, and the mean widths. Keys as :func:`split_half_coverage`."""
    cl, co, ref = _readouts(clean, cell, reference)
    n = cl.c.shape[0]
    if not 2 <= size < n:
        raise ValueError(f"a subsample needs 2 <= size < {n} questions, got {size}")
    rng = np.random.default_rng(seed) if rng is None else rng
    kw = {"B": B, "n_boot": n_boot, "alpha": alpha}
    full = estimates(cl, co, ref, np.arange(n), rng=rng, **kw) if full is None else full
    hits = {t: {"full": dict.fromkeys(INTERVALS, 0)} for t in TARGETS}
    widths = {t: {i: [] for i in INTERVALS} for t in TARGETS}
    points = {t: [] for t in TARGETS}
    for _ in range(repeats):
        est = estimates(cl, co, ref, np.sort(rng.choice(n, size, replace=False)), rng=rng, **kw)
        for t in TARGETS:
            points[t].append(est[t]["point"])
            for i in INTERVALS:
                hits[t]["full"][i] += _covers(est[t][i], full[t]["point"])
                widths[t][i].append(est[t][i][1] - est[t][i][0])
    out: dict[str, object] = {"trials": repeats, "size": size, "n_questions": n,
                              "calibrated": {"full_set": calibrated_full_set(size / n, alpha)}}  # fmt: skip
    out.update({t: _summary(hits[t], widths[t], points[t], full[t]["point"], repeats) for t in TARGETS})
    return out


def setting_report(
    clean: pd.DataFrame, cell: pd.DataFrame, reference: pd.DataFrame, *,
    B: int, repeats: int, n_boot: int, alpha: float, seed: int, sizes: Sequence[int],
) -> dict[str, object]:  # fmt: skip
    """Steps 1–4 for one setting, all from one generator seeded with ``seed``."""
    cl, co, ref = _readouts(clean, cell, reference)
    n = cl.c.shape[0]
    rng = np.random.default_rng(seed)
    kw = {"B": B, "n_boot": n_boot, "alpha": alpha}
    full = estimates(cl, co, ref, np.arange(n), rng=rng, **kw)
    conc = weight_concentration(stratify(cl.c, cl.m, B), B)
    study = {"full": full, "rng": rng, "repeats": repeats, **kw}
    return {
        "n_questions": n,
        "full_set": _rounded(full),
        "concentration": conc,
        "ordered_split": ordered_split(cl, co, ref, rng=rng, **kw),
        "split_half": split_half_coverage(clean, cell, reference, **study),
        "subsample": [subsample_coverage(clean, cell, reference, k, **study) for k in sizes],
    }


def pooled(reports: Sequence[dict]) -> dict[str, object]:
    """Step 5: each coverage, width and bias averaged over the settings (each setting weighs the same)."""

    def mean(get) -> float:
        return float(np.mean([get(r) for r in reports]))

    def block(part, keys) -> dict:
        out = {}
        for t in TARGETS:
            out[t] = {
                k: {i: mean(lambda r, t=t, k=k, i=i: part(r)[t][k][i]) for i in INTERVALS} for k in keys
            }
            out[t].update({k: mean(lambda r, t=t, k=k: part(r)[t][k]) for k in ("bias", "calibrated_width")
                           if k in part(reports[0])[t]})  # fmt: skip
        return out

    sizes = [s["size"] for s in reports[0]["subsample"]]
    return {
        "settings": len(reports),
        "split_half": block(
            lambda r: r["split_half"], ("covers_other_half", "covers_full_set", "width", "shift")
        ),
        "subsample": {
            str(k): block(lambda r, j=j: r["subsample"][j], ("covers_full_set", "width"))
            for j, k in enumerate(sizes)
        },  # fmt: skip
    }


# ---------------------------------------------------------------- output


def _iv(iv) -> str:
    return f"[{iv[0]:+.3f}, {iv[1]:+.3f}]"


def _full_and_halves(out: dict) -> list[str]:
    rows = ["| setting | filled strata (sparsest half: share of questions) | all N: difference, printed | jackknife "
            "| within | across | first half: point, printed, jackknife, within, across "
            "| last half: point, printed, jackknife, within, across |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for s in out["settings"]:
        f, o, c = s["full_set"]["difference"], s["ordered_split"], s["concentration"]
        halves = [f"{h['point']:+.3f} {_iv(h['printed'])} {_iv(h['jackknife'])} {_iv(h['within'])} {_iv(h['across'])}"
                  for h in (o["first"]["difference"], o["last"]["difference"])]  # fmt: skip
        rows.append(
            f"| {s['name']} | {c['filled_strata']} ({100 * c['sparse_share']:.0f} %) "
            f"| {f['point']:+.3f} {_iv(f['printed'])} | {_iv(f['jackknife'])} | {_iv(f['within'])} "
            f"| {_iv(f['across'])} | {halves[0]} "
            f"| {halves[1]} |"
        )
    return rows


def _coverage_row(name: str, t: str, g: dict, other: bool) -> str:
    cells = [name, t]
    if other:
        cells += [f"{g['covers_other_half'][i]:.2f}" for i in INTERVALS]
    cells += [f"{g['covers_full_set'][i]:.2f}" for i in INTERVALS]
    cells += [f"{g['width'][i]:.3f}" for i in INTERVALS]
    if other:
        cells.append(f"{g['calibrated_width']:.3f}")
        cells += [f"{g['shift'][i]:+.3f}" for i in INTERVALS]
    cells.append(f"{g['bias']:+.3f}")
    return "| " + " | ".join(cells) + " |"


def markdown(out: dict) -> str:
    """The docs' tables: the difference on all questions and on the ordered halves; split-half coverage per
    setting and pooled; subsample coverage pooled."""
    sh = out["settings"][0]["split_half"]["calibrated"]
    rows = [*_full_and_halves(out), "",
            f"| setting | target | other half: printed (calibrated {sh['other_half']:.3f}) | jackknife | within "
            f"| across | full set: printed (calibrated {sh['full_set']:.3f}) | jackknife | within | across "
            "| width: printed | jackknife | within | across | calibrated width "
            "| midpoint − point: printed | jackknife | within | across | bias |",
            "|" + "---|" * 20]  # fmt: skip
    for s in out["settings"]:
        rows += [_coverage_row(s["name"], t, s["split_half"][t], True) for t in TARGETS]
    rows += [_coverage_row("mean", t, out["pooled"]["split_half"][t], True) for t in TARGETS]
    rows += ["", "| subsample of N (calibrated) | target | covers full set: printed | jackknife | within | across "
             "| width: printed | jackknife | within | across | bias |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for j, (k, blk) in enumerate(out["pooled"]["subsample"].items()):
        cal = out["settings"][0]["subsample"][j]["calibrated"]["full_set"]
        name = f"{k} of {out['settings'][0]['n_questions']} ({cal:.3f})"
        rows += [_coverage_row(name, t, blk[t], False) for t in TARGETS]
    return "\n".join(rows) + "\n"


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results-dir", action="append", default=[],
                   help="a folder searched recursively for per-question files (repeatable)")  # fmt: skip
    p.add_argument("--cell-strategy", default="railcap", help="the strategy compared (with --results-dir)")
    p.add_argument("--reference-strategy", default="identity", help="the strategy it is compared against")
    p.add_argument("--clean", help="the clean reference cell's per-question Parquet (one setting)")
    p.add_argument("--cell", help="the cell compared (e.g. RailCap)")
    p.add_argument("--reference", help="the cell it is compared against (e.g. Identity)")
    p.add_argument("--B", type=int, default=50, dest="B", help="strata (the mini presets score with 20)")
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--n-boot", type=int, default=500)
    p.add_argument("--sizes", type=int, nargs="*", default=[50, 100, 150], help="subsample sizes")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the JSON here instead of stdout")
    p.add_argument("--markdown", help="also write the docs' tables here")
    return p


def _check_args(args) -> str | None:
    """The first bad option as an error message, else None."""
    files = [args.clean, args.cell, args.reference]
    if bool(args.results_dir) == any(files) or (any(files) and not all(files)):
        return "give either --results-dir or all of --clean, --cell and --reference"
    for name in ("repeats", "n_boot", "B"):
        if getattr(args, name) < 1:
            return f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}"
    if not 0 < args.alpha < 1:
        return f"--alpha must lie in (0, 1), got {args.alpha}"
    if any(k < 2 for k in args.sizes):
        return f"--sizes must each be >= 2, got {args.sizes}"
    return None


def _load(args) -> list[tuple[Setting, list[pd.DataFrame]]]:
    """The settings and their three count tables; RailsweepError names a bad folder, file or size."""
    if args.results_dir:
        settings = find_settings(args.results_dir, args.cell_strategy, args.reference_strategy)
    else:
        for path in (args.clean, args.cell, args.reference):
            read_cell(path)  # schema check with the file named in the error
        settings = [Setting("given files", Path(args.clean), Path(args.cell), Path(args.reference))]
    loaded = [(s, [load_counts(p) for p in (s.clean, s.cell, s.reference)]) for s in settings]
    bad = [f"{s.name}: {len(t[0])}" for s, t in loaded if any(k >= len(t[0]) for k in args.sizes)]
    if bad:
        raise RailsweepError(
            f"--sizes {args.sizes} must each be below the setting's questions ({', '.join(bad)})"
        )
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    problem = _check_args(args)
    try:
        loaded = [] if problem else _load(args)
    except RailsweepError as e:
        problem = str(e)
    if problem:
        print(f"railsweep: error: {problem}", file=sys.stderr)
        return 2
    kw = {k: getattr(args, k) for k in ("B", "repeats", "n_boot", "alpha", "seed", "sizes")}
    reports = [
        {"name": s.name, "files": {k: str(getattr(s, k)) for k in ("clean", "cell", "reference")},
         **setting_report(*t, **kw)}
        for s, t in loaded
    ]  # fmt: skip
    out = {"cell_strategy": args.cell_strategy, "reference_strategy": args.reference_strategy,
           "arguments": kw, "settings": reports, "pooled": pooled(reports)}  # fmt: skip
    text = json.dumps(out, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
    if args.markdown:
        Path(args.markdown).write_text(markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
