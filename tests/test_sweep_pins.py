"""The smoke sweep's cell ids and samples are pinned: how the engines batch, thread and compact their caches changes
the speed of a sweep, never its cells or its samples.

Their per-question tables are pinned too (every column, by question).
The cell ids are computed on fixed placeholder paths (a cell id hashes the model path), so they hold on any machine.
The sample digests hold for the smoke world whose base weights were pinned with them: a world built elsewhere (its
training threads follow the machine's CPU count) gets other weights, and that test skips with the reason.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from railsweep.results.io import read_cell, read_responses
from railsweep.sweep.cells import expand
from railsweep.sweep.resolve import resolve_spec
from railsweep.sweep.sections import FamilySpec
from railsweep.sweep.spec import load_spec

# RailCap's cells carry its 'trajectory' parameter (default 'answer') in their resolved config since it was added.
PINNED_CELL_IDS = [
    "b62bd5b7d0273d4b",
    "d67e7ec1b682757f",
    "355392cdeba80e6f",
    "c60b5c9899f38fb2",
    "5787762188b49a1f",
    "65b14462b81a78e6",
    "ee04c99386581a26",
    "49b20c4444cf3bf8",
    "f3feea2d51152c62",
]
PINNED_WEIGHTS = "70b181e31fa3164c"  # sha256 prefix of the smoke world's llama base safetensors
# (adapter, cell label) -> (response rows, sha256 prefix of every row's (question, sample, token ids))
PINNED_SAMPLES = {
    ("clean", "Identity"): (24, "59b4e36916c30203"),
    ("co_gsm8k", "Identity"): (24, "025ba3412b379dab"),
    ("co_gsm8k", "All-Zero"): (0, "e3b0c44298fc1c14"),
    ("co_gsm8k", "RailCap n=2 cap"): (30, "a5f99d2eff041f5d"),
    ("co_gsm8k", "RailCap n=4 cap"): (30, "40fc0ea0c421ea8d"),
    ("co_pq", "Identity"): (24, "f02ef795f8bba6cb"),
    ("co_pq", "All-Zero"): (0, "e3b0c44298fc1c14"),
    ("co_pq", "RailCap n=2 cap"): (30, "781114afab2aaa76"),
    ("co_pq", "RailCap n=4 cap"): (30, "6c542b6f86f7dffa"),
}


# (adapter, cell label) -> sha256 prefix of the cell's per-question table
PINNED_TABLES = {
    ("clean", "Identity"): "e1ab5fa0f7bc037d",
    ("co_gsm8k", "Identity"): "05058dbf90697b66",
    ("co_gsm8k", "All-Zero"): "ee16618f5f920bca",
    ("co_gsm8k", "RailCap n=2 cap"): "e1446136e205771a",
    ("co_gsm8k", "RailCap n=4 cap"): "ea25f972d0ff657d",
    ("co_pq", "Identity"): "8b98fde219a8057c",
    ("co_pq", "All-Zero"): "ee16618f5f920bca",
    ("co_pq", "RailCap n=2 cap"): "eb9716babf563c10",
    ("co_pq", "RailCap n=4 cap"): "5c0519b585f97b2e",
}


def _placeholder_spec():
    base = "/pinned/llama"
    adapters = tuple((a, f"{base}/{a}") for a in ("clean", "co_gsm8k", "co_pq"))
    return dataclasses.replace(
        load_spec("smoke"),
        source="paths",
        families=(FamilySpec("llama", f"{base}/base", adapters),),
        data_dir="/pinned/data",
        leak_split="/pinned/leak_split.json",
    )


def test_smoke_sweep_cell_ids_are_pinned():
    assert [c.cell_id for c in expand(_placeholder_spec())] == PINNED_CELL_IDS


def _weights_digest(base: str) -> str:
    h = hashlib.sha256()
    for f in sorted(Path(base).glob("*.safetensors")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _samples_digest(df) -> tuple[int, str]:
    h = hashlib.sha256()
    for row in df.sort_values(["question_index", "sample_index"]).itertuples():
        h.update(
            json.dumps(
                [int(row.question_index), int(row.sample_index), [int(t) for t in row.token_ids]]
            ).encode()
        )
    return len(df), h.hexdigest()[:16]


def _table_digest(df) -> str:
    """sha256 prefix of a per-question table's values (every column, rows by question)."""
    df = df.sort_values("question_index").reset_index(drop=True)
    return hashlib.sha256(df.to_csv(index=False, float_format="%.12g").encode()).hexdigest()[:16]


def test_smoke_sweep_samples_are_pinned_on_the_pinned_world(smoke_world, tmp_path):
    from railsweep.sweep.engine_server import EngineServer
    from railsweep.sweep.plan import engine_config

    spec = resolve_spec(dataclasses.replace(load_spec("smoke"), cache_dir=str(smoke_world)))
    fam = spec.families[0]
    if _weights_digest(fam.base) != PINNED_WEIGHTS:
        pytest.skip(
            "this smoke world was trained to other weights than the pinned one (machine-dependent build)"
        )
    server = EngineServer(
        engine_config(spec, fam, "cpu"), threads=1, prompts_per_call=spec.readout.batch_size
    )
    got, tables = {}, {}
    for cell in expand(spec):
        c = cell.config
        files = server.run_cell(c.to_dict())["files"]
        for name, blob in (files["responses"], files["questions"]):
            (tmp_path / name).write_bytes(blob)
        got[(c.adapter, cell.label())] = _samples_digest(read_responses(tmp_path / files["responses"][0]))
        tables[(c.adapter, cell.label())] = _table_digest(read_cell(tmp_path / files["questions"][0])[1])
    assert got == PINNED_SAMPLES
    assert tables == PINNED_TABLES
