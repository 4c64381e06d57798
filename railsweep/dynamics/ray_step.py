"""The dynamics step on Ray: one task per (family, domain) group (:func:`railsweep.dynamics.step.group_tables`).

The one module of the package that imports Ray; it runs on the Ray its caller joined (the sweep driver,
after the trials) and never calls ``ray.init``. A group whose cells did not all finish is skipped and
named, one whose analysis raises is named with its error; neither stops the other groups.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from railsweep.dynamics.groups import TemperatureGroup
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.dynamics.step import NOT_FINISHED, ReadCells, group_tables


@dataclass
class GroupResults:
    """``done``: ``{"family/domain": (group, group_tables' result)}``; ``skipped`` and ``errors``:
    ``{"family/domain": why}``."""

    done: dict[str, tuple[TemperatureGroup, dict[str, Any]]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def run_groups(
    groups: list[TemperatureGroup], settings: dict[str, DynamicsSettings], read_cells: ReadCells, *,
    num_cpus: float = 1.0, out: Any = sys.stdout,
) -> GroupResults:  # fmt: skip
    """Every group as one Ray task of ``num_cpus`` CPUs (and a GPU when its settings' device is CUDA);
    ``settings`` by ``"family/domain"``."""
    import ray  # optional heavy dependency: only the sweep's dynamics step runs here

    task = ray.remote(group_tables)
    threads = max(1, int(num_cpus))
    pending = {}
    for g in groups:
        name = f"{g.family}/{g.domain}"
        s = settings[name]
        options = task.options(num_cpus=num_cpus, num_gpus=1 if s.device.startswith("cuda") else 0, max_retries=0)
        pending[name] = (g, options.remote(g, s, read_cells, threads))
    results = GroupResults()
    for name, (g, ref) in pending.items():
        try:
            results.done[name] = (g, ray.get(ref))
        except Exception as e:  # one group's failure leaves the others' results
            cause = getattr(e, "cause", None) or e
            text = f"{type(cause).__name__}: {cause}"
            (results.skipped if NOT_FINISHED in text else results.errors)[name] = text[:2000]
            print(f"[sweep] dynamics {name}: {text}"[:2000], file=out, flush=True)
    return results
