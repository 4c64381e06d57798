"""``ray job submit`` to a Ray head's dashboard, token-authenticated, with the job's logs streamed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from railsweep.services.process import exe
from railsweep.services.tokens import auth_env

_NO_AGENT = "No available agent to submit job"


def submit_job(address: str, entrypoint: list[str], *, working_dir: str | Path | None = None,
               env_vars: dict[str, str] | None = None, submission_id: str | None = None, no_wait: bool = False,
               stream=None, agent_wait_s: float = 120.0) -> int:  # fmt: skip
    """``ray job submit`` (streams the job's logs unless ``no_wait``); returns the CLI's exit code.
    ``working_dir`` is uploaded for the job to run in; None uploads nothing (the job runs installed code)."""
    cmd = [exe("ray"), "job", "submit", "--address", address,
           "--runtime-env-json", json.dumps({"env_vars": env_vars or {}})]  # fmt: skip
    if working_dir is not None:
        cmd += ["--working-dir", str(working_dir)]
    if submission_id:
        cmd += ["--submission-id", submission_id]
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
        for line in proc.stdout:
            refused = refused or _NO_AGENT in line
            (stream or sys.stdout).write(line)
        rc = proc.wait()
        if rc == 0 or not refused or time.monotonic() > deadline:
            return rc
        time.sleep(2.0)


def _isatty(stream) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())
