"""A sweep's CPU utilisation over time: how many cores its engines, trials and services keep busy, second by second.

    python bench/sweep_utilisation.py [--preset smoke] [--table all] [--num-cpus N] [--interval 1.0] [--out FILE]

Steps:
  1. resolve the preset (building or reusing its miniature world) and start a private MLflow server (free port,
     temporary directory) and a fresh local Ray instance with ``--num-cpus`` CPUs (default: the machine's);
  2. run the sweep through :func:`railsweep.sweep.run.driver.run_sweep` (as ``sweeps/tables.py`` does) while a
     sampler thread reads, every ``--interval`` seconds, the CPU time of every process this one started (Ray's
     workers, raylet and GCS, the MLflow server) from /proc (psutil) and turns its growth into cores busy, by role:
     ``engines`` (engine actors), ``trials`` (Tune's trial workers), ``ray`` (raylet, GCS, idle workers, the
     progress board), ``mlflow`` and ``driver`` (this process); ``machine`` is the whole machine's busy cores,
     other users included;
  3. print JSON: the wall time, the driver's phase timings, each engine's busy seconds, cells and samples, the
     time series (``samples``: one row per interval) and its summary: mean cores busy per role over the trials
     phase and the whole sweep (``mean_sweep``: all roles together) and ``idle_core_s``: the core-seconds of
     ``--num-cpus`` the sweep's processes left unused (other users of the machine may have taken them: compare
     ``mean_machine``).

Runs against the code of the ``railsweep`` it imports (``PYTHONPATH``), and hands that path to Ray's workers, so a
before/after comparison runs the same script over two checkouts. ``smoke`` takes a couple of minutes on 2 cores;
``mini_six`` (what a one-family sweep with one-off steps costs) about half an hour there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import railsweep  # noqa: E402
from railsweep.sweep.spec.resolve import resolve_spec  # noqa: E402
from railsweep.sweep.spec.sweep_spec import PRESETS, load_spec  # noqa: E402

ROLES = ("engines", "trials", "ray", "mlflow", "driver")


def role_of(proc: psutil.Process, me: int) -> str:
    """The sweep role of one process, from the title Ray gives its workers (``ray::EngineServer...``)."""
    if proc.pid == me:
        return "driver"
    try:
        title = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "ray"
    if "EngineServer" in title:
        return "engines"
    if "ImplicitFunc" in title or "run_cell_trial" in title:
        return "trials"
    if "mlflow" in title:
        return "mlflow"
    return "ray"


class Sampler(threading.Thread):
    """Cores busy per role, from the growth of every descendant's CPU time between two reads."""

    def __init__(self, interval: float):
        super().__init__(daemon=True)
        self.interval = interval
        self.me = os.getpid()
        self.rows: list[dict] = []
        self._last: dict[int, float] = {}
        self._done = threading.Event()
        self.t0 = time.perf_counter()

    def _read(self) -> dict[str, float]:
        totals = dict.fromkeys(ROLES, 0.0)
        seen: dict[int, float] = {}
        me = psutil.Process(self.me)
        for proc in [me, *me.children(recursive=True)]:
            try:
                t = proc.cpu_times()
                cpu = t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            seen[proc.pid] = cpu
            totals[role_of(proc, self.me)] += cpu - self._last.get(proc.pid, 0.0)
        self._last = seen
        return totals

    def run(self) -> None:
        self._read()
        psutil.cpu_percent()
        t_prev = time.perf_counter()
        while not self._done.wait(self.interval):
            now = time.perf_counter()
            dt = max(now - t_prev, 1e-9)
            used = self._read()
            row = {"t": round(now - self.t0, 2), **{k: round(v / dt, 3) for k, v in used.items()}}
            row["machine"] = round(psutil.cpu_percent() / 100 * psutil.cpu_count(), 3)
            self.rows.append(row)
            t_prev = now

    def stop(self) -> None:
        self._done.set()
        self.join()


def summarise(rows: list[dict], start: float, end: float, cores: int, interval: float) -> dict:
    """Mean cores busy per role and the sweep's idle core-seconds over the window [start, end] (seconds)."""
    window = [r for r in rows if start <= r["t"] <= end]
    if not window:
        return {"window_s": round(end - start, 2), "rows": 0}
    busy = [sum(r[k] for k in ROLES) for r in window]
    return {
        "window_s": round(end - start, 2),
        "rows": len(window),
        **{f"mean_{k}": round(sum(r[k] for r in window) / len(window), 3) for k in (*ROLES, "machine")},
        "mean_sweep": round(sum(busy) / len(window), 3),
        "idle_core_s": round(sum(max(cores - b, 0.0) for b in busy) * interval, 2),
    }


