"""Test hook: inject one fault into a running sweep at an exact event, the k-th finished cell.

Tests that poll MLflow and strike "soon" race the sweep; here the progress board fires the fault on its
``k``-th finished-cell report. A :class:`Fault` is passed to ``run_sweep``, or ``RAILSWEEP_FAULT=KIND:K`` set
for ``ray job submit`` (a malformed value: exit 2). Kinds:

- ``kill-driver:K``: SIGKILL to the sweep's driver (no cleanup: ``--resume`` must finish the sweep);
- ``interrupt-driver:K``: SIGINT to the driver, as Ctrl-C (the sweep stops, its unfinished runs KILLED);
- ``kill-engine:K``: ``ray.kill`` every engine actor, letting Ray restart it and retry its cells.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace

from railsweep.errors import ConfigError
from railsweep.sweep.run.actors import ENGINE_NAMESPACE

ENV_VAR = "RAILSWEEP_FAULT"
KINDS = ("kill-driver", "interrupt-driver", "kill-engine")
DRIVER_SIGNALS = {"kill-driver": signal.SIGKILL, "interrupt-driver": signal.SIGINT}


@dataclass(frozen=True)
class Fault:
    """One fault, armed by the driver with what it needs to act (its pid, the engine actors' names)."""

    kind: str
    after_cells: int
    driver_pid: int | None = None
    engines: tuple[str, ...] = ()

    def arm(self, driver_pid: int, engines: tuple[str, ...]) -> Fault:
        return replace(self, driver_pid=driver_pid, engines=engines)

    def fire(self) -> None:
        """Strike now (called in the board's process)."""
        print(f"[sweep] test hook {ENV_VAR}={self.kind}:{self.after_cells}: firing after "
              f"{self.after_cells} finished cell(s)", file=sys.stderr, flush=True)  # fmt: skip
        if self.kind in DRIVER_SIGNALS:
            os.kill(self.driver_pid, DRIVER_SIGNALS[self.kind])
            return
        import ray  # optional heavy dependency: only sweeps import it

        for name in self.engines:
            ray.kill(ray.get_actor(name, namespace=ENGINE_NAMESPACE), no_restart=False)


def fault_from_env(environ: Mapping[str, str] = os.environ) -> Fault | None:
    """The fault ``$RAILSWEEP_FAULT`` asks for, or None when it is unset or empty."""
    if not (raw := environ.get(ENV_VAR, "").strip()):
        return None
    kind, _, k = raw.partition(":")
    if kind not in KINDS or not k.isdigit() or int(k) < 1:
        raise ConfigError(f"{ENV_VAR}={raw!r} is not a fault; the test hook takes KIND:K with KIND one of "
                          f"{', '.join(KINDS)} and K >= 1 finished cells")
    return Fault(kind, int(k))
