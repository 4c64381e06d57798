"""Shortcut's patched decode on the shared-prefix cache against the padded path, side by side in one run.

    python bench/patched_paths.py --preset smollm2_heavy --families smollm2 --questions 4 --m 10 \
        --max-new-tokens 160 [--repeats 2] [--threads 1]

Steps:
  1. per family of the miniature world (``--preset``, built or reused under ``--cache-dir``), load one
     transformers engine with ``--threads`` torch threads (not timed);
  2. decode Shortcut's patched readout (``control: random``, as ``bench/throughput.py --patched``) on the
     contaminated adapter over the first ``--questions`` test questions, ``--m`` samples each, on the padded
     path, then on the cascade path, ``--repeats`` times in turn (so a load change touches both alike);
  3. print one JSON line per family: each path's tokens/s (its best repeat), the speed-up (cascade over
     padded) and the share of samples whose tokens are the same on both paths (float sums differ in order,
     so a sampled token may differ where two candidates are near-tied).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from throughput import _hardware, _load, _targets  # noqa: E402

from railsweep.engines.config import EngineConfig  # noqa: E402
from railsweep.engines.factory import build_engine  # noqa: E402
from railsweep.strategies import build_strategy  # noqa: E402
from railsweep.strategies.base import DecodeSettings, EvalContext  # noqa: E402
from railsweep.tasks.kinds.gsm8k import GSM8KTask  # noqa: E402

PATHS = ("padded", "cascade")


def _tokens(engine, task: GSM8KTask, adapter: str, m: int, max_new_tokens: int) -> list[list[int]]:
    settings = DecodeSettings(m=m, temperature=0.7, max_new_tokens=max_new_tokens, seed=0)
    ctx = EvalContext(engine=engine, task=task, adapter=adapter, settings=settings)
    outcomes = build_strategy("shortcut", {"control": "random"}).run(ctx, task.questions())
    return [s.token_ids for o in outcomes for s in o.samples]


def compare(engine, task: GSM8KTask, adapter: str, m: int, max_new_tokens: int, repeats: int) -> dict:
    """Each path's best tokens/s over ``repeats`` alternating runs, the speed-up and the share of equal samples."""
    best: dict[str, dict] = {}
    samples: dict[str, list[list[int]]] = {}
    for _ in range(repeats):
        for path in PATHS:
            engine.attention = path
            t0 = time.perf_counter()
            samples[path] = _tokens(engine, task, adapter, m, max_new_tokens)
            wall = time.perf_counter() - t0
            tokens = sum(map(len, samples[path]))
            if path not in best or tokens / wall > best[path]["tokens_per_s"]:
                best[path] = {"tokens": tokens, "samples": len(samples[path]), "wall_s": round(wall, 2),
                              "tokens_per_s": round(tokens / wall, 1), "load_after": _load()}  # fmt: skip
    same = sum(a == b for a, b in zip(samples["padded"], samples["cascade"])) / len(samples["padded"])
    speedup = best["cascade"]["tokens_per_s"] / best["padded"]["tokens_per_s"]
    return {**best, "speedup": round(speedup, 2), "same_samples_share": round(same, 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", help="miniature world whose families are measured")
    p.add_argument("--families", help="comma-separated families of the world (default: all)")
    p.add_argument("--cache-dir", help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)")
    p.add_argument("--measure-adapter", default="co_gsm8k", help="adapter decoded (default co_gsm8k)")
    p.add_argument("--questions", type=int, default=4)
    p.add_argument("--m", type=int, default=10)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads of the engine")
    args = p.parse_args(argv)
    for name in ("questions", "m", "max_new_tokens", "repeats", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    import torch

    torch.set_num_threads(args.threads)
    args.model = None
    for key, base, adapters, task_dir, leak in _targets(args):
        engine = build_engine(EngineConfig(backend="transformers", model=base, adapters=adapters, device="cpu"))
        task = GSM8KTask.from_dir(task_dir, limit=args.questions, leak_split=leak)
        got = compare(engine, task, args.measure_adapter, args.m, args.max_new_tokens, args.repeats)
        print(json.dumps({"model": key, "questions": args.questions, "m": args.m, "threads": args.threads,
                          "max_new_tokens": args.max_new_tokens, **got, "hardware": _hardware("cpu"),
                          "command": "python bench/patched_paths.py " + " ".join(argv or sys.argv[1:])}),
              flush=True)  # fmt: skip
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
