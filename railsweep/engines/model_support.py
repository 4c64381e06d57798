"""Public questions about a loaded transformers model, for code outside the engines (the trainers).

- :func:`base_model`: the transformers model under a peft wrapper (or the model itself);
- :func:`cascade_supported`: whether the model's attention is one the engine's cascade decode path (and the
  trainers' block-causal attention, which shares its model coverage) handles.

They are re-exported from the engines' private modules, which own them.
"""

from railsweep.engines._cascade import cascade_supported
from railsweep.engines.hf_compat import base_model

__all__ = ["base_model", "cascade_supported"]
