"""Coverage of every interval railsweep prints, on cells simulated where the truth is known.

Populations (:class:`railsweep.metrics.simulate.Population`, rows clean / Identity / a second strategy):
  - ``smollm2_like``: p_cl ~ Beta(2.5, 0.9) (mean 0.73, like the smollm2 world's M_cl), half the
    questions leaked with p_co = p_cl + 0.5·(1 − p_cl), the second strategy keeping 13 % of p_co;
  - ``uniform``: the same with p_cl ~ Beta(1, 1);
  - one per setting of real cells (``--results-dir``: a clean, an Identity and a RailCap cell of one
    family × domain): each question's p the posterior mean of its count under that model's fitted prior
    (:mod:`railsweep.metrics.empirical_bayes`), greedy verdicts as observed.

For each population and design (n, m, B) of the grid and each target (Identity's metric, the second
strategy's, and their paired difference second − Identity):
  1. the estimand: the **design value**, the paper's estimator averaged over ``--design-reps`` simulated
     cells at (n, m, B) (what a printed interval claims to cover), beside the large-sample value at
     (m, B), the noise-free value (exact p's) and, for Identity, M_cl read against itself at the design;
  2. ``--reps`` simulated cells, each with the interval railsweep prints (expanded BCa bootstrap over all
     questions for the means; for the stratified metrics the jackknife with the critical value ``--critical``
     names, ``calibrated`` as railsweep prints it; :func:`railsweep.metrics.score_counts`), its noise floor and
     its floor-corrected reading. The stratified metrics' check and calibration run, with ``--calibration
     cell`` (railsweep's way), on the population fitted to each simulated cell; with ``design``, once per
     design on the true population (an idealised check, twenty times faster);
  3. coverage of the design value (``coverage``: every cell; ``coverage_printed``: the cells where the
     interval is printed, i.e. the check passes, at least 10 questions carry a nonzero gap part and, at m ≥ 2B,
     every stratum holds 5 questions;
     ``printed_share``), mean width of the printed intervals, mean floor, the corrected reading's bias against
     the noise-free value, and ``flagged``: the check on the true population at this design (below 0.92: the
     design is too small).

JSON on stdout (or ``--out``): one row per (population, target, metric, design). Run (the figures of
docs/metrics.md): ``python bench/interval_coverage.py --calibration design --critical t --out coverage_grid.json``
(the full grid, about 25 minutes on one core) and ``python bench/interval_coverage.py --populations smollm2_like
--n 50 100 200 --reps 200 --out cell.json`` (each cell checked, about 40 minutes); ``--quick`` for one small design.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

from railsweep.errors import RailsweepError
from railsweep.metrics.aggregate import MIN_NONZERO, nonzero_questions
from railsweep.metrics.bootstrap import abs_interval, bca_ci, expanded_alpha, percentile_ci
from railsweep.metrics.empirical_bayes import fit_prior
from railsweep.metrics.floor import corrected, floors
from railsweep.metrics.selfcheck import (
    CHECK_MIN,
    fitted_population,
    jackknife_dof,
    jackknife_interval,
    self_check,
    sharp_sparse,
    t_quantile,
)
from railsweep.metrics.simulate import (
    Population,
    draw_counts,
    limit_values,
    metric_rows,
    noise_free_values,
    row_strata,
)
from railsweep.results.io import read_cell

METRICS = ("g_ap", "g_app", "a_ppg", "delta_plus", "delta_minus", "sa_ppg", "s_delta_plus", "s_delta_minus")
STRATIFIED = ("sa_ppg", "s_delta_plus", "s_delta_minus")
TARGETS = ("identity", "other", "difference")
GRID_N, GRID_M, GRID_B = (50, 100, 200, 1319), (10, 20, 50), (10, 50)


def synthetic(kind: str, rng: np.random.Generator, size: int = 20_000) -> Population:
    p_cl = rng.beta(2.5, 0.9, size) if kind == "smollm2_like" else rng.beta(1.0, 1.0, size)
    leaked = rng.random(size) < 0.5
    p_co = np.where(leaked, p_cl + 0.5 * (1 - p_cl), p_cl)
    p = np.stack([p_cl, p_co, 0.13 * p_co])
    return Population(("clean", "identity", "other"), p, (p > 0.5).astype(float))


def from_cells(clean, identity, other) -> Population:
    """Population of real cells (per-question DataFrames joined on question_index, one m)."""
    j = clean.merge(identity, on="question_index", suffixes=("", "_i")).merge(
        other, on="question_index", suffixes=("", "_o")
    )
    m = int(j["m"].iloc[0])
    p = np.stack(
        [fit_prior(j[k].to_numpy(), np.full(len(j), m)).posterior_mean() for k in ("c", "c_i", "c_o")]
    )
    g = np.stack([j[k].to_numpy(dtype=float) for k in ("r01", "r01_i", "r01_o")])
    return Population(("clean", "identity", "other"), p, g)


def _target_rows(c, g, m: int, B: int, target: str) -> dict[str, np.ndarray]:
    """The target's metric values of row-wise cells c, g (R, 3, n)."""
    if target != "difference":
        k = 1 if target == "identity" else 2
        return metric_rows(c[:, 0], c[:, k], g[:, 0], g[:, k], m, B)
    a = metric_rows(c[:, 0], c[:, 2], g[:, 0], g[:, 2], m, B)
    b = metric_rows(c[:, 0], c[:, 1], g[:, 0], g[:, 1], m, B)
    return {k: a[k] - b[k] for k in a}


