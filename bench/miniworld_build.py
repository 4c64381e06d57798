"""How long the miniature world takes to build, and to evaluate as the demo does.

Steps:
  1. build the world of ``--preset`` into ``--cache-dir`` (a fresh temporary directory by
     default, so the build is really timed; ``--reuse`` times the cached world of
     ``--cache-dir``, default ``$RAILSWEEP_CACHE`` or ``~/.cache/railsweep``, instead);
  2. time the demo's evaluation on the cached world: per family, the clean reference
     (Identity on M_cl) and, per domain, Identity, All-Zero and RailCap (n=4, cap) on M_co,
     with the mini sweep's readout (m=20, T=0.7, max 96 new tokens, the first ``limit`` questions),
     ``--workers`` cells at a time (default one per CPU), each in a process of ``--eval-threads``
     torch threads (default 1), as the demo's Ray sweep runs one cell per CPU on one thread;
  3. print JSON: build seconds (total and per family), evaluation seconds (total and per
     cell), samples decoded, workers and threads, machine.

Targets: build <= 20 min for mini (3 families, both domains) on a 2-core machine,
evaluation <= 10 min. Run: ``python bench/miniworld_build.py [--preset mini] [--threads 2]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def count(text: str) -> int:
    """An integer >= 1 (threads, workers, samples, tokens, questions)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini")
    p.add_argument("--cache-dir", default=None, help="default: a fresh temporary directory")
    p.add_argument("--reuse", action="store_true", help="allow a cached world (time only what is missing)")
    p.add_argument("--threads", type=count, default=2, help="torch threads of the build")
    p.add_argument(
        "--workers",
        type=count,
        default=os.cpu_count() or 1,
        help="evaluation cells run at once, one process each (default: one per CPU, as the demo)",
    )
    p.add_argument("--eval-threads", type=count, default=1, help="torch threads per evaluation worker")
    p.add_argument("--m", type=count, default=20)
    p.add_argument("--max-new-tokens", type=count, default=96)
    p.add_argument("--limit", type=count, default=None, help="evaluate only the first N questions")
    p.add_argument("--skip-eval", action="store_true")
    return p


_ENGINES: dict = {}  # this worker's engines, one per family, loaded on first use


def _task(world, limit: int | None):
    from railsweep.tasks import GSM8KTask

    return GSM8KTask.from_dir(world.data_dir, split="test", leak_split=world.leak_split_path, limit=limit)


def demo_cell(
    root: str,
    family: str,
    adapter: str,
    name: str,
    params: dict,
    m: int,
    max_new_tokens: int,
    limit: int | None,
    threads: int,
) -> tuple[str, float, int]:
    """One cell of the demo's evaluation in this process: (cell name, seconds, samples decoded)."""
    import torch

    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.miniworld.world import load_world
    from railsweep.strategies import build_strategy
    from railsweep.strategies.base import DecodeSettings, EvalContext

    torch.set_num_threads(threads)
    world = load_world(root)
    if family not in _ENGINES:
        fam = world.family(family)
        _ENGINES[family] = TransformersEngine(
            fam.base_dir, adapters={k: str(v) for k, v in fam.adapters.items()}, device="cpu"
        )
    settings = DecodeSettings(m=m, temperature=0.7, max_new_tokens=max_new_tokens, seed=0, batch_size=64)
    task = _task(world, limit)
    t = time.time()
    ctx = EvalContext(
        engine=_ENGINES[family], task=task, adapter=adapter, settings=settings, clean_adapter="clean"
    )
    outs = build_strategy(name, params).run(ctx, list(task.questions()))
    return f"{family}/{adapter}/{name}", round(time.time() - t, 2), sum(len(o.samples) for o in outs)


def evaluate_demo(world, m: int, max_new_tokens: int, limit: int | None, workers: int, threads: int) -> dict:
    """The demo's cells (per family: Identity on M_cl; per domain: Identity, All-Zero and RailCap n=4 cap on
    M_co), ``workers`` at a time, each in a spawned process of ``threads`` torch threads, as the demo's Ray sweep
    runs one cell per CPU on one thread."""
    plan = []
    for family in world.families:
        plan.append((family, "clean", "identity", {}))
        for domain in world.config.contamination.domains:
            plan += [
                (family, f"co_{domain}", name, params)
                for name, params in (("identity", {}), ("all_zero", {}), ("railcap", {"n": 4, "mode": "cap"}))
            ]
    calls = [(str(world.root), *cell, m, max_new_tokens, limit, threads) for cell in plan]
    if workers == 1:
        done = [demo_cell(*c) for c in calls]
        for engine in _ENGINES.values():
            engine.close()
        _ENGINES.clear()
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            done = list(pool.map(demo_cell, *zip(*calls)))
    return {
        "cells_s": {name: s for name, s, _ in done},
        "samples": sum(n for _, _, n in done),
        "questions": len(list(_task(world, limit).questions())),
        "workers": workers,
        "threads_per_worker": threads,
    }


def main(argv: list[str] | None = None) -> int:
    import torch

    from railsweep.errors import ConfigError
    from railsweep.miniworld import build_world
    from railsweep.miniworld.presets import preset_config

    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        preset_config(args.preset)
    except ConfigError as e:
        parser.error(str(e))
    torch.set_num_threads(args.threads)
    temporary = not args.cache_dir and not args.reuse  # a fresh directory of ours: removed if the build fails
    if args.cache_dir:
        cache = args.cache_dir
    elif args.reuse:
        from railsweep.miniworld.world import default_cache_dir

        cache = str(default_cache_dir())
    else:
        cache = tempfile.mkdtemp(prefix="railsweep-bench-")
    t0 = time.time()
    try:
        world = build_world(args.preset, cache_dir=cache, force=not args.reuse)
    except BaseException:
        if temporary:
            shutil.rmtree(cache, ignore_errors=True)
        raise
    build_s = time.time() - t0
    out = {
        "preset": args.preset,
        "families": world.families,
        "build_s": round(build_s, 1),
        "build_per_family_s": world.manifest["timings_s"],
        "build_target_s": 1200,
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "machine": platform.platform(),
        "world": str(world.root),
    }
    if not args.skip_eval:
        t1 = time.time()
        out["eval"] = evaluate_demo(
            world, args.m, args.max_new_tokens, args.limit, args.workers, args.eval_threads
        )
        out["eval_s"] = round(time.time() - t1, 1)
        out["eval_target_s"] = 600
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
