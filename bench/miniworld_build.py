"""How long the miniature world takes to build, and to evaluate as the demo does.

Steps:
  1. build the world of ``--preset`` into ``--cache-dir`` (a fresh temporary directory by
     default, so the build is really timed; ``--reuse`` times the cached world of
     ``--cache-dir``, default ``$RAILSWEEP_CACHE`` or ``~/.cache/railsweep``, instead);
  2. time the demo's evaluation on the cached world: per family, the clean reference
     (Identity on M_cl) and, per domain, Identity, All-Zero and RailCap (n=4, cap) on M_co,
     with the mini sweep's readout (m=20, T=0.7, max 96 new tokens, the first ``limit`` questions);
  3. print JSON: build seconds (total and per family), evaluation seconds (total and per
     cell), samples decoded, torch threads, machine.

Targets: build <= 20 min for mini (3 families, both domains) on a 2-core machine,
evaluation <= 10 min. Run: ``python bench/miniworld_build.py [--preset mini] [--threads 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini")
    p.add_argument("--cache-dir", default=None, help="default: a fresh temporary directory")
    p.add_argument("--reuse", action="store_true", help="allow a cached world (time only what is missing)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--m", type=int, default=20)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--limit", type=int, default=None, help="evaluate only the first N questions")
    p.add_argument("--skip-eval", action="store_true")
    return p


def evaluate_demo(world, m: int, max_new_tokens: int, limit: int | None) -> dict:
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.strategies import build_strategy
    from railsweep.strategies.base import DecodeSettings, EvalContext
    from railsweep.tasks import GSM8KTask

    settings = DecodeSettings(m=m, temperature=0.7, max_new_tokens=max_new_tokens, seed=0, batch_size=64)
    cells, samples = {}, 0
    task = GSM8KTask.from_dir(world.data_dir, split="test", leak_split=world.leak_split_path, limit=limit)
    questions = list(task.questions())
    for family in world.families:
        fam = world.family(family)
        engine = TransformersEngine(
            fam.base_dir, adapters={k: str(v) for k, v in fam.adapters.items()}, device="cpu"
        )
        plan = [("clean", "identity", {})]
        for domain in world.config.contamination.domains:
            plan += [
                (f"co_{domain}", name, params)
                for name, params in (("identity", {}), ("all_zero", {}), ("railcap", {"n": 4, "mode": "cap"}))
            ]
        for adapter, name, params in plan:
            t = time.time()
            ctx = EvalContext(
                engine=engine, task=task, adapter=adapter, settings=settings, clean_adapter="clean"
            )
            outs = build_strategy(name, params).run(ctx, questions)
            samples += sum(len(o.samples) for o in outs)
            cells[f"{family}/{adapter}/{name}"] = round(time.time() - t, 2)
        engine.close()
    return {"cells_s": cells, "samples": samples, "questions": len(questions)}


def main(argv: list[str] | None = None) -> int:
    import torch

    from railsweep.miniworld import build_world

    args = make_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.cache_dir:
        cache = args.cache_dir
    elif args.reuse:
        from railsweep.miniworld.world import default_cache_dir

        cache = str(default_cache_dir())
    else:
        cache = tempfile.mkdtemp(prefix="railsweep-bench-")
    t0 = time.time()
    world = build_world(args.preset, cache_dir=cache, force=not args.reuse)
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
        out["eval"] = evaluate_demo(world, args.m, args.max_new_tokens, args.limit)
        out["eval_s"] = round(time.time() - t1, 1)
        out["eval_target_s"] = 600
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
