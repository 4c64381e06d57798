"""The sweep's small actors and the names the trials share with the engine actors: trials import this module,
not :mod:`railsweep.sweep.run.engine_server`, which loads torch."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

ENGINE_NAMESPACE = "railsweep"


def engine_name(sweep_id: str, family: str, replica: int = 0) -> str:
    return f"engine-{sweep_id}-{family}-{replica}"


class ProgressBoard:
    """Live cell states and sample counts, written by trials and engines, read by the driver."""

    def __init__(self, total: int, skipped: int = 0, fault: Any = None):
        self.total = total
        self.skipped = skipped
        self.states: dict[str, str] = {}
        self.samples = 0  # decoded and read back
        self.resumed = 0  # read back from a killed try's checkpoints: not counted in the rate
        self.t0 = time.time()
        self.fault = fault
        self.done = 0

    def set_state(self, cell_id: str, state: str) -> None:
        if state == "done" and self.states.get(cell_id) != "done":
            self.done += 1
            if self.fault is not None and self.done == self.fault.after_cells:
                self.fault.fire()
        self.states[cell_id] = state

    def add_samples(self, cell_id: str, n: int) -> None:
        self.samples += n

    def add_resumed(self, cell_id: str, n: int) -> None:
        self.samples += n
        self.resumed += n

    def snapshot(self) -> dict[str, Any]:
        counts = {"done": 0, "running": 0, "failed": 0}
        for s in self.states.values():
            if s in counts:
                counts[s] += 1
        elapsed = max(time.time() - self.t0, 1e-9)
        return {"total": self.total, "skipped": self.skipped, **counts, "samples": self.samples,
                "resumed": self.resumed, "samples_per_s": (self.samples - self.resumed) / elapsed,
                "elapsed_s": elapsed}  # fmt: skip


def create_progress_board(total: int, skipped: int, fault: Any = None) -> Any:
    """The board actor; with a fault that signals the driver, on the driver's node, where its pid is valid."""
    import ray  # optional heavy dependency: the sweep's

    options: dict[str, Any] = {"num_cpus": 0}
    if fault is not None and fault.kind.endswith("-driver"):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = ray.get_runtime_context().get_node_id()
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
    return ray.remote(ProgressBoard).options(**options).remote(total, skipped, fault)


def write_files(files: dict[str, tuple[str, bytes]], out_dir: str | Path) -> dict[str, Path]:
    """Materialise the bytes returned by :meth:`EngineServer.run_cell` in ``out_dir``."""
    out = {kind: Path(out_dir) / name for kind, (name, _) in files.items()}
    for kind, (_, blob) in files.items():
        out[kind].write_bytes(blob)
    return out
