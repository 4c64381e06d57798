"""``railsweep figure1``: the paper's Figure 1 for a clean/contaminated model pair, as Parquet, JSON and PNG
(and one MLflow run with ``--tracking-uri``); the pair is a base model with adapters or a miniature-world family.
"""

from __future__ import annotations

import argparse
from typing import Any

from railsweep import argtypes as at
from railsweep.commands.model_pair import add_input_arguments

GROUP = "look inside"
EXAMPLES = ('railsweep figure1 --world mini --family llama --out figures/fig1',
            'railsweep figure1 --world smollm2 --m 20 --limit 100 --out figures/fig1_smollm2')  # fmt: skip


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "figure1",
        help="the paper's Figure 1 (collapse, runner-up share, path diversity, off-rail robustness)",
        description="Does a contaminated model behave as the paper's Figure 1 says, where RailCap acts?",
    )
    add_input_arguments(p)
    p.add_argument("--m", type=at.samples, default=20, help="samples per question")
    p.add_argument("--temperature", type=at.temperature, default=0.7, help="sampling temperature (0 = greedy)")
    p.add_argument("--max-new-tokens", type=at.new_tokens, default=96, help="tokens per response at most")
    p.add_argument("--departures", type=at.positive, default=20,
                   help="forced departures per reliably solved question")  # fmt: skip
    p.add_argument("--limit", type=at.limit, default=None, help="only the first N questions")
    p.add_argument("--seed", type=at.seed, default=0, help="sampling seed")
    p.add_argument("--device", type=at.device, default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--tracking-uri", type=at.text, default=None,
                   help="also log the figure to this MLflow server")  # fmt: skip
    p.add_argument("--out", type=at.writable_dir, required=True, metavar="DIR", help="output directory: figure1.parquet, figure1.json, figure1.png")
    return p


def run(args: argparse.Namespace) -> int:
    # torch: loaded when the command runs, so `railsweep --help` and refusals of bad input stay fast
    from railsweep.commands.figure1_run import run_figure1

    return run_figure1(args)
