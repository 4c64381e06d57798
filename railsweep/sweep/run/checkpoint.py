"""Mid-cell resume: every engine call of a cell kept on disk as it returns, so a cell killed half-way (the sweep
stopped, the machine rebooted, the actor died) decodes only what it had not decoded yet when it runs again.

A strategy decodes a cell in calls of ``readout.batch_size`` prompts (its greedy rails, then its samples).
:class:`CheckpointedEngine` keys each call by the sha256 of everything that decides its completions: the
requests (prompt, sampling settings and seed, adapter, intervention spec), the cell's weight files' sha256, the
backend, device and dtype, the engines' and interventions' source and the decoding packages' versions
(:func:`decoding_identity`). Each call's completions go, atomically, to ``<folder>/<key>.json``; a call whose file
exists is read back instead of decoded (each request's samples follow from its own seed, whatever shares the batch).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from railsweep import engines, interventions
from railsweep.atomic import write_text_atomic
from railsweep.engines.base import Completion, Request, Sample
from railsweep.provenance import package_versions

DECODING_PACKAGES = ("torch", "transformers", "tokenizers", "peft", "vllm")
DECODING_CODE = (Path(engines.__file__).parent, Path(interventions.__file__).parent)


def decoding_identity(engine: Mapping[str, Any], backend: str, device: str, dtype: str) -> str:
    """What besides the requests decides an engine's completions (``engine``: its configuration and weight files'
    sha256), as one JSON text."""
    return json.dumps({"engine": engine, "backend": backend, "device": device, "dtype": dtype,
                       "code": decoding_code_digest(), "packages": package_versions(DECODING_PACKAGES)},
                      sort_keys=True, default=str)  # fmt: skip


@functools.cache
def decoding_code_digest() -> str:
    """sha256 of the code that turns requests into completions: a change elsewhere keeps a killed cell's calls."""
    h = hashlib.sha256()
    for folder in DECODING_CODE:
        for path in sorted(folder.glob("*.py")):
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def call_key(identity: str, requests: Sequence[Request]) -> str:
    """sha256 of the identity and the requests' reprs (frozen dataclasses of plain values: a complete record)."""
    h = hashlib.sha256(identity.encode())
    for r in requests:
        h.update(b"\0" + repr(r).encode())
    return h.hexdigest()[:32]


class CheckpointedEngine:
    """``engine`` whose ``generate`` calls are kept under ``folder``; ``on_resumed`` hears the samples read back."""

    def __init__(self, engine: Any, folder: str | Path, identity: str,
                 on_resumed: Callable[[int], None] | None = None):  # fmt: skip
        self._engine = engine
        self.folder = Path(folder)
        self._identity = identity
        self._on = on_resumed
        self.resumed = 0  # samples read back
        self.name = getattr(engine, "name", "engine")
        if getattr(engine, "generate_shares", None) is not None:  # a sweep engine that lends jobs out
            self.generate_shares = self._generate_shares

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        if (out := self._read(requests)) is not None:
            return out
        out = self._engine.generate(requests)
        self._keep(requests, out)
        return out

    def _generate_shares(self, jobs: Sequence[Sequence[Request]]) -> list[list[Completion]]:
        """:meth:`railsweep.sweep.run.sharing.SharingEngine.generate_shares` of the jobs not kept yet, each kept
        as it is in hand."""
        results = [self._read(reqs) for reqs in jobs]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            done = self._engine.generate_shares([jobs[i] for i in todo],
                                                on_result=lambda k, comps: self._keep(jobs[todo[k]], comps))  # fmt: skip
            for i, comps in zip(todo, done):
                results[i] = comps
        return results

    def _path(self, requests: Sequence[Request]) -> Path:
        return self.folder / f"{call_key(self._identity, requests)}.json"

    def _read(self, requests: Sequence[Request]) -> list[Completion] | None:
        path = self._path(requests)
        if not path.is_file():
            return None
        out = [Completion([Sample(**s) for s in c]) for c in json.loads(path.read_text(encoding="utf-8"))]
        if len(out) != len(requests):
            return None
        n = sum(len(c.samples) for c in out)
        self.resumed += n
        if self._on is not None:
            self._on(n)
        return out

    def _keep(self, requests: Sequence[Request], out: Sequence[Completion]) -> None:
        write_text_atomic(self._path(requests), json.dumps([[dataclasses.asdict(s) for s in c.samples] for c in out]))

    def forget(self) -> None:
        """Remove the cell's folder (its result files are in hand)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def __getattr__(self, item: str) -> Any:  # adapters(), supports(), max_batch_size, model internals
        return getattr(self._engine, item)
