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
  3. print JSON: build seconds (total, per family and per phase: pretraining, the clean adapter, each domain's
     contaminated adapter, the family's ``nice``), the cores the build kept busy (its process tree's CPU time,
     sampled every second: mean, idle core-seconds, a per-minute timeline, the machine's own busy cores beside
     it), the weights digest and whether it is the documented build's (then the documented calibration holds
     for it: docs/miniworld.md), evaluation seconds (total and per cell), samples decoded, workers and
     threads, machine.

Targets: build <= 25 min for mini (3 families, both domains) on a quiet 2-core machine,
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
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import psutil

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


class CoreSampler(threading.Thread):
    """Cores busy in this process's tree (the build's family processes) and on the whole machine, every
    ``interval`` seconds, from the growth of each process's CPU time."""

    def __init__(self, interval: float = 1.0):
        super().__init__(daemon=True)
        self.interval = interval
        self.rows: list[tuple[float, float, float]] = []  # (seconds since start, build cores, machine cores)
        self._last: dict[int, float] = {}
        self._done = threading.Event()

    def _tree_cpu(self) -> float:
        grown = 0.0
        seen: dict[int, float] = {}
        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            try:
                t = proc.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            seen[proc.pid] = t.user + t.system
            grown += seen[proc.pid] - self._last.get(proc.pid, 0.0)
        self._last = seen
        return grown

    def run(self) -> None:
        t0 = prev = time.perf_counter()
        self._tree_cpu()
        psutil.cpu_percent()
        while not self._done.wait(self.interval):
            now = time.perf_counter()
            dt = max(now - prev, 1e-9)
            machine = psutil.cpu_percent() / 100 * (psutil.cpu_count() or 1)
            self.rows.append((round(now - t0, 1), round(self._tree_cpu() / dt, 3), round(machine, 3)))
            prev = now

    def summary(self, cores: int) -> dict:
        """Mean cores busy (build, machine), the build's idle core-seconds and a per-minute timeline."""
        self._done.set()
        self.join()
        if not self.rows:
            return {"cores": cores, "samples": 0}
        build = [r[1] for r in self.rows]
        minutes: dict[int, list] = {}
        for t, b, m in self.rows:
            minutes.setdefault(int(t // 60), []).append((b, m))
        return {
            "cores": cores,
            "samples": len(self.rows),
            "mean_build_cores": round(sum(build) / len(build), 3),
            "mean_machine_cores": round(sum(r[2] for r in self.rows) / len(self.rows), 3),
            "utilisation": round(sum(build) / len(build) / cores, 3),
            "idle_core_s": round(sum(max(cores - b, 0.0) for b in build) * self.interval, 1),
            "per_minute_build_cores": [round(sum(b for b, _ in v) / len(v), 2) for _, v in sorted(minutes.items())],
            "per_minute_machine_cores": [round(sum(m for _, m in v) / len(v), 2) for _, v in sorted(minutes.items())],
        }


def phases(manifest: dict) -> dict:
    """Per family: seconds of pretraining and of each adapter, the contamination step's wall, its ``nice``."""
    out = {}
    for family, t in manifest.get("training", {}).items():
        row = {"total_s": t.get("seconds"), "nice": t.get("nice"), "threads": t.get("threads")}
        row["pretrain_s"] = (t.get("pretrain") or {}).get("seconds")
        row.update({f"{name}_s": a.get("seconds") for name, a in (t.get("adapters") or {}).items()})
        row["adapters_wall_s"] = t.get("contamination_seconds")
        out[family] = row
    return out


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
    from railsweep.miniworld.cache import load_world
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
    from railsweep.miniworld.scheduling import cores as build_cores
    from railsweep.miniworld.weights import weights_verdict

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
        from railsweep.miniworld.cache import default_cache_dir

        cache = str(default_cache_dir())
    else:
        cache = tempfile.mkdtemp(prefix="railsweep-bench-")
    sampler = CoreSampler()
    sampler.start()
    t0 = time.time()
    try:
        world = build_world(args.preset, cache_dir=cache, force=not args.reuse)
    except BaseException:
        if temporary:
            shutil.rmtree(cache, ignore_errors=True)
        raise
    build_s = time.time() - t0
    cores = build_cores()
    documented, verdict = weights_verdict(args.preset, world.manifest["digest"], world.manifest["weights_digest"])
    out = {
        "preset": args.preset,
        "families": world.families,
        "build_s": round(build_s, 1),
        "build_per_family_s": world.manifest["timings_s"],
        "build_phases": phases(world.manifest),
        "build_cores": sampler.summary(cores),
        "build_target_s": 1500,
        "weights_digest": world.manifest["weights_digest"],
        "weights_documented": documented,
        "weights_verdict": verdict,
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
