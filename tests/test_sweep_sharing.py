"""A cell's decoding jobs (Shortcut's patched localisation runs, any cell's sampled batches) are shared with the
family's idle engines through the pool, and the cell's results are the same as when its own engine decodes them all."""

from __future__ import annotations

import dataclasses
import io

import pyarrow.parquet as pq
import pytest
import yaml

from railsweep.sweep.plan.cells import expand
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import spec_from_dict

pytestmark = pytest.mark.slow

SPEC = """
name: sharing
source: miniworld
miniworld_preset: smoke
domains: [gsm8k]
strategies:
  - name: shortcut
    params: {loc_questions: 4, loc_blocks: 3}
  - name: identity
readout: {m: 2, temperature: 0.7, max_new_tokens: 24, seed: 0, batch_size: 16, limit: 4}
scoring: {B: 10, n_boot: 20, seed: 0}
engine: {backend: transformers, device: cpu}
tracking: {uri: "http://127.0.0.1:5000", experiment: railsweep-sharing}
"""


def _data(blob: bytes):
    return pq.read_table(io.BytesIO(blob)).replace_schema_metadata(None)


@pytest.mark.parametrize(
    "strategy, readout, engine",
    [("shortcut", {}, {}), ("identity", {"batch_size": 4, "limit": 8, "m": 3}, {"max_batch_size": 6})],
    ids=["a localisation's runs", "sampled batches"],
)
def test_jobs_shared_with_an_idle_engine_give_the_cells_samples_unchanged(
    ray_client, smoke_world, tmp_path, strategy, readout, engine
):
    import ray

    from railsweep.sweep.plan.pool import create_engine_pool
    from railsweep.sweep.plan.resources import engine_config
    from railsweep.sweep.run.engine_server import create_engine_actor

    raw = yaml.safe_load(SPEC)
    raw["readout"].update(readout)  # sampled: 2 calls of 4 questions x 3 samples, shared as 4 jobs of 2 (6 rows)
    raw["engine"].update(engine)
    spec = resolve_spec(dataclasses.replace(spec_from_dict(raw), cache_dir=str(smoke_world)))
    fam = spec.families[0]
    (cell,) = [c.config for c in expand(spec) if c.config.strategy == strategy and c.config.role != "clean"]
    names = ["sharing-a", "sharing-b", "alone"]
    engines = {
        name: create_engine_actor(name, engine_config(spec, fam, "cpu"), num_gpus=0, num_cpus=0.3, threads=1,
                                  max_restarts=0, max_task_retries=0, cache_dir=str(tmp_path / name),
                                  prompts_per_call=spec.readout.batch_size)  # fmt: skip
        for name in names
    }
    pool = create_engine_pool({fam.name: ["sharing-a", "sharing-b"]})
    try:
        ray.get([e.ready.remote() for e in engines.values()], timeout=600)
        assert ray.get(pool.acquire.remote(fam.name, cell.cell_id)) == "sharing-a"
        shared = engines["sharing-a"].run_cell.remote(cell.to_dict(), None, pool=pool, name="sharing-a")
        alone = engines["alone"].run_cell.remote(cell.to_dict())
        shared, alone = ray.get([shared, alone], timeout=900)
        stats = ray.get(engines["sharing-b"].stats.remote())
        assert stats["busy_s"] > 0 and stats["cells"] == 0  # b decoded shares of a's cell, no cell of its own
        snapshot = ray.get(pool.snapshot.remote())
        assert snapshot["held"] == {cell.cell_id: "sharing-a"} and snapshot["free"][fam.name] == ["sharing-b"]
        for kind in ("responses", "questions"):
            assert _data(shared["files"][kind][1]).equals(_data(alone["files"][kind][1])), kind
    finally:
        for e in engines.values():
            ray.kill(e, no_restart=True)
        ray.kill(pool, no_restart=True)
