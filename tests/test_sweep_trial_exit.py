"""A trial worker told to stop where Python cannot unwind prints no traceback (railsweep.sweep.run.trial.quiet_exit).

The scenes of a sweep's end, without Ray: a process whose SIGTERM handler raises ``SystemExit(1)`` (as Ray's
worker handler does) gets SIGTERM either during its atexit handlers (a retired trial actor leaving) or while
its idle main thread runs a weakref callback (the raylet stopping a finished job's workers). Without
``quiet_exit`` Python can only print "Exception ignored ... SystemExit: 1" (and, in the second scene, the
process carries on); with it, nothing is printed and the process ends as the signal asked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_SCENE = """
import atexit, os, signal, sys, threading, time, weakref

def ray_like_handler(signum, frame):
    raise SystemExit(1)

signal.signal(signal.SIGTERM, ray_like_handler)

def raylet_sends_sigterm():  # registered first, so it runs after every later atexit handler
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)  # the handler runs at the next bytecode boundary, here

if sys.argv[2] == "exit":
    atexit.register(raylet_sends_sigterm)

def trial():
    if sys.argv[1] == "quiet":
        from railsweep.sweep.run.trial import quiet_exit
        quiet_exit()

t = threading.Thread(target=trial)  # Tune runs a function trainable outside the main thread
t.start()
t.join()
print("trial done", flush=True)
if sys.argv[2] == "idle":
    class Collected:
        pass
    obj = Collected()
    ref = weakref.ref(obj, lambda _: raylet_sends_sigterm())
    del obj  # the callback runs here; SystemExit cannot leave it
    print("still running", flush=True)
"""


def _scene(mode: str, when: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SCENE, mode, when], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip


def test_sigterm_during_a_trial_workers_exit_prints_no_traceback():
    r = _scene("quiet", "exit")
    assert r.returncode == 0 and r.stdout == "trial done\n"
    assert r.stderr == ""


def test_without_quiet_exit_the_same_sigterm_prints_an_ignored_system_exit():
    r = _scene("plain", "exit")  # the control: the scene reproduces the log line quiet_exit removes
    assert "Exception ignored" in r.stderr and "SystemExit: 1" in r.stderr


def test_sigterm_in_an_idle_workers_weakref_callback_ends_it_quietly_with_code_1():
    r = _scene("quiet", "idle")
    assert r.returncode == 1 and r.stdout == "trial done\n"
    assert r.stderr == ""


def test_without_quiet_exit_an_idle_worker_prints_the_ignored_system_exit_and_carries_on():
    r = _scene("plain", "idle")  # the control: CI's resumed-sweep log held this traceback
    assert "Exception ignored" in r.stderr and "SystemExit: 1" in r.stderr
    assert r.returncode == 0 and r.stdout == "trial done\nstill running\n"
