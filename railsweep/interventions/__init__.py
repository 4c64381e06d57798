"""Decoding interventions, one module each: a frozen plain-data spec (it travels to a Ray actor or into
vLLM's ``SamplingParams.extra_args`` unchanged) and its batched pure-torch math, free of device-to-host syncs.
Each engine maps a spec type to its adapter in one table (``railsweep.engines.hf_processors.PROCESSORS``,
``railsweep.engines.vllm_adapters.ADAPTERS``): :mod:`.railcap` (method.md §3; matcher :mod:`.railcap_runs`),
:mod:`.ban_top` (LNE-blocking), :mod:`.force_runner_up` (a diagnostic, transformers engine only),
:mod:`.neuron_patch` (Shortcut; a model patch), :mod:`.entropy` (LNE's readout, not an edit). torch is
imported inside the functions, so specs load without it (the sweep driver, the tables, vLLM's frontend).
"""

from __future__ import annotations

from railsweep.interventions.ban_top import BanTopSpec
from railsweep.interventions.force_runner_up import ForceRunnerUpSpec
from railsweep.interventions.neuron_patch import NeuronPatchSpec
from railsweep.interventions.railcap import RailCapSpec

Intervention = RailCapSpec | BanTopSpec | NeuronPatchSpec | ForceRunnerUpSpec

__all__ = ["BanTopSpec", "ForceRunnerUpSpec", "Intervention", "NeuronPatchSpec", "RailCapSpec"]
