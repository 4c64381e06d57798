"""An engine actor the pool moves to another family loads that family's model on its next call, and only then."""

from __future__ import annotations

from railsweep.sweep.run.engine_server import EngineServer


def _configs(model_dir) -> dict[str, dict]:
    base = {"backend": "transformers", "model": str(model_dir), "adapters": []}
    return {"llama": {**base, "max_batch_size": 8}, "neox": {**base, "max_batch_size": 16}}


def test_a_call_naming_another_family_loads_that_familys_model_in_place_of_its_own(tiny_model_dir):
    configs = _configs(tiny_model_dir)
    server = EngineServer(configs["llama"], threads=1, family_configs=configs)
    first = server.engine
    assert server.family == "llama" and first.max_batch_size == 8
    server.use("llama")
    assert server.engine is first and server.switches == 0  # its own family: nothing reloaded
    server.use("neox")
    assert server.family == "neox" and server.engine is not first and server.engine.max_batch_size == 16
    assert server.stats()["switches"] == 1 and server.stats()["family"] == "neox"


def test_without_family_configs_an_engine_keeps_its_model_whatever_a_call_names(tiny_model_dir):
    configs = _configs(tiny_model_dir)
    server = EngineServer(configs["llama"], threads=1)
    first = server.engine
    server.use("neox")
    assert server.engine is first and server.family is None and server.switches == 0
