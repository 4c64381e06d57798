"""The thread budget of a process that runs a model: how many torch/OpenMP/BLAS threads it may use, set before
torch loads and again on a torch already loaded, so that processes sharing the cores do not oversubscribe them
(:mod:`railsweep.sweep.run.actors` measures why).
"""

from __future__ import annotations

import os
import sys

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def thread_env(threads: int, wait_policy: str | None = "PASSIVE") -> dict[str, str]:
    """Environment variables that give a process ``threads`` OpenMP/BLAS threads (read when torch loads)."""
    env = {var: str(threads) for var in _THREAD_VARS}
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    return env


def apply_thread_budget(threads: int) -> int:
    """Hold this process to ``threads`` threads: the environment for libraries not loaded yet, and
    ``torch.set_num_threads`` when torch already is. Returns torch's thread count (or ``threads``)."""
    os.environ.update(thread_env(threads, wait_policy=None))
    torch = sys.modules.get("torch")  # only when already loaded: loading it here would cost the import
    if torch is None:
        return threads
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()
