"""The engine record: which backend decodes, on which weights (:class:`EngineConfig`), checked when built;
:func:`railsweep.engines.factory.build_engine` loads it. It lives beside the engines, on the factory's floor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from railsweep.errors import ConfigError, DataError

Backend = Literal["transformers", "vllm"]

_BACKENDS = ("transformers", "vllm")
DTYPES = ("auto", "float32", "float16", "bfloat16")
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class EngineConfig:
    """Fields:
        backend: ``"transformers"`` (any machine) or ``"vllm"`` (needs ``railsweep[vllm]``).
        model: base model directory or hub id.
        adapters: ``((name, path), ...)`` LoRA adapters served by name; a dict is accepted and sorted.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
        dtype: ``"auto"``, ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        trust_remote_code: passed to the model loader.
        max_batch_size: most rows decoded together (vLLM's ``max_num_seqs``); None = the backend's choice,
            which fills the machine. Not ``DecodeSettings.batch_size``; samples do not depend on the batch.
    """

    backend: Backend = "transformers"
    model: str = ""
    adapters: tuple[tuple[str, str], ...] = ()
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    max_batch_size: int | None = None

    def __post_init__(self) -> None:
        if self.backend not in _BACKENDS:
            raise ConfigError(f"engine backend must be one of {_BACKENDS}, got backend={self.backend!r}")
        if not isinstance(self.model, (str, Path)) or not str(self.model):
            raise ConfigError(f"engine model must be a directory or hub id, got model={self.model!r}")
        object.__setattr__(self, "model", str(self.model))
        pairs = self.adapters.items() if isinstance(self.adapters, dict) else self.adapters
        norm: list[tuple[str, str]] = []
        for pair in pairs:
            if len(pair) != 2:
                raise ConfigError(f"an adapter must be a (name, path) pair, got {pair!r}")
            name, path = str(pair[0]), str(pair[1])
            if not _NAME_RE.match(name):
                raise ConfigError(f"adapter name must match {_NAME_RE.pattern}, got {name!r}")
            if not path:
                raise ConfigError(f"adapter {name!r} has an empty path")
            norm.append((name, path))
        names = [n for n, _ in norm]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"adapter name(s) given more than once: {dupes}")
        object.__setattr__(self, "adapters", tuple(sorted(norm)))
        if not _DEVICE_RE.match(str(self.device)):
            raise ConfigError(f"device must be auto, cpu, mps, cuda or cuda:N, got device={self.device!r}")
        if self.dtype not in DTYPES:
            raise ConfigError(f"dtype must be one of {DTYPES}, got dtype={self.dtype!r}")
        rows = self.max_batch_size
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
            raise ConfigError(f"max_batch_size must be an integer >= 1, got {rows!r}")

    @property
    def adapter_dict(self) -> dict[str, str]:
        return dict(self.adapters)

    def check_paths(self) -> None:
        """Fail early when a local model or adapter directory is missing (hub ids are left alone)."""
        looks_local = Path(self.model).is_absolute() or self.model.startswith((".", "~"))
        if looks_local and not Path(self.model).expanduser().is_dir():
            raise DataError(f"model directory not found: {self.model}")
        for name, path in self.adapters:
            if not Path(path).expanduser().is_dir():
                raise DataError(f"adapter {name!r}: directory not found: {path}")
