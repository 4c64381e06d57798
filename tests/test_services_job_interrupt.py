"""Ctrl-C while `railsweep sweep` streams its Ray job's logs stops the job, not just the log stream: the driver
gets SIGINT (a sweep's driver then ends its runs KILLED) and the job ends STOPPED."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from railsweep.services.process import exe
from railsweep.services.tokens import auth_env

pytestmark = pytest.mark.slow

# the job: says it is up, then waits; SIGINT makes it say so and exit
JOB = ("import signal, sys, time\n"
       "signal.signal(signal.SIGINT, lambda *a: (print('job: got SIGINT', flush=True), sys.exit(130)))\n"
       "print('job: up', flush=True)\n"
       "time.sleep(600)\n")  # fmt: skip


def test_ctrl_c_on_the_log_stream_stops_the_job_with_sigint(ray_head, tmp_path):
    sid = f"interrupt-{int(time.time())}"
    submit = ("import sys\nfrom railsweep.services.jobs import submit_job\n"
              f"submit_job({ray_head.dashboard!r}, [sys.executable, '-c', {JOB!r}], submission_id={sid!r})\n")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", submit], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip
    lines = []
    for line in proc.stdout:  # a terminal's Ctrl-C: SIGINT to the whole foreground group, once the job is up
        lines.append(line)
        if "job: up" in line:
            os.killpg(proc.pid, signal.SIGINT)
            break
    out = "".join(lines) + proc.communicate(timeout=300)[0]
    assert f"[railsweep] interrupted: stopping Ray job {sid}" in out and f"Ray job {sid}: stopped" in out, out
    env = auth_env()
    status = subprocess.run([exe("ray"), "job", "status", "--address", ray_head.dashboard, sid], env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert f"Job '{sid}' was stopped" in status.stdout + status.stderr, status.stdout + status.stderr
    logs = subprocess.run([exe("ray"), "job", "logs", "--address", ray_head.dashboard, sid], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "job: got SIGINT" in logs.stdout, logs.stdout[-2000:]
