"""``ray job submit`` to a Ray head's dashboard, token-authenticated, with the job's logs streamed."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

from railsweep.services.process import exe
from railsweep.services.tokens import auth_env

_NO_AGENT = "No available agent to submit job"
# `ray job stop` (and Ctrl-C here) signals the driver with SIGINT, which a sweep's driver turns into a clean stop (its
# runs KILLED), and gives it this long before SIGKILL (Ray's defaults: SIGTERM, 3 s)
STOP_ENV = {"RAY_JOB_STOP_SIGNAL": "SIGINT", "RAY_JOB_STOP_WAIT_TIME_S": "60"}


def submit_job(address: str, entrypoint: list[str], *, working_dir: str | Path | None = None,
               env_vars: dict[str, str] | None = None, submission_id: str | None = None, no_wait: bool = False,
               stream=None, agent_wait_s: float = 120.0) -> int:  # fmt: skip
    """``ray job submit`` (streams the job's logs unless ``no_wait``); returns the CLI's exit code.
    ``working_dir`` is uploaded for the job to run in; None uploads nothing (the job runs installed code).
    Ctrl-C while the logs stream stops the job too (``ray job stop``), then raises KeyboardInterrupt."""
    submission_id = submission_id or f"railsweep-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    cmd = [exe("ray"), "job", "submit", "--address", address, "--submission-id", submission_id,
           "--runtime-env-json", json.dumps({"env_vars": {**STOP_ENV, **(env_vars or {})}})]  # fmt: skip
    if working_dir is not None:
        cmd += ["--working-dir", str(working_dir)]
    if no_wait:
        cmd.append("--no-wait")
    # Ray's own lines (submitted, succeeded) carry ANSI colours even into a pipe unless told otherwise
    cmd += ["--log-color", "true" if _isatty(stream or sys.stdout) else "false", "--", *entrypoint]
    env = auth_env()
    for k in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):  # these would override --address
        env.pop(k, None)
    # a head just started may have no job agent yet: the submission was refused, so trying again is safe
    deadline = time.monotonic() + agent_wait_s
    while True:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        assert proc.stdout is not None
        refused = False
        try:
            for line in proc.stdout:
                refused = refused or _NO_AGENT in line
                (stream or sys.stdout).write(line)
        except KeyboardInterrupt:
            stop_job(address, submission_id, env, stream or sys.stdout)
            raise
        rc = proc.wait()
        if rc == 0 or not refused or time.monotonic() > deadline:
            return rc
        time.sleep(2.0)


def stop_job(address: str, submission_id: str, env: dict[str, str], stream) -> None:
    """``ray job stop``: the driver gets SIGINT (:data:`STOP_ENV`); waits until the job has ended."""
    stream.write(f"[railsweep] interrupted: stopping Ray job {submission_id}\n")
    stream.flush()
    r = subprocess.run([exe("ray"), "job", "stop", "--address", address, submission_id], env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    status = "stopped" if r.returncode == 0 else f"`ray job stop` failed: {(r.stdout + r.stderr).strip()[-500:]}"
    stream.write(f"[railsweep] Ray job {submission_id}: {status}\n")


def _isatty(stream) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())
