"""The one place that turns an :class:`~railsweep.engines.config.EngineConfig` into a loaded engine, importing
the vLLM backend only when it is asked for."""

from __future__ import annotations

from typing import Any

from railsweep.engines.config import EngineConfig
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import MissingDependencyError


def build_engine(config: EngineConfig) -> Any:
    """Instantiate the engine ``config`` describes (loads the model and its adapters)."""
    if config.backend == "vllm":
        try:
            from railsweep.engines.vllm_engine import VLLMEngine  # vllm is optional (railsweep[vllm])
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] == "vllm":
                raise MissingDependencyError("vllm", extra="vllm", purpose="the vllm engine backend") from e
            raise
        # vLLM places the model itself; device is not one of its arguments.
        return VLLMEngine(config.model, adapters=config.adapter_dict, dtype=config.dtype,
                          max_num_seqs=config.max_batch_size,
                          llm_kwargs={"trust_remote_code": True} if config.trust_remote_code else None)  # fmt: skip

    return TransformersEngine(config.model, adapters=config.adapter_dict, device=config.device, dtype=config.dtype,
                              trust_remote_code=config.trust_remote_code,
                              max_batch_size=config.max_batch_size)  # fmt: skip
