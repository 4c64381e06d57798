"""An engine actor routes strategies its backend cannot run (Shortcut on vLLM) to a transformers engine."""

from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.interventions import NeuronPatchSpec
from railsweep.sweep.run.engine_server import EngineServer


class _NoPatching:
    """The primary backend as vLLM presents itself: no neuron patching."""

    def __init__(self, inner):
        self.inner = inner

    def supports(self, kind):
        return kind is not NeuronPatchSpec and self.inner.supports(kind)


def test_strategy_needing_neuron_patching_gets_a_transformers_engine_built_once(tiny_model_dir):
    server = EngineServer({"backend": "transformers", "model": str(tiny_model_dir), "adapters": []}, threads=1)
    primary = _NoPatching(server.engine)
    server.engine = primary

    assert server.engine_for("identity") is primary
    assert server.engine_for("railcap") is primary
    fallback = server.engine_for("shortcut")
    assert isinstance(fallback, TransformersEngine) and fallback.supports(NeuronPatchSpec)
    assert server.engine_for("shortcut") is fallback


def test_strategy_supported_by_the_primary_engine_is_not_rerouted(tiny_model_dir):
    server = EngineServer({"backend": "transformers", "model": str(tiny_model_dir), "adapters": []}, threads=1)
    assert server.engine_for("shortcut") is server.engine