def design_values(pop, n, m, B, target, rng, reps) -> dict[str, float]:
    vals: dict[str, list] = {}
    step = max(1, 1_500_000 // (3 * n))
    for start in range(0, reps, step):
        c, g = draw_counts(pop, n, m, min(step, reps - start), rng)
        for k, v in _target_rows(c, g, m, B, target).items():
            vals.setdefault(k, []).append(v)
    return {k: float(np.concatenate(v).mean()) for k, v in vals.items()}


def _mean_intervals(c, g, m: int, target: str, n_boot: int, rng) -> dict[str, tuple[float, float]]:
    """Printed intervals of the mean metrics for one cell c, g (3, n): shared resamples of all questions,
    expanded BCa (:func:`railsweep.metrics.bootstrap.bca_ci`) as :func:`railsweep.metrics.score_counts`."""
    n = c.shape[1]
    idx = rng.integers(0, n, size=(n_boot, n))
    r = c / m

    def values(k):  # per question; G-AP and G-APP signed
        d = r[k] - r[0]
        return {"g_ap": g[k] - g[0], "g_app": d, "a_ppg": np.abs(d), "delta_plus": np.maximum(d, 0),
                "delta_minus": np.maximum(-d, 0)}  # fmt: skip

    if target == "difference":
        a, b = values(2), values(1)
        out = {}
        for k in a:
            xa, xb = a[k], b[k]
            if k in ("g_ap", "g_app"):  # |mean a| − |mean b|: expanded percentile, as the library
                out[k] = percentile_ci(np.abs(xa[idx].mean(1)) - np.abs(xb[idx].mean(1)), expanded_alpha(n))
            else:
                out[k] = bca_ci((xa - xb)[idx].mean(1), float((xa - xb).mean()), xa - xb)
        return out
    out = {}
    for k, x in values(1 if target == "identity" else 2).items():
        lo, hi = bca_ci(x[idx].mean(1), float(x.mean()), x)
        out[k] = abs_interval(lo, hi) if k in ("g_ap", "g_app") else (lo, hi)
    return out


MODELS = {"identity": [0, 1], "other": [0, 2], "difference": [0, 1, 2]}  # the check's rows per target


def _check(pop: Population, n, m, B, target, rng, reps) -> dict[str, tuple[float, float]]:
    """The self-check (t coverage, calibrated critical value) of the target's stratified metrics on ``pop``."""
    rows = MODELS[target]
    sub = Population(tuple(pop.names[k] for k in rows), pop.p[rows], pop.greedy[rows])
    return self_check(sub, n, m, B, 0.05, rng, pair=target == "difference", reps=reps, design_reps=5 * reps)


def _cell_check(c, g, m, B, target, rng, reps) -> dict[str, tuple[float, float]]:
    """The check as railsweep runs it on one printed cell: on the population fitted to the cell itself."""
    rows = MODELS[target]
    pop = fitted_population(c[rows], m, g[rows])
    return self_check(pop, c.shape[1], m, B, 0.05, rng, pair=len(rows) == 3, reps=reps, design_reps=5 * reps)


def _strat_intervals(c, m: int, B: int, target: str, check, critical="calibrated") -> dict[str, tuple[float, float, bool]]:
    """Each stratified metric's printed interval (``critical``: the calibrated critical value, or ``t``: the
    plain t quantile) and whether the check prints it."""
    s = row_strata(c[0], m, B)
    d = lambda k: (c[k] - c[0]) / m  # noqa: E731
    thin = sharp_sparse(s, m, B)
    out = {}
    for part in STRATIFIED:
        crit = {"calibrated": check[part][1], "t": None,
                "at_least_t": max(check[part][1], t_quantile(jackknife_dof(s), 0.05))}[critical]  # fmt: skip
        if target == "difference":
            _, lo, hi = jackknife_interval(d(2), d(1), s, part, 0.05, crit)
        else:
            _, lo, hi = jackknife_interval(d(1 if target == "identity" else 2), None, s, part, 0.05, crit)
        out[part] = (lo, hi, check[part][0] >= CHECK_MIN and not thin)
    return out


def study(pop, name, n, m, B, target, rng, reps, design_reps, n_boot, floor_reps=40, calibration="cell",
          check_reps=400, critical="calibrated") -> list[dict]:  # fmt: skip
    """Steps 1–3 for one population, design and target: one row per metric."""
    truth = design_values(pop, n, m, B, target, rng, design_reps)
    model = {"identity": "identity", "other": "other"}.get(target)
    limit = limit_values(pop, model, m, B) if model else {}
    free = noise_free_values(pop, model, B) if model else {}
    same = design_values(Population(pop.names, pop.p[[0, 0, 0]], pop.greedy[[0, 0, 0]]), n, m, B, "identity", rng,
                         design_reps) if target == "identity" else {}  # fmt: skip
    check = _check(pop, n, m, B, target, rng, check_reps)  # on the true population: the design's flag
    c, g = draw_counts(pop, n, m, reps, rng)
    hits, shown, hits_shown = ({k: 0 for k in METRICS} for _ in range(3))
    by_check = {k: [] for k in STRATIFIED}  # (the cell's check, hit, enough nonzero gaps) per cell
    widths, flo, cor = {k: [] for k in METRICS}, {k: [] for k in METRICS}, {k: [] for k in METRICS}
    sides = {"identity": (1,), "other": (2,), "difference": (1, 2)}[target]
    for r in range(reps):
        cell = check if calibration == "design" else _cell_check(c[r], g[r], m, B, target, rng, check_reps)
        iv = {k: (lo, hi, True) for k, (lo, hi) in _mean_intervals(c[r], g[r], m, target, n_boot, rng).items()}
        iv.update(_strat_intervals(c[r], m, B, target, cell, critical))
        gaps = [(c[r, k] - c[r, 0]) / m for k in sides]
        for k, (lo, hi, passed) in iv.items():
            hit = bool(lo <= truth[k] <= hi)
            nz = nonzero_questions(k, *gaps)
            printed = passed and (nz is None or nz >= MIN_NONZERO)
            hits[k] += hit
            if k in by_check:
                by_check[k].append((cell[k][0], hit, nz is None or nz >= MIN_NONZERO))
            shown[k] += printed
            hits_shown[k] += hit and printed
            if printed:
                widths[k].append(hi - lo)
        if target != "difference" and r < floor_reps:
            k_x = 1 if target == "identity" else 2
            s = row_strata(c[r, 0], m, B)
            for k, v in floors(c[r, 0], m, s, rng, draws=100).items():
                flo[k].append(v)
            for k, v in corrected(c[r, 0], c[r, k_x], m, s).items():
                cor[k].append(v)
    rows = []
    for k in METRICS:
        row = {"population": name, "target": target, "metric": k, "n": n, "m": m, "B": B, "reps": reps,
               "interval": "jackknife" if k in STRATIFIED else "bootstrap",
               "coverage": hits[k] / reps, "printed_share": shown[k] / reps,
               "coverage_printed": hits_shown[k] / shown[k] if shown[k] else None,
               "width": float(np.mean(widths[k])) if widths[k] else None, "design_value": truth[k]}  # fmt: skip
        if k in STRATIFIED:
            row["coverage_if_check_at_least"] = _by_threshold(by_check[k])
            row.update(planner_check=check[k][0], flagged=bool(check[k][0] < CHECK_MIN), calibration=calibration,
                       critical=critical, design_crit=check[k][1])  # fmt: skip
        if limit:
            row.update(large_sample_value=limit[k], noise_free_value=free[k])
        if flo[k]:
            row["floor_mean"] = float(np.mean(flo[k]))
        if same:
            row["same_model_design_value"] = same[k]
        if cor[k] and free:
            row.update(corrected_mean=float(np.mean(cor[k])), corrected_bias=float(np.mean(cor[k]) - free[k]),
                       paper_bias=truth[k] - free[k])  # fmt: skip
        rows.append(row)
    return rows


THRESHOLDS = (0.90, 0.92, 0.93, 0.94, 0.95, 0.96)


def _by_threshold(cells: list[tuple[float, bool, bool]]) -> dict[str, dict[str, float | None]]:
    """Coverage and printed share had the check printed the interval from each threshold up."""
    out = {}
    for t in THRESHOLDS:
        shown = [hit for check, hit, enough in cells if enough and check >= t]
        out[f"{t:.2f}"] = {"share": len(shown) / max(len(cells), 1),
                           "coverage": sum(shown) / len(shown) if shown else None}  # fmt: skip
    return out


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.2f}"


