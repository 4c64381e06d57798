"""``railsweep rails``: where RailCap acts on a model pair (:mod:`railsweep.diagnostics.rails`).

Inputs as for ``railsweep figure1``; transformers engine only (the forced departures and the replayed caps need
the model's logits). Each table is written as soon as its step is done and ``rails.json`` last: a run stopped
early leaves the finished steps' rows.
"""

from __future__ import annotations

import argparse
from typing import Any

from railsweep import argtypes as at
from railsweep.commands.model_pair import add_input_arguments

GROUP = "look inside"
EXAMPLES = ('railsweep rails --world mini --family llama --out rails/llama',
            'railsweep rails --world smoke --n 4 --ks 1,2,4 --limit 10 --out rails/smoke')  # fmt: skip


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "rails",
        help="where RailCap acts: recovery after forced departures, exposure, RailCap on M_cl, caps",
        description="How much genuine reasoning does RailCap touch on this model pair, and what does it cost?",
    )
    add_input_arguments(p)
    p.add_argument("--m", type=at.samples, default=10, help="samples per question (Identity, RailCap)")
    p.add_argument("--n", type=at.positive, default=4, help="RailCap's n-gram length (exposure uses the same n)")
    p.add_argument("--ks", type=_ks, default=(1, 2, 4), help="forced departures per decode, comma-separated")
    p.add_argument("--runs", type=at.positive, default=10, help="forced decodes per question and k")
    p.add_argument("--temperature", type=at.temperature, default=0.7, help="sampling temperature (0 = greedy)")
    p.add_argument("--max-new-tokens", type=at.new_tokens, default=96, help="tokens per response at most")
    p.add_argument("--limit", type=at.limit, default=None, help="only the first N questions")
    p.add_argument("--seed", type=at.seed, default=0, help="sampling seed")
    p.add_argument("--device", type=at.device, default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--out", type=at.writable_dir, required=True, metavar="DIR", help="output directory: rails.json and the per-question, per-run and per-sample Parquet tables")
    return p


def _ks(text: str) -> tuple[int, ...]:
    """``--ks``: comma-separated departure counts, each >= 1 (argparse names the option and the value)."""
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        ks = ()
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers >= 1, got {text!r}")
    return ks


def run(args: argparse.Namespace) -> int:
    # torch: loaded when the command runs, so `railsweep --help` and refusals of bad input stay fast
    from railsweep.commands.rails_run import run_rails

    return run_rails(args)
