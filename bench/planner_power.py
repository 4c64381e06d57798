"""Does the planner's design deliver its power? Simulated power at the questions ``railsweep plan --mde`` asks for.

Steps, per metric (SA-PPG, A-PPG, G-AP) and per m:
  1. the population: ``smollm2_like`` of bench/interval_coverage.py, strategy a = Identity (M_co as it is),
     strategy b = Identity moved a share ``--shift`` of the way back to M_cl (p_b = p_a + shift·(p_cl − p_a));
  2. δ: the design value of metric(b) − metric(a) at (n0, m, B) (Monte Carlo);
  3. the planner's answer: the questions n* that detect |δ| at 80 % power and α = 0.05
     (:func:`railsweep.metrics.power.questions_needed`, from the population itself as the pilot);
  4. ``--reps`` cells simulated at (n*, m, B), each with the interval railsweep prints for the paired
     difference (bootstrap over all questions for A-PPG and G-AP, jackknife t for SA-PPG); the simulated
     power is the share whose interval excludes 0. The planner holds when it lies within ±20 % of 0.8.

JSON on stdout: one row per (metric, m). Run: ``python bench/planner_power.py`` (about 3 minutes on one core).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from railsweep.metrics.power import PLANNED, questions_needed
from railsweep.metrics.simulate import Population, draw_counts, metric_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interval_coverage import _check, _mean_intervals, _strat_intervals, synthetic  # noqa: E402

TOLERANCE = 0.2  # relative: simulated power within 0.8 ± 0.16


def shifted(rng: np.random.Generator, shift: float) -> Population:
    base = synthetic("smollm2_like", rng)
    p_cl, p_a = base.p[0], base.p[1]
    p = np.stack([p_cl, p_a, p_a + shift * (p_cl - p_a)])
    return Population(("clean", "a", "b"), p, (p > 0.5).astype(float))


def delta(pop: Population, n: int, m: int, B: int, rng, reps: int = 3000) -> dict[str, float]:
    c, g = draw_counts(pop, n, m, reps, rng)
    a = metric_rows(c[:, 0], c[:, 1], g[:, 0], g[:, 1], m, B)
    b = metric_rows(c[:, 0], c[:, 2], g[:, 0], g[:, 2], m, B)
    return {k: float((b[k] - a[k]).mean()) for k in PLANNED}


def simulated_power(pop: Population, metric: str, n: int, m: int, B: int, rng, reps: int) -> float:
    # SA-PPG's calibrated critical value, once per design, on a stream of its own (the others' draws stay put)
    check = _check(pop, n, m, B, "difference", np.random.default_rng(n), 400) if metric == "sa_ppg" else None
    c, g = draw_counts(pop, n, m, reps, rng)
    hits = 0
    for r in range(reps):
        lo, hi = (_strat_intervals(c[r], m, B, "difference", check) if metric == "sa_ppg"
                  else _mean_intervals(c[r], g[r], m, "difference", 300, rng))[metric][:2]  # fmt: skip
        hits += not (lo <= 0.0 <= hi)
    return hits / reps


def run(args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed)
    pop = shifted(rng, args.shift)
    rows = []
    for m in args.m:
        d = delta(pop, args.n0, m, args.B, rng)
        for metric in PLANNED:
            need = questions_needed(pop, abs(d[metric]), m, args.B, rng, n0=args.n0)[metric]
            need = min(need, args.max_n)
            power = simulated_power(pop, metric, need, m, args.B, rng, args.reps)
            rows.append({"metric": metric, "m": m, "B": args.B, "delta": d[metric], "questions_needed": need,
                         "planned_power": 0.8, "simulated_power": power,
                         "holds": bool(abs(power - 0.8) <= TOLERANCE * 0.8)})  # fmt: skip
    return {"rows": rows, "shift": args.shift, "reps": args.reps, "seed": args.seed}


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, nargs="+", default=[10, 20])
    p.add_argument("--B", type=int, default=10, dest="B")
    p.add_argument("--shift", type=float, default=0.8, help="how far strategy b moves back to M_cl (0-1)")
    p.add_argument("--n0", type=int, default=200, help="questions of the pilot run the planner scales from")
    p.add_argument("--max-n", type=int, default=3000, help="cap on the simulated design's questions")
    p.add_argument("--reps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None) -> int:
    args = make_parser().parse_args(argv)
    bad = [f"--{k} {getattr(args, k)}" for k in ("B", "n0", "max_n", "reps") if getattr(args, k) < 2]
    bad += [f"--m {v}" for v in args.m if v < 1] + (
        [f"--shift {args.shift}"] if not 0 < args.shift <= 1 else []
    )
    if bad:
        print(f"planner_power: error: bad value {bad[0]}", file=sys.stderr)
        return 2
    t0 = time.time()
    out = run(args)
    out["seconds"] = time.time() - t0
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
