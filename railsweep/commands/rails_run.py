"""What ``railsweep rails`` does once it runs. Loads torch and transformers (the command imports it when it runs)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from railsweep import argtypes as at
from railsweep.atomic import write_atomic
from railsweep.commands.figure1_run import inputs
from railsweep.commands.task_args import load_named_task
from railsweep.diagnostics.rails import RailsSettings, rails
from railsweep.engines import transformers_engine
from railsweep.limits import check_decode_memory


def run_rails(args: argparse.Namespace) -> int:
    """Settings and inputs checked, the diagnostics run writing each table when its step is done, then rails.json."""
    settings = RailsSettings(m=args.m, temperature=args.temperature, max_new_tokens=args.max_new_tokens,
                             seed=args.seed, n=args.n, ks=args.ks, runs=args.runs)  # fmt: skip
    check_decode_memory(args.m, args.max_new_tokens)
    out = Path(args.out)
    at.check_writable_dir(out, "--out")
    model, adapters, task_dir, leak_split = inputs(args)
    task = load_named_task(args, task_dir, leak_split=leak_split, limit=args.limit)
    engine = transformers_engine.TransformersEngine(model, adapters=adapters, device=args.device, dtype="float32")

    def sink(name: str, rows: list[dict]) -> None:
        out.mkdir(parents=True, exist_ok=True)
        frame = pd.DataFrame(rows)
        write_atomic(out / f"rails_{name}.parquet", lambda p: frame.to_parquet(p, index=False))

    try:
        res = rails(engine, task, list(task.questions()), args.clean, args.co, settings, log=_log, sink=sink)
    finally:
        engine.close()
    if not res.runs:  # no question solved once: no forced decode, and the table is still written
        sink("runs", res.runs)
    text = json.dumps(res.summary, indent=1, default=float) + "\n"
    write_atomic(out / "rails.json", lambda p: p.write_text(text))
    print(text, end="")
    return 0


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
