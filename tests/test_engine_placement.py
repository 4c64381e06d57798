"""Which engine decodes a cell never changes its samples: the engine pool leases a cell to whichever engine of its
family is free, so the same cell decoded by two engine actors (two worker processes, one and two torch threads)
must give the same responses, byte for byte, and the same per-question table (seeded, batch-invariant sampling)."""

from __future__ import annotations

import dataclasses
import io

import pyarrow.parquet as pq
import pytest

from railsweep.sweep.plan.cells import expand
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import load_spec

pytestmark = pytest.mark.slow


def _data(blob: bytes):
    """A result file's table without its schema metadata (provenance, timings): the decoded data only."""
    return pq.read_table(io.BytesIO(blob)).replace_schema_metadata(None)


def test_a_cell_decoded_on_two_engines_gives_the_same_samples_byte_for_byte(ray_client, smoke_world):
    import ray

    from railsweep.sweep.plan.resources import engine_config
    from railsweep.sweep.run.engine_server import create_engine_actor

    spec = resolve_spec(dataclasses.replace(load_spec("smoke"), cache_dir=str(smoke_world)))
    fam = spec.families[0]
    cells = [c.config for c in expand(spec) if c.label() in ("Identity", "RailCap n=2 cap")]
    cells = [c for c in cells if c.adapter in ("clean", "co_gsm8k")]
    assert len(cells) == 3  # the clean reference, Identity and RailCap n=2 on the contaminated model
    engines = [
        create_engine_actor(f"placement-{threads}", engine_config(spec, fam, "cpu"), num_gpus=0,
                            num_cpus=0.5, threads=threads, max_restarts=0, max_task_retries=0,
                            prompts_per_call=spec.readout.batch_size)  # fmt: skip
        for threads in (1, 2)
    ]
    try:
        ready = ray.get([e.ready.remote() for e in engines], timeout=600)
        assert ready[0]["pid"] != ready[1]["pid"] and [r["threads"] for r in ready] == [1, 2]
        for cfg in cells:
            a, b = ray.get([e.run_cell.remote(cfg.to_dict()) for e in engines], timeout=900)
            assert a["n_samples"] == b["n_samples"] > 0
            for kind in ("responses", "questions"):
                left, right = _data(a["files"][kind][1]), _data(b["files"][kind][1])
                assert left.num_rows > 0 and left.equals(right), (cfg.cell_id, kind)
            texts = [_data(out["files"]["responses"][1]).column("text").to_pylist() for out in (a, b)]
            assert [t.encode() for t in texts[0]] == [t.encode() for t in texts[1]]
    finally:
        for e in engines:
            ray.kill(e, no_restart=True)
