"""Throughput tables: generated tokens per second of one engine, measured on the hardware a sweep will run on.

A table is JSON written by ``bench/throughput.py``::

    {"hardware": "...", "command": "...",
     "entries": [{"backend": "transformers", "device": "cpu", "model": "miniworld:mini/llama",
                  "units": 1, "tokens_per_s": 2500.0, ...}, ...]}

``decode`` (optional, default ``"plain"``): ``"patched"`` is the rate of the decode a lockstep intervention runs
(Shortcut's patching: a reference model beside the target; ``bench/throughput.py
--patched``). ``model`` is the family's base model as a sweep spec names it (``miniworld:<world preset>/<family>``, else the
path or hub id; ``"*"`` matches any model); ``units`` are the CPU cores or GPUs the engine used. Without
``--throughput``, ``throughput_cpu.json`` beside this module is read when shipped, else no wall time priced.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError
from railsweep.tasks.data.text import read_utf8

DEFAULT_TABLE = Path(__file__).resolve().parent / "throughput_cpu.json"
DEVICES = ("cpu", "cuda", "mps")
DECODES = ("plain", "patched")


@dataclass(frozen=True)
class Rate:
    """One measured engine: ``tokens_per_s`` on ``units`` devices (cores or GPUs), decoding ``decode``."""

    backend: str
    device: str
    model: str
    units: float
    tokens_per_s: float
    decode: str = "plain"

    @property
    def per_unit(self) -> float:
        return self.tokens_per_s / self.units


@dataclass(frozen=True)
class ThroughputTable:
    path: str
    hardware: str
    rates: tuple[Rate, ...]

    def rate(self, backend: str, device: str, model: str, decode: str = "plain") -> Rate | None:
        """The entry for this engine: the model's own, else the table's ``"*"`` entry, else None."""
        for want in (model, "*"):
            for r in self.rates:
                if (r.backend, r.device, r.model, r.decode) == (backend, device, want, decode):
                    return r
        return None


def load_throughput(path: str | Path | None = None) -> ThroughputTable:
    """Read and check a table (default: the shipped CPU one, or an empty table when none is shipped)."""
    if path is None and not DEFAULT_TABLE.is_file():
        return ThroughputTable("no throughput table", "run bench/throughput.py and pass --throughput", ())
    path = Path(path) if path is not None else DEFAULT_TABLE
    if not path.is_file():
        raise ConfigError(f"--throughput {str(path)!r}: no such file (write one with bench/throughput.py)")
    try:
        data = json.loads(read_utf8(path))
    except ValueError as e:
        raise ConfigError(f"--throughput {str(path)!r}: not valid JSON ({e})") from e
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list) or not data["entries"]:
        raise ConfigError(f"--throughput {str(path)!r}: expected an object with a non-empty 'entries' list")
    rates = tuple(_rate(path, i, e) for i, e in enumerate(data["entries"]))
    return ThroughputTable(str(path), str(data.get("hardware", "unknown hardware")), rates)


def _rate(path: Path, i: int, e: Any) -> Rate:
    where = f"--throughput {str(path)!r}: entries[{i}]"
    if not isinstance(e, dict):
        raise ConfigError(f"{where} must be an object, got {e!r}")
    missing = [k for k in ("backend", "device", "model", "units", "tokens_per_s") if k not in e]
    if missing:
        raise ConfigError(f"{where} lacks {missing}")
    for key in ("backend", "model"):
        if not isinstance(e[key], str) or not e[key]:
            raise ConfigError(f"{where}: {key} must be a non-empty string, got {e[key]!r}")
    if e["device"] not in DEVICES:
        raise ConfigError(f"{where}: device must be one of {list(DEVICES)}, got {e['device']!r}")
    if e.get("decode", "plain") not in DECODES:
        raise ConfigError(f"{where}: decode must be one of {list(DECODES)}, got {e['decode']!r}")
    for key in ("units", "tokens_per_s"):
        v = e[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise ConfigError(f"{where}: {key} must be a finite number > 0, got {v!r}")
    return Rate(e["backend"], e["device"], e["model"], float(e["units"]), float(e["tokens_per_s"]),
                e.get("decode", "plain"))  # fmt: skip


def device_kind(device: str) -> str:
    """The table's device for ``engine.device``: ``auto`` prices a GPU (taken when there is one)."""
    return "cuda" if device == "auto" or device.startswith("cuda") else device
