"""How much of a shared core a Ray worker keeps beside another CPU-heavy process on this machine.

Ray starts its workers at nice 15, in the session of the Ray head (railsweep starts the head in a session of its
own). Linux's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``) ranks sessions against each
other first and nice values only within a session, so whether a sweep's engines keep their cores beside another
job depends on where that job runs, not only on its nice value.

Steps:
1. start an isolated local Ray head (token auth, 127.0.0.1, free ports), as ``railsweep demo`` starts one;
2. submit a Ray job whose one task pins itself to CPU 0 and spins for ``2 * --seconds``;
3. once it spins, run a competing busy loop pinned to CPU 0 for ``--seconds``, started each of three ways:
   plain (this session, nice 0), ``nice -n 19`` (this session), and in a new session whose autogroup nice is 19
   (``setsid``, then ``19 > /proc/self/autogroup``);
4. print JSON: for each way, the CPU seconds the competitor got of its wall seconds and the share of the shared
   core the Ray worker kept while both ran (the worker's CPU seconds beyond the time it ran alone).

Run (about 2 minutes): ``python bench/ray_worker_share.py [--seconds 12]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep import argtypes  # noqa: E402

SPIN = (
    "import os, sys, time\n"
    "os.sched_setaffinity(0, {0})\n"
    "t0, c0 = time.time(), time.process_time()\n"
    "while time.time() - t0 < float(sys.argv[1]):\n"
    "    pass\n"
    "print(round(time.process_time() - c0, 3))\n"
)
JOB = (
    "import json, os, sys, time\n"
    "import ray\n"
    "ray.init()\n"
    "@ray.remote(num_cpus=1)\n"
    "def spin(seconds):\n"
    "    os.sched_setaffinity(0, {0})\n"
    "    t0, c0 = time.time(), time.process_time()\n"
    "    print('SPINNING', flush=True)\n"
    "    while time.time() - t0 < seconds:\n"
    "        pass\n"
    "    return {'cpu_s': time.process_time() - c0, 'nice': os.nice(0)}\n"
    "print('RESULT', json.dumps(ray.get(spin.remote(float(sys.argv[1])))), flush=True)\n"
)
WAYS = {
    "same_session_nice_0": [],
    "same_session_nice_19": ["nice", "-n", "19"],
    "own_session_autogroup_nice_19": ["setsid", "sh", "-c", 'echo 19 > /proc/self/autogroup && exec "$0" "$@"'],
}


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=argtypes.real(1.0, 600.0), default=12.0, help="the competitor's wall seconds")
    return p


def autogroup() -> str:
    path = Path("/proc/sys/kernel/sched_autogroup_enabled")
    return path.read_text().strip() if path.exists() else "absent"


def one_way(head, env: dict, workdir: Path, prefix: list[str], seconds: float) -> dict:
    """Steps 2-3 for one way of starting the competitor."""
    job = subprocess.Popen(
        [str(Path(sys.executable).with_name("ray")), "job", "submit", "--address", head.dashboard, "--working-dir", str(workdir), "--",
         sys.executable, "job.py", str(2 * seconds)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines = []
    for line in job.stdout:  # the worker spins from here on
        lines.append(line)
        if "SPINNING" in line:
            break
    started = time.time()
    competitor = subprocess.run([*prefix, sys.executable, "-c", SPIN, str(seconds)], capture_output=True, text=True)
    overlap = time.time() - started
    lines += job.stdout.readlines()
    job.wait()
    result = [line for line in lines if line.startswith("RESULT")]
    if job.returncode or not result or competitor.returncode:
        raise RuntimeError("the Ray job or the competitor failed:\n" + "".join(lines[-20:]) + competitor.stderr)
    worker = json.loads(result[-1].split(" ", 1)[1])
    alone = 2 * seconds - overlap
    return {
        "competitor_cpu_s": float(competitor.stdout),
        "competitor_wall_s": round(overlap, 2),
        "worker_nice": worker["nice"],
        "worker_share_while_shared": round(max(0.0, worker["cpu_s"] - alone) / overlap, 3),
    }


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if len(os.sched_getaffinity(0)) < 2:
        print("ray_worker_share: needs 2 or more CPUs (the head's processes beside the shared core)", file=sys.stderr)
        return 2
    from railsweep.services.ray_head import ensure_ray_head  # Ray after the command line is checked
    from railsweep.services.tokens import auth_env

    head = ensure_ray_head(dashboard_port=8266, num_cpus=2, block=True, isolated=True)
    try:
        env = auth_env(dict(os.environ))
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "job.py").write_text(JOB)
            ways = {name: one_way(head, env, Path(tmp), prefix, args.seconds) for name, prefix in WAYS.items()}
    finally:
        head.service.stop()
    print(json.dumps({"autogroup": autogroup(), "cpus": os.cpu_count(), "ways": ways}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
