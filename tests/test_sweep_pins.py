"""The smoke sweep's cell ids are pinned, and how an engine batches its prompts changes the speed of a sweep, never
its cells, its samples or their per-question tables (every column, by question); tests/test_engine_placement.py
checks the same across engines of one and two threads.
The cell ids are computed on fixed placeholder paths (a cell id hashes the model path), so they hold on any machine.
Samples are checked against themselves rather than pinned digests (a world's weights, and so its samples, follow the
CPU it was built on: docs/miniworld.md): one prompt per forward pass and the preset's batch give the same samples and
tables, byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from railsweep.results.io import read_cell, read_responses
from railsweep.sweep.plan.cells import expand
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sections import FamilySpec
from railsweep.sweep.spec.sweep_spec import load_spec

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


def _run_cells(spec, prompts_per_call: int, out: Path) -> tuple[dict, dict]:
    """Every smoke cell decoded by one engine server: (adapter, label) -> samples digest, and -> table digest."""
    from railsweep.sweep.plan.resources import engine_config
    from railsweep.sweep.run.engine_server import EngineServer

    server = EngineServer(engine_config(spec, spec.families[0], "cpu"), threads=1, prompts_per_call=prompts_per_call)
    out.mkdir()
    samples, tables = {}, {}
    for cell in expand(spec):
        c = cell.config
        files = server.run_cell(c.to_dict())["files"]
        for name, blob in (files["responses"], files["questions"]):
            (out / name).write_bytes(blob)
        samples[(c.adapter, cell.label())] = _samples_digest(read_responses(out / files["responses"][0]))
        tables[(c.adapter, cell.label())] = _table_digest(read_cell(out / files["questions"][0])[1])
    return samples, tables


def test_how_many_prompts_an_engine_decodes_at_once_never_changes_a_cells_samples(smoke_world, tmp_path):
    # whatever this machine's build of the smoke world: one prompt per forward pass against the preset's batch
    spec = resolve_spec(dataclasses.replace(load_spec("smoke"), cache_dir=str(smoke_world)))
    one = _run_cells(spec, 1, tmp_path / "one")
    batched = _run_cells(spec, spec.readout.batch_size, tmp_path / "batched")
    assert spec.readout.batch_size > 1
    assert sum(n for n, _ in one[0].values()) > 0
    assert one == batched
