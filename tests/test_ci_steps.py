"""`make test` (.ci/steps.sh): every step runs whatever the others did, one summary line each, non-zero if any failed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

STEPS = Path(__file__).resolve().parents[1] / ".ci" / "steps.sh"


def _run(tmp_path, *steps):
    fake = tmp_path / "fake-make"
    fake.write_text('#!/usr/bin/env bash\necho "ran $2" >> "$RAN"\necho "output of $2"\n[[ "$2" != bad* ]]\n')
    fake.chmod(0o755)
    env = {**os.environ, "MAKE": str(fake), "RAN": str(tmp_path / "ran")}
    done = subprocess.run(["bash", str(STEPS), *steps], env=env, capture_output=True, text=True)
    return done, (tmp_path / "ran").read_text().split("\n")


def test_a_failed_step_does_not_stop_the_next_and_the_run_fails_with_a_line_per_step(tmp_path):
    done, ran = _run(tmp_path, "lint", "bad-step", "wheel")
    assert done.returncode == 1
    assert ran[:3] == ["ran lint", "ran bad-step", "ran wheel"]
    summary = done.stdout.split("make test: one line per step\n")[1].splitlines()
    assert summary[0].split()[:2] == ["lint", "ok"]
    assert summary[1].split()[:2] == ["bad-step", "FAILED"] and "(exit 1;" in summary[1]
    assert summary[2].split()[:2] == ["wheel", "ok"]
    assert "---- last lines of bad-step ----\noutput of bad-step" in done.stdout
    assert done.stdout.rstrip().endswith("make test: FAILED")


def test_all_steps_passing_exit_zero(tmp_path):
    done, ran = _run(tmp_path, "lint", "wheel")
    assert done.returncode == 0 and ran[:2] == ["ran lint", "ran wheel"]
    assert done.stdout.rstrip().endswith("make test: all steps passed")
