"""``railsweep plan``: how many questions and samples a comparison of two strategies needs
(:mod:`railsweep.analysis.planning`; the method is in :mod:`railsweep.metrics.power`)."""

from __future__ import annotations

import argparse
import itertools
from typing import Any

from railsweep import argtypes as at
from railsweep.metrics.power import questions_needed

GROUP = "run a sweep"
EXAMPLES = (
    "railsweep plan                                # reference pilot, the paper's design too",
    'railsweep plan --pilot runs/mlflow/mlartifacts --n 200 --m 20 --B 20',
    'railsweep plan --pilot cells/ --mde 0.05      # questions needed for a 0.05 difference',
)
DEFAULT_N = (100, 200, 1319)
DEFAULT_M = (10, 20, 50)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "plan",
        help="the smallest strategy difference a design detects, and the design a difference needs",
        description=(
            "For each design (n questions, m samples, B strata): the smallest SA-PPG, A-PPG and G-AP\n"
            "difference between two strategies detectable at the given power and level, and whether\n"
            "SA-PPG's interval would be printed at that size; with --mde X, the questions each metric\n"
            "needs at each m. The pilot is a folder of cells of an earlier run (--pilot) or, without\n"
            "one, a reference M_cl with p ~ Beta(2.5, 0.9) (noise only: a lower bound).\n"
            "Method: docs/metrics.md, 'The planner'."
        ),
    )
    p.add_argument("--pilot", type=at.existing_dir,
                   help="folder of cells of an earlier run (searched recursively)")  # fmt: skip
    p.add_argument("--n", type=at.positive, nargs="+", default=list(DEFAULT_N), help="questions per design")
    p.add_argument("--m", type=at.positive, nargs="+", default=list(DEFAULT_M), help="samples per question")
    p.add_argument("--B", type=at.strata, default=50, dest="B", help="strata for SA-PPG")
    p.add_argument("--mde", type=at.positive_real,
                   help="a difference to detect: print the questions it needs")  # fmt: skip
    p.add_argument("--alpha", type=at.probability, default=0.05, help="test level (two-sided)")
    p.add_argument("--power", type=at.probability, default=0.8, help="power")
    p.add_argument("--seed", type=at.seed, default=0, help="simulation seed")
    return p


def run(args: argparse.Namespace) -> int:
    import numpy as np

    # pandas, pyarrow: loaded when the command runs, so --help and refusals of bad options stay fast
    from railsweep.analysis.planning import PAPER_DESIGN, load_pilot, plan_text, reference_pilot

    rng = np.random.default_rng(args.seed)
    pop, source = load_pilot(args.pilot, rng) if args.pilot else reference_pilot(rng)
    designs = [(n, m, args.B) for n, m in itertools.product(args.n, args.m)]
    if PAPER_DESIGN not in designs:
        designs.append(PAPER_DESIGN)
    print(plan_text(pop, source, designs, rng, args.alpha, args.power))
    if args.mde is not None:
        print(f"\nquestions needed for a difference of {args.mde:g} (B = {args.B}):")
        print(f"{'m':>4} {'SA-PPG':>8} {'A-PPG':>8} {'G-AP':>8}")
        for m in args.m:
            need = questions_needed(pop, args.mde, m, args.B, rng, alpha=args.alpha, power=args.power)
            print(f"{m:>4} " + " ".join(f"{need[k]:>8,}" for k in ("sa_ppg", "a_ppg", "g_ap")))
    return 0
