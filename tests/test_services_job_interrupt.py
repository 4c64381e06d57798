"""Ctrl-C while `railsweep sweep` streams its Ray job's logs stops the job, not just the log stream: the driver
gets SIGINT (a sweep's driver then ends its runs KILLED) and the job ends STOPPED. A job whose log stream closed
while it runs is followed again from where the stream stopped."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import pytest

from railsweep.services import jobs
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
    assert jobs.job_status(ray_head.dashboard, sid) == "STOPPED"


def test_following_a_running_job_again_skips_the_lines_already_shown_and_ends_with_its_status(ray_head):
    sid = f"follow-{int(time.time())}"
    job = "import time\nfor i in range(4):\n    print(f'line {i}', flush=True)\n    time.sleep(1)\n"
    assert jobs.submit_job(ray_head.dashboard, [sys.executable, "-c", job], submission_id=sid, no_wait=True,
                           stream=io.StringIO()) == 0  # fmt: skip
    out = io.StringIO()
    # the lines `ray job submit` would have shown up to "line 1": Ray's two before the entrypoint's five
    assert jobs.follow_job(ray_head.dashboard, sid, auth_env(), out, seen=8, rc=0) == 0
    text = out.getvalue()
    assert f"Ray job {sid} is" in text, text  # it was PENDING or RUNNING when followed
    assert "line 0" not in text and "line 1" not in text and "line 2\nline 3\n" in text, text
