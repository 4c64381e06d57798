"""The calibration check's finished parts, kept in the cache: a killed ``railsweep miniworld check`` picks up where
it stopped, and a model two worlds share (the smollm2 worlds' M_cl) is read out once.

Each model's readout and M_cl's forced-departure texts are written, once finished, as JSON under
``<cache>/miniworld/check-parts/``, named by the model and a key digesting the world's data, that model's weight
files and every setting that changes a sample (:data:`KEYED`; not ``workers``). A part is written to a temporary
name and renamed: it is there whole or not at all.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from railsweep.atomic import write_text_atomic
from railsweep.diagnostics.figure1 import Readout
from railsweep.engines.base import Sample
from railsweep.strategies.base import QuestionOutcome
from railsweep.tasks.base import Grade

KEYED = ("m", "temperature", "max_new_tokens", "seed", "limit", "device", "dtype", "batch_size", "departures")

def part_path(world, family: str, adapter: str, settings, what: str) -> Path:
    """Where the check keeps ``what`` ("readout", "departures") of ``family``'s ``adapter`` under ``settings``."""
    prefix = f"families/{family}/"
    mine = (f"{prefix}base/", f"{prefix}adapters/{adapter}/")
    weights = {k[len(prefix) :]: v for k, v in world.weights["weights"].items() if k.startswith(mine)}
    fields = {name: getattr(settings, name) for name in KEYED}
    blob = json.dumps({"data": world.manifest["data_digest"], "weights": weights, **fields}, sort_keys=True)
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return Path(world.root).parent / "check-parts" / f"{family}-{adapter}-{what}-{key}.json"


def write_json(path: Path, payload) -> None:
    """Keep a finished part; where the cache is read-only, a warning says it is not kept."""
    try:
        write_text_atomic(path, json.dumps(payload))
    except OSError as err:
        print(f"[check] warning: {path.name} not kept ({err}); a rerun decodes it again", file=sys.stderr)


def read_json(path: Path):
    """The part at ``path``, or None when it is not there (or was left unreadable)."""
    try:
        return json.loads(Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def dump_readout(run: Readout, arrays: dict) -> dict:
    outcomes = [{"index": o.index, "c": int(o.c), "m": int(o.m), "r01": int(o.r01),
                 "samples": [dataclasses.asdict(smp) for smp in o.samples],
                 "grades": [dataclasses.asdict(g) for g in o.grades]} for o in run.outcomes]  # fmt: skip
    return {"adapter": run.adapter, "greedy": [dataclasses.asdict(g) for g in run.greedy], "outcomes": outcomes,
            "arrays": {k: np.asarray(v).tolist() for k, v in arrays.items()}}  # fmt: skip


def load_readout(payload: dict) -> tuple[Readout, dict]:
    outcomes = [QuestionOutcome(index=o["index"], samples=[Sample(**s) for s in o["samples"]],
                                grades=[Grade(**g) for g in o["grades"]], c=o["c"], m=o["m"], r01=o["r01"])
                for o in payload["outcomes"]]  # fmt: skip
    greedy = [Sample(**g) for g in payload["greedy"]]
    arrays = {k: np.asarray(v) for k, v in payload["arrays"].items()}
    return Readout(payload["adapter"], greedy, outcomes), arrays
