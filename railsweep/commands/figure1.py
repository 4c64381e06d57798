"""``railsweep figure1``: the paper's Figure 1 for a clean/contaminated model pair.

Writes ``OUT/figure1.parquet`` (one row per question and model), ``OUT/figure1.json`` (the summary: collapse
onto the greedy response, the runner-up share where the models part ways, M_cl's path diversity and off-rail
robustness) and ``OUT/figure1.png``; with ``--tracking-uri`` the three are also logged to one MLflow run.
Either a base model with its adapters (``--model``, ``--adapter``, ``--task-dir``, ``--leak-split``) or a
family of the miniature world (``--world mini --family neox``). ``--task FILE|NAME`` evaluates a task file
instead of GSM8K (its ``{task_dir}``: ``--task-dir`` or the world's data).
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
