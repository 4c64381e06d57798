"""What a Shortcut localisation needs and costs, without torch (for the strategy's config, the spec's
validation and the pricing): its parameters, the questions each term reads, its greedy decodes and the model
it reads activations from. :mod:`railsweep.strategies.shortcut.localisation` runs it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from railsweep.errors import ConfigError
from railsweep.strategies.base import EvalContext


@dataclass(frozen=True)
class LocalisationParams:
    n_questions: int = 64  # questions for each term (leaked ones first for the comparative term)
    n_blocks: int = 16  # neuron blocks per layer for the causal term (block = ceil(d_mlp / n_blocks))
    causal: bool = True  # include the block-wise causal term (False: RMS only, ~free)
    teacher_batch: int = 8  # prompts per teacher-forced forward

    def __post_init__(self) -> None:
        if self.n_questions < 1:
            raise ConfigError(
                f"shortcut localisation needs >= 1 question, got loc_questions={self.n_questions}"
            )
        if self.n_blocks < 1:
            raise ConfigError(f"shortcut loc_blocks must be >= 1, got {self.n_blocks}")
        if self.teacher_batch < 1:
            raise ConfigError(f"shortcut teacher batch must be >= 1, got {self.teacher_batch}")


def engine_model(ctx: EvalContext):
    """(peft-wrapped model, tokenizer) of an engine that exposes them (the transformers engine)."""
    model, tok = getattr(ctx.engine, "model", None), getattr(ctx.engine, "tokenizer", None)
    if model is None or tok is None:
        raise ConfigError(
            f"shortcut localisation needs model activations; engine {getattr(ctx.engine, 'name', ctx.engine)!r} "
            "exposes no .model/.tokenizer (use the transformers engine)"
        )
    return model, tok


def select_indices(indices: Sequence[int], leaked: Collection[int], n: int, leaked_first: bool) -> list[int]:
    """The first ``n`` of ``indices``; with ``leaked_first``, of the leaked ones when any is leaked."""
    chosen = list(indices)
    if leaked_first and any(i in leaked for i in chosen):
        chosen = [i for i in chosen if i in leaked]
    return chosen[:n]


def greedy_plan(
    indices: Sequence[int], leaked: Collection[int], params: LocalisationParams, widths: Sequence[int]
) -> list[tuple[tuple[int, ...], int, bool]]:
    """The greedy decodes of one localisation, without a model: ``[(question indices, runs, patched)]``.
    Step 1 decodes the comparative term's questions once with M_co; step 2 runs 2 unpatched and 2 patched
    passes per neuron block of layers 0..L−2 over the causal term's. ``widths``: d_mlp of every layer."""
    plan = [(tuple(select_indices(indices, leaked, params.n_questions, leaked_first=True)), 1, False)]
    if params.causal:
        blocks = sum(len(range(0, w, math.ceil(w / params.n_blocks))) for w in widths[:-1])
        causal = tuple(select_indices(indices, leaked, params.n_questions, leaked_first=False))
        plan += [(causal, 2, False), (causal, 2 * blocks, True)]
    return plan
