"""Decoding interventions: one module per intervention, each holding its spec and its batched math.

A spec is a frozen, plain-data description of one request's intervention; it travels unchanged to a Ray
actor or into vLLM's ``SamplingParams.extra_args``. The math is pure torch, batched over rows and free of
device-to-host syncs; each engine maps a spec type to its adapter through one table
(``railsweep.engines.hf_processors.PROCESSORS``, ``railsweep.engines.vllm_adapters.ADAPTERS``).

- :mod:`.railcap`: RailCap (method.md §3); :mod:`.railcap_runs`, its incremental matcher;
- :mod:`.ban_top`: LNE-blocking's ban of the top-1 token;
- :mod:`.force_runner_up`: emit the runner-up at chosen steps (a diagnostic, transformers engine only);
- :mod:`.neuron_patch`: Shortcut's neuron patching (a model patch, in ``railsweep.engines.neuron_patch``);
- :mod:`.entropy`: the per-step entropy readout (LNE's gauge), not an edit.

The modules import torch inside their functions, so specs load without it (the sweep driver, the tables and
vLLM's frontend read them).
"""

from __future__ import annotations

from railsweep.interventions.ban_top import BanTopSpec
from railsweep.interventions.force_runner_up import ForceRunnerUpSpec
from railsweep.interventions.neuron_patch import NeuronPatchSpec
from railsweep.interventions.railcap import RailCapSpec

Intervention = RailCapSpec | BanTopSpec | NeuronPatchSpec | ForceRunnerUpSpec

__all__ = ["BanTopSpec", "ForceRunnerUpSpec", "Intervention", "NeuronPatchSpec", "RailCapSpec"]
