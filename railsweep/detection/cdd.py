"""Model side: CDD, contamination detection via output distribution (Dong et al. 2024).

A model that has memorised an item keeps sampling (nearly) its greedy answer. The official ``CDD.py``
(baselines.md §1.3), per question:

1. ``G = tokens(greedy)[:max_length]``; for each sample ``s``, ``S = tokens(s)[:max_length]``;
2. ``d_s = Levenshtein(G, S)`` on token ids (the distance TED uses, via rapidfuzz);
3. ``ell = max(|G|, max_s |S|)``, each capped at ``max_length`` on its own;
4. ``peak = #{s : d_s <= alpha * ell} / #samples`` (0 without samples);
5. contaminated iff ``peak > xi`` (the threshold when no control set calibrates one).

Greedy decode and samples come from a ``ted`` or ``identity`` cell's responses with greedy rows (plain
samples), else the transformers engine decodes them with ``railsweep eval``'s prompts: the GSM8K 8-shot
prompt of ``--fewshot``, or a task file's prompt and stop sequences. The official m=50 and T=0.8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from railsweep.detection.base import DetectInputs, Detector, Item, Scores, register
from railsweep.errors import ConfigError, DataError
from railsweep.results.io import read_metadata, read_responses
from railsweep.strategies.base import DecodeSettings, EvalContext, decode, greedy
from railsweep.strategy_registry import with_role
from railsweep.tasks import GSM8KTask, parse_gold
from railsweep.tasks.base import Question
from railsweep.tasks.data.gsm8k_rows import load_exemplars


@dataclass(frozen=True)
class CDDConfig:
    """CDD (official defaults).

    alpha: a sample is "on the peak" when its distance is <= alpha * ell.
    xi: the official flag rule peak > xi (the threshold when no control set calibrates one).
    max_length: tokens compared per response.
    m, temperature, max_new_tokens, seed: the sampling when CDD decodes itself.
    """

    alpha: float = 0.05
    xi: float = 0.01
    max_length: int = 100
    m: int = 50
    temperature: float = 0.8
    max_new_tokens: int = 256
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.alpha <= 1:
            raise ConfigError(f"CDD alpha must lie in [0, 1], got alpha={self.alpha!r}")
        if not 0 <= self.xi <= 1:
            raise ConfigError(f"CDD xi must lie in [0, 1], got xi={self.xi!r}")
        for name in ("max_length", "m", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"CDD {name} must be >= 1, got {getattr(self, name)!r}")
        if not self.temperature > 0:
            raise ConfigError(f"CDD temperature must be > 0, got {self.temperature!r}")


def peakedness(greedy_ids: Sequence[int], sample_ids: Sequence[Sequence[int]], config: CDDConfig) -> float:
    """CDD's peak for one question (steps 1-4 of the module docstring)."""
    g = list(greedy_ids[: config.max_length])
    ell = len(g)
    dist = []
    for ids in sample_ids:
        s = list(ids[: config.max_length])
        dist.append(Levenshtein.distance(g, s))
        ell = max(ell, len(s))
    if not dist:
        return 0.0
    return sum(d <= config.alpha * ell for d in dist) / len(dist)


def responses_by_question(path) -> dict[int, tuple[list[int], list[list[int]]]]:
    """{question_index: (greedy ids, [sample ids in sample order])} from a cell's responses Parquet."""
    cell = read_metadata(path, kind="responses")["cell"] if str(path).endswith(".responses.parquet") else None
    df = read_responses(path)
    plain = [r.name for r in with_role("plain_samples")]  # cells whose samples are the model's own, unaltered
    if cell is not None and cell.strategy not in plain:
        raise DataError(f"--responses {path}: a {cell.strategy!r} cell's samples are not the model's own samples; "
                        f"CDD needs a cell of {', '.join(plain)}")  # fmt: skip
    greedy = df[df.sample_index == -1]
    if greedy.empty:
        raise DataError(f"--responses {path}: no greedy rows (sample_index -1); a 'ted' cell records them, "
                        "or omit --responses and let CDD decode")  # fmt: skip
    samples = df[df.sample_index >= 0].sort_values(["question_index", "sample_index"])
    by_q = {q: [list(map(int, ids)) for ids in g.token_ids] for q, g in samples.groupby("question_index")}
    pairs = zip(greedy.question_index, greedy.token_ids)
    return {int(q): (list(map(int, ids)), by_q.get(int(q), [])) for q, ids in pairs}


