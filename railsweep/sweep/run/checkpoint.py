"""Mid-cell resume: every engine call of a cell kept on disk as it returns, so a cell killed half-way (the sweep
stopped, the machine rebooted, the actor died) decodes only what it had not decoded yet when it runs again.

A strategy decodes a cell in calls of ``readout.batch_size`` prompts (its greedy rails, then its samples).
:class:`CheckpointedEngine` keys each call by the sha256 of everything that decides its completions: the
requests (prompt, sampling settings and seed, adapter, intervention spec), the cell's weight files' sha256, the
backend, device and dtype, the code's git commit and the decoding packages' versions (:func:`decoding_identity`).
Each call's completions go, atomically, to ``<folder>/<key>.json``; a call whose file exists is read back instead
of decoded (the same completions: each request's samples follow from its own seed, whatever else shares the
batch). The engine server keeps one folder per cell under its strategy cache and removes it once the cell's result
files are in hand.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from railsweep.atomic import write_text_atomic
from railsweep.engines.base import Completion, Request, Sample
from railsweep.provenance import git_info, package_versions

DECODING_PACKAGES = ("railsweep", "torch", "transformers", "tokenizers", "peft", "vllm")


def decoding_identity(weights: Mapping[str, Any], backend: str, device: str, dtype: str) -> str:
    """What besides the requests decides an engine's completions, as one JSON text."""
    return json.dumps({"weights": weights, "backend": backend, "device": device, "dtype": dtype,
                       "commit": git_info()["commit"], "packages": package_versions(DECODING_PACKAGES)},
                      sort_keys=True, default=str)  # fmt: skip


def call_key(identity: str, requests: Sequence[Request]) -> str:
    """sha256 of the identity and the requests' reprs (frozen dataclasses of plain values: a complete record)."""
    h = hashlib.sha256(identity.encode())
    for r in requests:
        h.update(b"\0" + repr(r).encode())
    return h.hexdigest()[:32]


def _dump(completions: Sequence[Completion]) -> str:
    return json.dumps([[dataclasses.asdict(s) for s in c.samples] for c in completions])


def _load(text: str) -> list[Completion]:
    return [Completion(samples=[Sample(**s) for s in c]) for c in json.loads(text)]


class CheckpointedEngine:
    """``engine`` whose ``generate`` calls are kept under ``folder`` (see the module docstring); ``on_resumed``
    hears the samples read back instead of decoded."""

    def __init__(self, engine: Any, folder: str | Path, identity: str,
                 on_resumed: Callable[[int], None] | None = None):  # fmt: skip
        self._engine = engine
        self.folder = Path(folder)
        self._identity = identity
        self._on = on_resumed
        self.resumed = 0  # samples read back
        self.name = getattr(engine, "name", "engine")

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        path = self.folder / f"{call_key(self._identity, requests)}.json"
        if path.is_file():
            out = _load(path.read_text(encoding="utf-8"))
            if len(out) == len(requests):
                n = sum(len(c.samples) for c in out)
                self.resumed += n
                if self._on is not None:
                    self._on(n)
                return out
        out = self._engine.generate(requests)
        write_text_atomic(path, _dump(out))
        return out

    def forget(self) -> None:
        """Remove the cell's folder (its result files are in hand)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def __getattr__(self, item: str) -> Any:  # adapters(), supports(), generate_shares(), model internals
        return getattr(self._engine, item)
