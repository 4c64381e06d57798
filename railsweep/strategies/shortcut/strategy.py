"""The Shortcut strategy: M_co with its top-K shortcut neurons carrying a reference model's activations.

Per run (baselines.md §3.6, §3.10):

1. resolve K (``k``, else ``ceil(k_fraction · #neurons in layers 0..L−2)``);
2. pick the neurons: ranks ``patch_start .. patch_start+K`` of the cached localisation (``control="ranked"``),
   or K neurons drawn uniformly from layers 0..L−2 with ``control_seed`` (``"random"``, the official control);
3. decode with a :class:`NeuronPatchSpec` whose reference is the base model (``reference="base"``, official)
   or M_cl (``"clean"``): ``readout="sampling"`` (default; railsweep's extension: m patched samples) or
   ``"greedy"`` (official: one patched greedy decode, replicated m times).

K=0 patches nothing, skips localisation, and reproduces Identity.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from railsweep.errors import ConfigError
from railsweep.interventions.neuron_patch import NeuronPatchSpec, mlp_widths, spec_from_ranking
from railsweep.strategies.base import (
    DecodeSettings,
    EvalContext,
    QuestionOutcome,
    StrategyBase,
    greedy_readout,
    register,
    sample_and_grade,
    sampled_per_question,
)
from railsweep.strategies.shortcut.plan import LocalisationParams, engine_model, greedy_plan
from railsweep.tasks.base import Question


@dataclass(frozen=True)
class ShortcutConfig:
    """k: neurons patched (None: use k_fraction). Official scripts use 3k–16k of Llama-2-7B's 341k.
    k_fraction: K as a fraction of the neurons in layers 0..L−2 (default 2%: ~6.8k for Llama-2-7B).
    patch_start: first rank patched (official ``--patch_start``; 0 = the top).
    control: "ranked" (localised neurons) or "random" (uniformly drawn neurons, seeded by control_seed).
    reference: activation source at evaluation: "base" (official; ctx.base_adapter) or "clean" (M_cl).
    readout: "sampling" (m patched samples) or "greedy" (official; m=1 replicated).
    loc_questions / loc_blocks / loc_causal: localisation budget (see localisation.py).
    """

    k: int | None = None
    k_fraction: float = 0.02
    patch_start: int = 0
    control: Literal["ranked", "random"] = "ranked"
    control_seed: int = 0
    reference: Literal["base", "clean"] = "base"
    readout: Literal["sampling", "greedy"] = "sampling"
    loc_questions: int = 64
    loc_blocks: int = 16
    loc_causal: bool = True
    switched_off: ClassVar[dict[str, Any]] = {"k": 0}  # patches no neuron

    def __post_init__(self) -> None:
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 0):
            raise ConfigError(f"shortcut k must be None or an integer >= 0, got k={self.k!r}")
        if not 0 <= self.k_fraction <= 1:
            raise ConfigError(f"shortcut k_fraction must be in [0, 1], got {self.k_fraction}")
        if self.patch_start < 0:
            raise ConfigError(f"shortcut patch_start must be >= 0, got {self.patch_start}")
        for name, allowed in (
            ("control", ("ranked", "random")),
            ("reference", ("base", "clean")),
            ("readout", ("sampling", "greedy")),
        ):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"shortcut {name} must be one of {allowed}, got {getattr(self, name)!r}")
        self.loc_params()  # validates the localisation budget

    def loc_params(self) -> LocalisationParams:
        return LocalisationParams(self.loc_questions, self.loc_blocks, self.loc_causal)


def resolve_k(config: ShortcutConfig, n_neurons: int) -> int:
    k = config.k if config.k is not None else math.ceil(config.k_fraction * n_neurons - 1e-9)
    if config.patch_start + k > n_neurons:
        raise ConfigError(
            f"shortcut patches ranks {config.patch_start}..{config.patch_start + k} "
            f"but layers 0..L-2 hold only {n_neurons} neurons"
        )
    return k


def random_neurons(widths: Sequence[int], k: int, seed: int) -> np.ndarray:
    """K (layer, neuron) pairs drawn without replacement, uniformly over layers 0..L−2."""
    pairs = np.array([(layer, j) for layer, w in enumerate(widths) for j in range(w)], dtype=np.int64)
    pick = np.random.default_rng(seed).choice(len(pairs), size=k, replace=False)
    return pairs[np.sort(pick)]


# vLLM has no neuron patching: a vLLM sweep runs these cells on a transformers engine over the same weights.
@register("shortcut", ShortcutConfig, display="Shortcut", tables=("1", "2", "3"),
          interventions=(NeuronPatchSpec,), backends=("transformers",), fallback=True)
class Shortcut(StrategyBase):
    def neurons(self, ctx: EvalContext, questions: Sequence[Question]) -> NeuronPatchSpec:
        """Step 1–2: the NeuronPatchSpec this run applies."""
        c = self.config
        reference = ctx.base_adapter if c.reference == "base" else ctx.clean_adapter
        if c.reference == "clean" and reference is None:
            raise ConfigError("shortcut reference='clean' needs EvalContext.clean_adapter")
        if c.k == 0:
            return NeuronPatchSpec(neurons=(), reference_adapter=reference)
        model, _ = engine_model(ctx)
        widths = mlp_widths(model)[:-1]
        k = resolve_k(c, sum(widths))
        if k == 0:
            return NeuronPatchSpec(neurons=(), reference_adapter=reference)
        if c.control == "random":
            chosen = random_neurons(widths, k, c.control_seed)
        else:
            # torch: the localisation's forward passes; the config, the spec's validation and the pricing need none
            from railsweep.strategies.shortcut.localisation import localise

            ranking = localise(ctx, questions, c.loc_params()).ranking
            chosen = ranking[c.patch_start : c.patch_start + k]
        return spec_from_ranking([tuple(p) for p in chosen.tolist()], reference)

    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        if not ctx.engine.supports(NeuronPatchSpec):
            raise ConfigError(
                f"engine {ctx.engine.name!r} does not implement NeuronPatchSpec; run Shortcut on the transformers engine"
            )
        spec = self.neurons(ctx, questions)
        run_ctx = greedy_readout(ctx) if self.config.readout == "greedy" else ctx
        outcomes = sample_and_grade(run_ctx, questions, intervention=lambda q: spec)
        k = sum(len(idx) for _, idx in spec.neurons)
        for out in outcomes:
            out.extras = {"k_patched": k, "layers_patched": len(spec.neurons)}
        return outcomes

    def decodes(self, settings: DecodeSettings) -> int:
        return sampled_per_question(settings, greedy=self.config.readout == "greedy")

    def one_off(
        self, indices: Sequence[int], leaked: Collection[int], widths: Sequence[int]
    ) -> tuple[str, list[tuple[tuple[int, ...], int, bool]]] | None:
        """The localisation this run needs, as (key, :func:`~.plan.greedy_plan`), or None; cells with the same
        key share one (cached) localisation. ``leaked``: which of the cell's ``indices`` M_co saw."""
        c = self.config
        if c.control != "ranked" or resolve_k(c, sum(widths[:-1])) == 0:
            return None
        params = c.loc_params()
        plan = greedy_plan(indices, leaked, params, widths)
        return json.dumps({"params": dataclasses.asdict(params), "plan": plan}, sort_keys=True), plan