def _session_orphans(pid: int) -> list[psutil.Process]:
    """Processes of this driver's Ray sessions (``session_<date>_<time>_<pid>``) no longer under it (a raylet
    that died leaves its agents to init)."""
    mark = re.compile(rf"session_[0-9_-]+_{pid}\b")
    found = []
    for proc in psutil.process_iter(["pid", "ppid", "cmdline"]):
        if proc.info["ppid"] == 1 and mark.search(" ".join(proc.info["cmdline"] or ())):
            found.append(proc)
    return found


def start_ray(ray, num_cpus: int, tries: int = 6) -> None:
    """A fresh local Ray instance; retried, since Ray gives its raylet a fixed 30 s to register and a loaded
    machine (a shared 2-core one) can miss that. A failed start leaves its GCS, dashboard and monitor running
    (``ray.shutdown`` does not know them): they are ended, by pid, before the next try."""
    me = psutil.Process()
    for attempt in range(1, tries + 1):
        before = {p.pid for p in me.children(recursive=True)}
        try:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
            return
        except Exception as e:
            ray.shutdown()
            started = [p for p in me.children(recursive=True) if p.pid not in before] + _session_orphans(me.pid)
            for proc in started:
                proc.kill()
            psutil.wait_procs(started, timeout=10)
            if "timed out during startup" not in str(e) or attempt == tries:
                raise
            print(f"[bench] Ray start {attempt}/{tries} timed out; retrying", file=sys.stderr, flush=True)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="smoke", choices=PRESETS)
    p.add_argument("--table", default="all")
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--num-cpus", type=int, default=os.cpu_count(), help="CPUs Ray gives the sweep")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between two reads")
    p.add_argument("--out", default=None, help="also write the JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    bad = (f"--interval {args.interval:g}: must be > 0 seconds" if args.interval <= 0 else
           f"--num-cpus {args.num_cpus}: must be >= 1" if args.num_cpus < 1 else None)  # fmt: skip
    if bad:
        print(f"railsweep: error: {bad}", file=sys.stderr)
        return 2
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    code = str(Path(railsweep.__file__).resolve().parents[1])  # Ray's workers import the same railsweep
    os.environ["PYTHONPATH"] = os.pathsep.join([code, *filter(None, [os.environ.get("PYTHONPATH")])])
    spec = load_spec(args.preset)
    spec = dataclasses.replace(spec, cache_dir=args.cache_dir or spec.cache_dir)
    resolve_spec(spec)  # builds or reuses the world before anything is timed

    import ray  # optional heavy dependencies: only sweeps import them

    from railsweep.services.mlflow_server import ensure_mlflow_server
    from railsweep.services.process import free_port
    from railsweep.sweep.run.driver import run_sweep

    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="rsw-util-") as tmp:
        svc = ensure_mlflow_server(tmp, port=free_port(), timeout=600)
        sampler = Sampler(args.interval)
        try:
            track = dataclasses.replace(spec.tracking, uri=svc.url, experiment=f"util-{int(time.time())}")
            spec = dataclasses.replace(spec, tracking=track)
            start_ray(ray, args.num_cpus)
            sampler.start()
            t_sweep = time.perf_counter() - sampler.t0
            out = run_sweep(spec, table=args.table, progress_interval=30, out=sys.stderr)
            sampler.stop()
            ray.shutdown()
        finally:
            svc.stop()
    t = out.timings
    trials_start = t_sweep + t.get("setup_s", 0.0) + t.get("engines_ready_s", 0.0)
    trials_end = trials_start + t.get("trials_s", 0.0)
    stats = out.engine_stats
    result = {
        "preset": args.preset,
        "table": args.table,
        "code": code,
        "num_cpus": args.num_cpus,
        "cells": len(out.cells),
        "failed": len(out.failed),
        "engines": len(stats),
        "wall_s": round(out.wall_s, 2),
        **{k: round(v, 2) for k, v in t.items()},
        "engine_stats": {name: {k: round(v, 2) if isinstance(v, float) else v for k, v in s.items()}
                         for name, s in stats.items()},  # fmt: skip
        "trials_phase": summarise(sampler.rows, trials_start, trials_end, args.num_cpus, args.interval),
        "whole_sweep": summarise(sampler.rows, t_sweep, t_sweep + out.wall_s, args.num_cpus, args.interval),
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "samples": sampler.rows,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0 if not out.failed else 1


if __name__ == "__main__":
    sys.exit(main())
