"""``ray job submit`` to a Ray head's dashboard, token-authenticated, with the job's logs streamed."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

from railsweep.services.process import exe, http_json
from railsweep.services.tokens import auth_env, bearer

_NO_AGENT = "No available agent to submit job"
# the job's log follows this line: of `ray job submit`, of `ray job logs`
_LOG_STARTS = {"submit": "Tailing logs until the job exits", "logs": "Job submission server address"}
# the CLI's own lines once the log stream has closed ({} is the submission id)
_TRAILER = ("WebSocket closed for job {}", "Status for job '{}'", "Job '{}'")
# `ray job stop` (and Ctrl-C here) signals the driver with SIGINT, which a sweep's driver turns into a clean stop (its
# runs KILLED), and gives it this long before SIGKILL (Ray's defaults: SIGTERM, 3 s)
STOP_ENV = {"RAY_JOB_STOP_SIGNAL": "SIGINT", "RAY_JOB_STOP_WAIT_TIME_S": "60"}


def submit_job(address: str, entrypoint: list[str], *, working_dir: str | Path | None = None,
               env_vars: dict[str, str] | None = None, submission_id: str | None = None, no_wait: bool = False,
               stream=None, agent_wait_s: float = 120.0) -> int:  # fmt: skip
    """``ray job submit`` (streams the job's logs unless ``no_wait``); returns the CLI's exit code.
    ``working_dir`` is uploaded for the job to run in; None uploads nothing (the job runs installed code).
    Ctrl-C while the logs stream stops the job too (``ray job stop``), then raises KeyboardInterrupt. A stream
    that closes while the job runs is followed again; a job stopped before it finished returns 130."""
    submission_id = submission_id or f"railsweep-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    cmd = [exe("ray"), "job", "submit", "--address", address, "--submission-id", submission_id,
           "--runtime-env-json", json.dumps({"env_vars": {**STOP_ENV, **(env_vars or {})}})]  # fmt: skip
    if working_dir is not None:
        cmd += ["--working-dir", str(working_dir)]
    if no_wait:
        cmd.append("--no-wait")
    cmd += ["--log-color", _log_color(stream or sys.stdout), "--", *entrypoint]
    env, out = auth_env(), stream or sys.stdout
    for k in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):  # these would override --address
        env.pop(k, None)
    # a head just started may have no job agent yet: the submission was refused, so trying again is safe
    deadline = time.monotonic() + agent_wait_s
    while True:
        rc, refused, seen = _stream(cmd, env, out, address, submission_id)
        if rc == 0 or not refused or time.monotonic() > deadline:
            break
        time.sleep(2.0)
    return rc if no_wait or refused else follow_job(address, submission_id, env, out, seen, rc)


def _stream(cmd: list[str], env: dict[str, str], out, address: str, sid: str,
            skip: int = 0) -> tuple[int, bool, int]:  # fmt: skip
    """Run ``cmd`` (``ray job submit`` or ``ray job logs -f``), copying its output to ``out`` but the first
    ``skip`` lines of the job's log; returns (exit code, refused for want of an agent, job log lines seen)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    assert proc.stdout is not None
    refused, counting, seen = False, False, 0
    try:
        for line in proc.stdout:
            refused = refused or _NO_AGENT in line
            counting = counting and not any(t.format(sid) in line for t in _TRAILER)
            if counting and (seen := seen + 1) <= skip:
                continue
            counting = counting or _LOG_STARTS[cmd[2]] in line
            out.write(line)
    except KeyboardInterrupt:
        stop_job(address, sid, env, out)
        raise
    return proc.wait(), refused, seen


def follow_job(address: str, sid: str, env: dict[str, str], out, seen: int, rc: int) -> int:
    """Once the log stream has closed: while the job still runs, follow its log again (the lines already shown
    skipped); then the exit code its end calls for (``ray job submit`` says 0 for a stopped job)."""
    while (status := job_status(address, sid)) in ("PENDING", "RUNNING"):
        out.write(f"[railsweep] the log stream closed while Ray job {sid} is {status}: following it again\n")
        logs = [exe("ray"), "job", "logs", "-f", "--address", address, "--log-color", _log_color(out), sid]
        seen = max(seen, _stream(logs, env, out, address, sid, skip=seen)[2])
        time.sleep(1.0)
    if status == "STOPPED":
        out.write(f"[railsweep] Ray job {sid} was stopped before it finished\n")
        return 130
    if status is None and rc == 0:  # (a submission that failed has no status to read)
        out.write(f"[railsweep] could not read the status of Ray job {sid}: see `ray job status {sid}`\n")
    return rc if status is None else 0 if status == "SUCCEEDED" else 1


def job_status(address: str, sid: str) -> str | None:
    """The job's status from the dashboard's Jobs API (PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED); None when
    the dashboard does not answer."""
    details = http_json(f"{address.rstrip('/')}/api/jobs/{sid}", bearer())
    return details.get("status") if isinstance(details, dict) else None


def stop_job(address: str, submission_id: str, env: dict[str, str], stream) -> None:
    """``ray job stop``: the driver gets SIGINT (:data:`STOP_ENV`); waits until the job has ended."""
    stream.write(f"[railsweep] interrupted: stopping Ray job {submission_id}\n")
    stream.flush()
    r = subprocess.run([exe("ray"), "job", "stop", "--address", address, submission_id], env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    status = "stopped" if r.returncode == 0 else f"`ray job stop` failed: {(r.stdout + r.stderr).strip()[-500:]}"
    stream.write(f"[railsweep] Ray job {submission_id}: {status}\n")


def _log_color(stream) -> str:
    """``--log-color`` for Ray's CLI: its own lines carry ANSI colours even into a pipe unless told otherwise."""
    return "true" if getattr(stream, "isatty", lambda: False)() else "false"