def markdown(rows: list[dict]) -> str:
    """The docs' tables: coverage per design (means pooled, each stratified metric; "—" where the interval is
    printed in fewer than half of the cells) and the floors."""
    pops = list(dict.fromkeys(r["population"] for r in rows))
    designs = list(dict.fromkeys((r["n"], r["m"], r["B"]) for r in rows))
    at = {(r["population"], r["n"], r["m"], r["B"], r["target"], r["metric"]): r for r in rows}
    out = ["| population | n | m | B | means: lowest / highest coverage | SA-PPG: Identity / other / difference "
           "| S-Δ+ (same) | S-Δ− (same) | planner flags (SA-PPG difference) |",
           "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for p in pops:
        for n, m, B in designs:

            def get(t, k, key=(p, n, m, B)):
                return at.get((*key, t, k))

            if get("identity", "a_ppg") is None:
                continue
            shown = lambda r: r["coverage_printed"] if r["printed_share"] >= 0.5 else None  # noqa: E731
            means = [shown(get(t, k)) for t in TARGETS for k in METRICS if k not in STRATIFIED]
            means = [x for x in means if x is not None]
            strat = {k: " / ".join(_fmt(shown(get(t, k))) for t in TARGETS) for k in STRATIFIED}
            d = get("difference", "sa_ppg")
            flag = f"{'flagged' if d['flagged'] else 'printed'} ({d['planner_check']:.2f})"
            out.append(f"| {p} | {n} | {m} | {B} | {min(means):.2f} / {max(means):.2f} | {strat['sa_ppg']} "
                       f"| {strat['s_delta_plus']} | {strat['s_delta_minus']} | {flag} |")  # fmt: skip
    out += ["", "| population | n | m | B | metric | noise-free | design value | floor (estimated) "
            "| M_cl vs itself | floor-corrected | its bias | paper estimator's bias |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for p in pops:
        for n, m, B in designs:
            for k in ("a_ppg", "sa_ppg"):
                r = at.get((p, n, m, B, "identity", k))
                if r is None or "corrected_mean" not in r:
                    continue
                out.append(f"| {p} | {n} | {m} | {B} | {k} | {r['noise_free_value']:.3f} | {r['design_value']:.3f} "
                           f"| {r['floor_mean']:.3f} | {r['same_model_design_value']:.3f} | {r['corrected_mean']:.3f} "
                           f"| {r['corrected_bias']:+.3f} | {r['paper_bias']:+.3f} |")  # fmt: skip
    return "\n".join(out) + "\n"


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results-dir", nargs="*", default=[], help="folders of real cells to fit populations to")
    p.add_argument(
        "--populations", nargs="*", default=["smollm2_like", "uniform"], choices=["smollm2_like", "uniform"]
    )
    p.add_argument("--n", type=int, nargs="+", default=list(GRID_N))
    p.add_argument("--m", type=int, nargs="+", default=list(GRID_M))
    p.add_argument("--B", type=int, nargs="+", default=list(GRID_B), dest="B")
    p.add_argument("--reps", type=int, default=300, help="simulated cells per design")
    p.add_argument("--design-reps", type=int, default=3000, help="cells averaged for the design value")
    p.add_argument("--n-boot", type=int, default=300, help="bootstrap resamples per simulated cell")
    p.add_argument(
        "--floor-reps", type=int, default=40, help="cells whose floor and corrected reading are averaged"
    )
    p.add_argument(
        "--calibration", choices=["cell", "design"], default="cell",
        help="cell: each simulated cell checked and calibrated on its own fitted population, as railsweep does; "
        "design: once per design on the true population (faster; an idealised check)",
    )  # fmt: skip
    p.add_argument("--check-reps", type=int, default=400, help="simulated cells of each check (railsweep: 400)")
    p.add_argument(
        "--critical", choices=["calibrated", "t", "at_least_t"], default="calibrated",
        help="the stratified interval's critical value: calibrated (what railsweep prints), the plain t quantile, "
        "or the larger of the two",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="one design (100, 10, 10), 60 cells")
    p.add_argument("--out", help="write the JSON here (default: stdout)")
    p.add_argument("--markdown", help="write the docs' tables here")
    p.add_argument("--from-json", help="only write --markdown from a JSON this script wrote")
    return p


def check_args(args: argparse.Namespace) -> None:
    for key in ("n", "m", "B"):
        bad = [v for v in getattr(args, key) if v < 1]
        if bad:
            raise RailsweepError(f"--{key} must hold positive integers, got {bad[0]}")
    for key in ("reps", "design_reps", "n_boot", "floor_reps", "check_reps"):
        if getattr(args, key) < 2:
            raise RailsweepError(f"--{key.replace('_', '-')} must be at least 2, got {getattr(args, key)}")
    for d in args.results_dir:
        if not Path(d).is_dir():
            raise RailsweepError(f"--results-dir {d!r} is not a directory")
    if args.out and Path(args.out).is_dir():
        raise RailsweepError(f"--out {args.out!r} is a directory")


def real_populations(dirs) -> dict[str, Population]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sappg_coverage  # the same setting finder as the SA-PPG coverage bench

    out = {}
    for s in sappg_coverage.find_settings(dirs, "railcap", "identity"):
        frames = [
            read_cell(p)[1][["question_index", "c", "m", "r01"]] for p in (s.clean, s.reference, s.cell)
        ]
        out[s.name] = from_cells(*frames)
    return out


def main(argv=None) -> int:
    args = make_parser().parse_args(argv)
    try:
        check_args(args)
    except RailsweepError as e:
        print(f"interval_coverage: error: {e}", file=sys.stderr)
        return 2
    if args.from_json:
        Path(args.markdown or "/dev/stdout").write_text(
            markdown(json.loads(Path(args.from_json).read_text())["rows"])
        )
        return 0
    rng = np.random.default_rng(args.seed)
    if args.quick:
        args.n, args.m, args.B, args.reps = [100], [10], [10], 60
    pops = {k: synthetic(k, rng) for k in args.populations}
    pops.update(real_populations(args.results_dir) if args.results_dir else {})
    t0, rows = time.time(), []
    for (name, pop), n, m, B in itertools.product(pops.items(), args.n, args.m, args.B):
        for target in TARGETS:
            rows += study(pop, name, n, m, B, target, rng, args.reps, args.design_reps, args.n_boot, args.floor_reps,
                          args.calibration, args.check_reps, args.critical)  # fmt: skip
        print(
            f"[interval_coverage] {name} n={n} m={m} B={B} done ({time.time() - t0:.0f} s)", file=sys.stderr
        )
    text = json.dumps({"rows": rows, "seconds": time.time() - t0, "seed": args.seed}, indent=1)
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows), encoding="utf-8")
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
