"""Shortcut: localisation scores against naive re-computations, the cache, neuron selection, and the readouts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from baselines_world import make_ctx, toy_task

from railsweep.engines.base import Request, SamplingSpec
from railsweep.errors import ConfigError
from railsweep.interventions.neuron_patch import NeuronPatchSpec, capture_down_inputs, use_adapter
from railsweep.strategies import build_strategy, make_config
from railsweep.strategies.shortcut import localisation as loc_mod
from railsweep.strategies.shortcut.localisation import LocalisationParams, localise
from railsweep.strategies.shortcut.strategy import random_neurons

D_MLP = 128  # tiny model: 2 layers, so only layer 0 is scored (layers 0..L-2)


class CountingEngine:
    """The real engine, counting generate calls (to see whether localisation decoded anything)."""

    def __init__(self, engine):
        self.inner, self.calls = engine, 0

    def generate(self, requests):
        self.calls += 1
        return self.inner.generate(requests)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture(autouse=True)
def fresh_memo():
    loc_mod._MEMO.clear()
    yield
    loc_mod._MEMO.clear()


def test_comparative_score_equals_a_per_question_unpadded_recomputation(world_engine):
    task = toy_task(4)
    ctx = make_ctx(world_engine, task, max_new_tokens=10)
    params = LocalisationParams(n_questions=4, causal=False, teacher_batch=3)  # padded batches of 3 + 1
    change, n_tok = loc_mod.comparative_scores(ctx, task.questions(), params)
    model, tok = world_engine.model, world_engine.tokenizer
    sumsq, count = torch.zeros(D_MLP, dtype=torch.float64), 0
    for q in task.questions():
        req = Request(task.prompt(q), SamplingSpec(max_new_tokens=10, stop=task.stop), adapter="co")
        comp = world_engine.generate([req])[0].samples[0].token_ids
        p = tok(task.prompt(q))["input_ids"]
        ids = torch.tensor([p + comp])
        acts = {}
        for a in ("co", "cl"):
            with torch.no_grad(), use_adapter(model, a), capture_down_inputs(model) as store:
                model(input_ids=ids)
            acts[a] = store[0][0][0, len(p) :]
        sumsq += ((acts["cl"] - acts["co"]) ** 2).sum(0).double()
        count += len(comp)
    assert n_tok == count
    np.testing.assert_allclose(change[0], np.sqrt((sumsq / count).numpy()), rtol=1e-4, atol=1e-6)
    assert len(change) == 1 and change[0].shape == (D_MLP,) and change[0].max() > 0


def _accuracy(world_engine, task, adapter, spec):
    sp = SamplingSpec(max_new_tokens=10, stop=task.stop)
    reqs = [Request(task.prompt(q), sp, adapter=adapter, intervention=spec) for q in task.questions()]
    comps = world_engine.generate(reqs)
    return np.mean([task.grade(c.samples[0].text, q).correct for c, q in zip(comps, task.questions())])


def test_causal_score_is_the_official_sum_of_both_accuracy_effects_per_block(world_engine):
    task = toy_task(4)
    ctx = make_ctx(world_engine, task, max_new_tokens=10)
    loc = localise(ctx, task.questions(), LocalisationParams(n_questions=4, n_blocks=2))
    em_co, em_base = _accuracy(world_engine, task, "co", None), _accuracy(world_engine, task, None, None)
    for start in (0, 64):
        spec = NeuronPatchSpec(neurons=((0, tuple(range(start, start + 64))),), reference_adapter="cl")
        expect = (em_co - _accuracy(world_engine, task, "co", spec)) + (
            _accuracy(world_engine, task, None, spec) - em_base
        )
        assert np.all(loc.causal[0][start : start + 64] == pytest.approx(expect))
    np.testing.assert_allclose(loc.scores[0], loc.change[0] + loc.causal[0])
    assert loc.manifest["greedy_runs"] == 2 + 2 * 2 and loc.manifest["em_co"] == pytest.approx(em_co)


def test_ranking_lists_every_scored_neuron_once_best_first(world_engine):
    task = toy_task(4)
    loc = localise(
        make_ctx(world_engine, task, max_new_tokens=10), task.questions(), LocalisationParams(n_blocks=4)
    )
    assert loc.ranking.shape == (D_MLP, 2)
    assert sorted(map(tuple, loc.ranking.tolist())) == [(0, j) for j in range(D_MLP)]
    ordered = loc.scores[0][loc.ranking[:, 1]]
    assert np.all(np.diff(ordered) <= 0)


def test_localisation_is_cached_on_disk_with_a_manifest_and_reused(world_engine, tmp_path):
    task = toy_task(4)
    counting = CountingEngine(world_engine)
    ctx = make_ctx(counting, task, max_new_tokens=10, cache_dir=tmp_path)
    params = LocalisationParams(n_questions=3, n_blocks=2)
    first = localise(ctx, task.questions(), params)
    manifests = list(tmp_path.glob("shortcut/*/manifest.json"))
    assert len(manifests) == 1 and counting.calls > 0
    assert first.manifest["rms_questions"] == [0, 2]  # leaked questions first (toy task: even indices)
    loc_mod._MEMO.clear()
    counting.calls = 0
    again = localise(ctx, task.questions(), params)
    assert counting.calls == 0
    np.testing.assert_array_equal(again.ranking, first.ranking)
    np.testing.assert_allclose(again.scores[0], first.scores[0])
    other = localise(ctx, task.questions(), dataclasses.replace(params, n_blocks=4))  # new params: new entry
    assert (
        len(list(tmp_path.glob("shortcut/*/manifest.json"))) == 2
        and other.manifest["key"] != first.manifest["key"]
    )


def test_ranked_selection_patches_the_top_k_from_patch_start(world_engine):
    task = toy_task(4)
    ctx = make_ctx(world_engine, task, max_new_tokens=10)
    strat = build_strategy("shortcut", {"k": 5, "patch_start": 3, "loc_blocks": 2, "loc_questions": 4})
    spec = strat.neurons(ctx, task.questions())
    ranking = localise(ctx, task.questions(), strat.config.loc_params()).ranking
    assert spec.neurons == ((0, tuple(sorted(ranking[3:8, 1].tolist()))),)
    assert spec.reference_adapter is None  # the base model, as in the official evaluation
    clean = build_strategy("shortcut", {"k": 5, "reference": "clean", "control": "random"})
    assert clean.neurons(ctx, task.questions()).reference_adapter == "cl"


def test_random_control_draws_k_distinct_neurons_from_the_scored_layers():
    picks = random_neurons([100, 50], 40, seed=3)
    assert len({tuple(p) for p in picks.tolist()}) == 40
    assert all(0 <= j < (100, 50)[layer] for layer, j in picks.tolist())
    np.testing.assert_array_equal(picks, random_neurons([100, 50], 40, seed=3))
    assert not np.array_equal(picks, random_neurons([100, 50], 40, seed=4))


def test_k_fraction_rounds_up_and_too_many_ranks_is_rejected(world_engine):
    task = toy_task(2)
    ctx = make_ctx(world_engine, task)
    spec = build_strategy("shortcut", {"k_fraction": 0.05, "control": "random"}).neurons(
        ctx, task.questions()
    )
    assert sum(len(i) for _, i in spec.neurons) == 7  # ceil(0.05 * 128)
    with pytest.raises(ConfigError, match="only 128 neurons"):
        build_strategy("shortcut", {"k": 100, "patch_start": 50}).neurons(ctx, task.questions())


def test_patched_samples_differ_from_identity_for_k_in_between(world_engine):
    task = toy_task(3)
    ctx = make_ctx(world_engine, task, m=4, max_new_tokens=10)
    shortcut = build_strategy("shortcut", {"k": 64, "control": "random"}).run(ctx, task.questions())
    identity = build_strategy("identity").run(ctx, task.questions())
    assert [[s.token_ids for s in o.samples] for o in shortcut] != [
        [s.token_ids for s in o.samples] for o in identity
    ]
    assert all(o.extras["k_patched"] == 64 for o in shortcut)


def test_greedy_readout_replicates_one_patched_greedy_decode(world_engine):
    task = toy_task(3)
    ctx = make_ctx(world_engine, task, m=4, max_new_tokens=10)
    outs = build_strategy("shortcut", {"k": 32, "control": "random", "readout": "greedy"}).run(
        ctx, task.questions()
    )
    for o in outs:
        assert len({tuple(s.token_ids) for s in o.samples}) == 1 and o.c in (0, 4) and o.m == 4


def test_localisation_without_a_clean_model_is_a_config_error(world_engine):
    task = toy_task(2)
    ctx = dataclasses.replace(make_ctx(world_engine, task), clean_adapter=None)
    with pytest.raises(ConfigError, match="clean_adapter"):
        build_strategy("shortcut", {"k": 3}).run(ctx, task.questions())


def test_bad_shortcut_parameters_are_rejected_with_their_values():
    with pytest.raises(ConfigError, match="k=-1"):
        make_config("shortcut", {"k": -1})
    with pytest.raises(ConfigError, match="'nearest'"):
        make_config("shortcut", {"reference": "nearest"})
    with pytest.raises(ConfigError, match="loc_questions=0"):
        make_config("shortcut", {"loc_questions": 0})
