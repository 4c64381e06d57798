"""Which family of a world's build trains at full priority when the families outnumber the cores.

Each family trains in a process of its own, one torch thread each (the weights depend on the thread count,
docs/miniworld.md). With three families on two cores the OS shares the cores evenly, so the family with the
most training (the `mini` world's neox: 1,100 pretraining steps against 900 and 800), the build's critical
path, runs at two thirds of a core, then alone while the other core idles. Here it keeps normal priority and
the others yield to it (``nice`` :data:`YIELD_NICE` above the build's own, at most 19). The weights never
change: each family's arithmetic is one thread, whatever the cores it runs on.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from collections.abc import Mapping

YIELD_NICE = 10  # CFS weight 110 against nice 0's 1024: the yielding families take what the first leaves
MAX_NICE = 19
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def family_niceness(work: Mapping[str, int], cores: int, threads: int = 1, base: int = 0) -> dict[str, int]:
    """``nice`` per family from its training tokens (``work``, in build order): the build's own ``base`` for
    all when every training family has ``threads`` cores of its own; else ``base`` for the family with the
    most tokens (the first among equals), ``base`` + :data:`YIELD_NICE` (at most 19) for the other ones."""
    training = [f for f, tokens in work.items() if tokens > 0]
    if len(training) * max(1, threads) <= cores:
        return dict.fromkeys(work, base)
    first = max(training, key=lambda f: work[f])  # max keeps the first of equals
    low = min(MAX_NICE, base + YIELD_NICE)
    return {f: low if f in training and f != first else base for f in work}


def yield_priority(nice: int) -> int:
    """Lower this process's priority to ``nice`` (never raise it: that needs privileges); returns the niceness now."""
    now = os.nice(0)
    if nice > now:
        now = os.nice(nice - now)
    return now


def die_with_parent() -> bool:
    """The build's process pool initializer: SIGTERM this process when its parent dies (Linux ``prctl``), so
    family processes do not train on, orphaned; returns whether the request took (False without ``prctl``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return False
    if prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return False
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # the parent died before the request took
        os.kill(os.getpid(), signal.SIGTERM)
    return True
