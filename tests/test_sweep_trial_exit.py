"""A trial worker that is already exiting ignores SIGTERM (railsweep.sweep.trial.quiet_exit).

The scene of a sweep's end, without Ray: a process whose SIGTERM handler raises ``SystemExit(1)`` (as Ray's
worker handler does) starts its exit, and SIGTERM arrives during the atexit handlers, as the raylet's does when
a retired trial actor leaves. Without ``quiet_exit`` Python can only print "Exception ignored ... SystemExit: 1";
with it, nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_SCENE = """
import atexit, os, signal, sys, threading, time

def ray_like_handler(signum, frame):
    raise SystemExit(1)

signal.signal(signal.SIGTERM, ray_like_handler)

def raylet_sends_sigterm():  # registered first, so it runs after every later atexit handler
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)  # the handler runs at the next bytecode boundary, here

atexit.register(raylet_sends_sigterm)

def trial():
    if sys.argv[1] == "quiet":
        from railsweep.sweep.trial import quiet_exit
        quiet_exit()

t = threading.Thread(target=trial)  # Tune runs a function trainable outside the main thread
t.start()
t.join()
print("trial done", flush=True)
"""


def _scene(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SCENE, mode], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip


def test_sigterm_during_a_trial_workers_exit_prints_no_traceback():
    r = _scene("quiet")
    assert r.returncode == 0 and r.stdout == "trial done\n"
    assert r.stderr == ""


def test_without_quiet_exit_the_same_sigterm_prints_an_ignored_system_exit():
    r = _scene("plain")  # the control: the scene reproduces the log line quiet_exit removes
    assert "Exception ignored" in r.stderr and "SystemExit: 1" in r.stderr
