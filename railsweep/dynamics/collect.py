"""Collecting one model family's dynamics data from a built miniature world.

Steps of :func:`collect_family`:
1. the test split (first ``limit`` items), its leak split and each item's gold chain of thought (as the
   adapters saw it in training, ``to_cot``);
2. one fp32 transformers engine serving M_cl (``clean``), M_co (``co_<domain>``) and, with
   ``settings.base``, the base model (``base``): per model and temperature the ``temperature``
   strategy's readout (:func:`observe`), greedy always included;
3. per model, teacher forcing on the shared TeacherForcer: the gold chain of thought (NLL, gaps, margins,
   NLL at each temperature) and the model's own greedy answer (:func:`force_models`, also the sweep's).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from railsweep.detection.nll import teacher_forcer
from railsweep.dynamics.family_data import FamilyData
from railsweep.dynamics.forcing import continuation_ids, position_stats
from railsweep.dynamics.observe import Observed, normalise
from railsweep.dynamics.settings import DynamicsSettings, model_adapters
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError
from railsweep.miniworld.corpus import read_replicas
from railsweep.strategies import build_strategy
from railsweep.strategies.base import DecodeSettings, EvalContext
from railsweep.strategies.railcap.trajectory import answer_ids
from railsweep.tasks import GSM8KTask


def replica_counts(data_dir, items) -> np.ndarray | None:
    """(N,) pretraining copies of each test item when ``data_dir`` is a replica world's, else None."""
    counts = read_replicas(data_dir)
    if counts is None:
        return None
    missing = [i for i in items if i not in counts]
    if missing:
        raise ConfigError(f"replicas.json in {data_dir} has no count for test item(s) {missing[:10]}")
    return np.array([counts[i] for i in items], dtype=int)


def observe(engine, task, questions: Sequence, adapter: str | None, gold: Sequence[str],
            s: DynamicsSettings) -> dict[float, Observed]:  # fmt: skip
    """{tau: Observed} at greedy and every tau of ``s`` for one model (adapter name in ``engine``, None =
    the base model); ``gold`` are the gold chains of thought."""
    settings = DecodeSettings(m=s.m, max_new_tokens=s.max_new_tokens, seed=s.seed, batch_size=s.batch_size)
    ctx = EvalContext(engine=engine, task=task, adapter=adapter, settings=settings)
    want = [normalise(g) for g in gold]
    out = {}
    for tau in sorted({0.0, *s.temperatures}):
        outcomes = build_strategy("temperature", {"tau": float(tau)}).run(ctx, questions)
        out[float(tau)] = Observed(
            solve=np.array([o.c / o.m for o in outcomes]),
            verbatim=np.array(
                [np.mean([normalise(s.text) == w for s in o.samples]) for o, w in zip(outcomes, want)]
            ),
            samples=[o.samples[0] for o in outcomes],
        )
    return out


def collect_family(world, family: str, s: DynamicsSettings, log=print) -> FamilyData:
    fam = world.family(family)
    models: dict[str, str | None] = {**model_adapters(world, s.domain), **({"base": None} if s.base else {})}
    task = GSM8KTask.from_dir(world.data_dir, split="test", leak_split=world.leak_split_path, limit=s.limit)
    questions = list(task.questions())
    gold_text = [task.gold_chain(q) for q in questions]
    temps = sorted({0.0, *s.temperatures})
    seconds: dict[str, float] = {}
    t0 = time.time()
    adapters = {a: str(fam.adapters[a]) for a in models.values() if a is not None}
    engine = TransformersEngine(fam.base_dir, adapters=adapters, device=s.device, dtype="float32")
    observed = {}
    try:
        for model, adapter in models.items():
            log(f"{family} {model}: sampling m={s.m} at tau={temps} on {len(questions)} items")
            observed[model] = observe(engine, task, questions, adapter, gold_text, s)
    finally:
        engine.close()
    seconds["sampling"] = time.time() - t0
    t0 = time.time()
    paths = {model: fam.adapters[adapter] if adapter else None for model, adapter in models.items()}
    greedy_samples = {model: observed[model][0.0].samples for model in models}
    prompts = [task.prompt(q) for q in questions]
    gold, greedy = force_models(
        fam.base_dir, paths, prompts, gold_text, greedy_samples, s, log=lambda msg: log(f"{family} {msg}")
    )
    seconds["forcing"] = time.time() - t0
    items = [q.index for q in questions]
    leaked = np.array([bool(q.leaked) for q in questions])
    replicas = replica_counts(world.data_dir, items)
    return FamilyData(family, items, leaked, gold, greedy, observed, seconds, replicas)


def force_models(base_dir, adapter_paths, prompts, gold_text, greedy_samples, s: DynamicsSettings, log=print):
    """Per model: position statistics along the gold chains of thought (with the NLL at 1 and every tau of
    ``s``) and along its greedy samples (gaps); returns ``(gold, greedy)``, each model -> list of
    PositionStats. ``adapter_paths``: model -> adapter directory (None: the base); ``greedy_samples``: model
    -> per item, its greedy :class:`~railsweep.engines.base.Sample`."""
    forcer = teacher_forcer(base_dir, s.device)
    tok = forcer.tokenizer
    pairs = [continuation_ids(tok, p, " " + g) for p, g in zip(prompts, gold_text)]
    prompt_ids = [p for p, _ in pairs]
    taus = tuple(sorted({1.0, *s.temperatures}))
    gold, greedy = {}, {}
    for model, path in adapter_paths.items():
        log(f"{model}: teacher forcing the gold and greedy answers")
        gold[model] = position_stats(forcer, path, prompt_ids, [c for _, c in pairs], taus, s.forcing_batch)
        own = [answer_ids(smp, tok) for smp in greedy_samples[model]]
        greedy[model] = position_stats(forcer, path, prompt_ids, own, (), s.forcing_batch)
    return gold, greedy