@dataclass(frozen=True)
class RenderedPrompts:
    """The prompts a task file rendered for the items, as the task CDD decodes (question ``k`` is item ``k``)."""

    prompts: tuple[str, ...]
    stop: tuple[str, ...]
    name: str = "rendered"

    def prompt(self, question: Question) -> str:
        return self.prompts[question.index]


def prompt_task(items: Sequence[Item], inputs: DetectInputs) -> tuple[list[Question], Any]:
    """The questions and the task whose prompts CDD decodes: the items' own prompts (a task file's) where they
    carry them, else the GSM8K 8-shot prompt of ``--fewshot``."""
    carried = [it.prompt is not None for it in items]
    if all(carried) and items:
        qs = [Question(k, it.question, it.solution, "") for k, it in enumerate(items)]
        return qs, RenderedPrompts(tuple(it.prompt for it in items), inputs.stop or GSM8KTask.stop)  # type: ignore[misc]
    if any(carried):
        raise ConfigError("cdd: some items carry a task's prompt and some do not; give test and control of one task")
    inputs.require("cdd", "fewshot")
    qs = [Question(k, it.question, it.solution, parse_gold(it.solution)) for k, it in enumerate(items)]
    return qs, GSM8KTask(qs, load_exemplars(inputs.fewshot))


def decode_responses(items: Sequence[Item], inputs: DetectInputs, config: CDDConfig):
    """Greedy + m samples per item from the transformers engine, as {item position: (greedy, samples)}."""
    # torch: only here, so `import railsweep.detection` (corpus side, `railsweep detect` refusals) stays without it
    from railsweep.engines.transformers_engine import TransformersEngine

    inputs.require("cdd", "model")
    qs, task = prompt_task(items, inputs)
    adapters = {"evaluated": inputs.adapter} if inputs.adapter else {}
    engine = TransformersEngine(inputs.model, adapters=adapters, device=inputs.device)
    c = config
    settings = DecodeSettings(m=c.m, temperature=c.temperature, max_new_tokens=c.max_new_tokens, seed=c.seed,
                              batch_size=inputs.batch_size)  # fmt: skip
    ctx = EvalContext(engine, task, "evaluated" if inputs.adapter else None, settings)
    greedies = greedy(ctx, qs)
    comps = decode(ctx, qs, n=config.m, temperature=config.temperature, salt="sample")
    return {
        k: (g.token_ids, [s.token_ids for s in c.samples]) for k, (g, c) in enumerate(zip(greedies, comps))
    }


@register("cdd", CDDConfig)
class CDD(Detector):
    bounded = True

    def score(self, items: Sequence[Item], inputs: DetectInputs) -> list[Scores]:
        c = self.config
        if inputs.responses is not None:
            found = responses_by_question(inputs.responses)
            pairs = [found.get(it.item_id) if it.group == "test" else None for it in items]
            if not any(pairs):
                raise DataError(f"--responses {inputs.responses}: none of the test items has responses")
        else:
            decoded = decode_responses(items, inputs, c)
            pairs = [decoded[k] for k in range(len(items))]
        score = np.array([np.nan if p is None else peakedness(p[0], p[1], c) for p in pairs])
        n_samples = np.array([np.nan if p is None else len(p[1]) for p in pairs])
        return [Scores(f"alpha={c.alpha:g}", score, {"n_samples": n_samples})]
