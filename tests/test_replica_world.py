"""The pretraining-replica world: which test items its base saw how often, and the memorisation curve
read against that count (synthetic collected data, no model)."""

from __future__ import annotations

import collections
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from railsweep.contamination.simulator import cot_example
from railsweep.dynamics.analyse import analyse
from railsweep.dynamics.collect import replica_counts
from railsweep.dynamics.family_data import FamilyData
from railsweep.dynamics.forcing import PositionStats
from railsweep.dynamics.observe import Observed
from railsweep.dynamics.output import family_summary, write_run
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.dynamics.survival import loss_curve
from railsweep.errors import ConfigError
from railsweep.miniworld.benchmark import generate
from railsweep.miniworld.corpus import REPLICAS_FILE, pretraining_corpus, read_replicas
from railsweep.miniworld.presets import preset_config

SMOKE = preset_config("smoke")


def test_replica_groups_are_disjoint_equal_and_seeded():
    config = dataclasses.replace(SMOKE, replicas=(0, 2, 5))
    counts = config.replica_counts()
    assert sorted(counts) == list(range(SMOKE.n_test))
    assert collections.Counter(counts.values()) == {0: 8, 2: 8, 5: 8}
    assert counts == dataclasses.replace(SMOKE, replicas=(0, 2, 5)).replica_counts()
    assert counts != dataclasses.replace(SMOKE, replicas=(0, 2, 5), seed=1).replica_counts()
    assert SMOKE.replica_counts() == {}


def test_the_pretraining_corpus_holds_each_test_item_as_often_as_its_count():
    config = dataclasses.replace(SMOKE, replicas=(0, 2, 5))
    data = generate(config)
    corpus = pretraining_corpus(data, config)
    seen = collections.Counter(corpus)
    for i, c in config.replica_counts().items():
        assert seen[cot_example(data.test[i].question, data.test[i].solution)] == c
    assert len(corpus) == len(pretraining_corpus(data, SMOKE)) + 8 * (2 + 5)


def test_worlds_without_replicas_keep_their_digests_and_the_replica_preset_differs():
    replica = preset_config("replica")
    assert "replicas" not in SMOKE.to_dict()
    assert preset_config("mini").digest() == "bea2463a4f7f"  # the cached calibrated world
    assert replica.digest() == "f2eb322c9c13"  # built and measured in docs/dynamics.md
    assert replica.families == ("llama",) and replica.contamination.domains == ("gsm8k",)
    assert collections.Counter(replica.replica_counts().values()) == {c: 40 for c in (0, 1, 4, 16, 64)}
    assert replica.data_digest() != preset_config("mini").data_digest()


@pytest.mark.parametrize("replicas", [(0, -1), (1, 1), (0, True), (0, 1.5), tuple(range(30))])
def test_bad_replica_counts_are_a_config_error_naming_them(replicas):
    with pytest.raises(ConfigError, match="replica"):
        dataclasses.replace(SMOKE, replicas=replicas)


def test_replica_counts_are_read_back_per_item_and_absent_for_other_worlds(tmp_path):
    assert read_replicas(tmp_path) is None and replica_counts(tmp_path, [0, 1]) is None
    (tmp_path / REPLICAS_FILE).write_text(json.dumps({"0": 4, "1": 0, "2": 64}))
    assert read_replicas(tmp_path) == {0: 4, 1: 0, 2: 64}
    assert replica_counts(tmp_path, [2, 0]).tolist() == [64, 4]
    with pytest.raises(ConfigError, match=r"\[7\]"):
        replica_counts(tmp_path, [0, 7])


COUNTS = np.repeat([0, 4, 64], 10)
TAUS = (0.0, 1.0)


def memorised(seed=0) -> FamilyData:
    """M_cl items whose gold NLL falls and solve rate rises with their count (64 copies: near lock-in);
    M_co identical to M_cl."""
    rng = np.random.default_rng(seed)
    n = COUNTS.size
    params = {0: (0.6, 1.0, 0.5), 4: (0.3, 1.0, 0.8), 64: (0.01, 0.5, 1.5)}
    gold, greedy, observed = {}, {}, {}
    for model in ("M_cl", "M_co"):
        gold[model], greedy[model] = [], []
        for c in COUNTS:
            t = np.arange(1, 31)
            nll = np.abs(loss_curve(t, *params[int(c)]) + rng.normal(0, 0.01, t.size))
            gold[model].append(
                PositionStats(list(range(30)), nll, np.log(t), np.log(t), {tau: nll for tau in TAUS})
            )
            greedy[model].append(PositionStats(list(range(30)), nll, np.log(t), np.log(t)))
        solve = {0: 0.1, 4: 0.4, 64: 0.95}
        observed[model] = {
            tau: Observed(
                np.array([solve[int(c)] * (1 - 0.3 * tau) for c in COUNTS]), np.zeros(n), [None] * n
            )
            for tau in TAUS
        }
    leaked = np.arange(n) % 2 == 0
    return FamilyData("llama", list(range(n)), leaked, gold, greedy, observed, replicas=COUNTS)


@pytest.fixture(scope="module")
def replica_tables():
    return analyse(memorised(), DynamicsSettings(temperatures=TAUS, n_boot=20, n_boot_gain=200))


def test_the_memorisation_curve_has_one_row_per_model_and_count(replica_tables):
    rep = replica_tables.replicas
    assert rep.groupby("model")["replicas"].apply(list).to_dict() == {"M_cl": [0, 4, 64], "M_co": [0, 4, 64]}
    cl = rep[rep["model"] == "M_cl"].set_index("replicas")
    assert cl["solve_tau_0"].tolist() == pytest.approx([0.1, 0.4, 0.95])
    assert cl["solve_tau_1"].tolist() == pytest.approx([0.07, 0.28, 0.665])
    assert (cl["solve_tau_0_lo"] <= cl["solve_tau_0"]).all() and (
        cl["solve_tau_0"] <= cl["solve_tau_0_hi"]
    ).all()
    assert cl["n_items"].tolist() == [10, 10, 10]


def test_fits_and_loss_probe_follow_the_duplication_count(replica_tables):
    cl = replica_tables.replicas.query("model == 'M_cl'").set_index("replicas")
    assert cl.loc[64, "E"] == pytest.approx(0.01, abs=0.02) and cl.loc[64, "alpha"] == pytest.approx(
        1.5, abs=0.2
    )
    assert cl.loc[64, "regime"] == "lock-in" and cl.loc[0, "regime"] == "decoherence"
    assert cl["nll"].is_monotonic_decreasing
    assert np.isnan(cl.loc[0, "auc_vs_0"]) and cl.loc[64, "auc_vs_0"] == 1.0 and cl.loc[4, "auc_vs_0"] == 1.0
    assert cl.loc[64, "auc_vs_0_lo"] <= 1.0


def test_a_replica_run_writes_the_curve_table_figure_and_summary(replica_tables, tmp_path):
    s = family_summary(replica_tables)
    assert json.loads(json.dumps(s)) == s and len(s["replicas"]) == 6
    names = {p.name for p in write_run(tmp_path, {"llama": replica_tables}, {"families": {"llama": s}})}
    assert {"replicas.parquet", "memorisation_curve_llama.png"} <= names
    assert len(pd.read_parquet(tmp_path / "replicas.parquet")) == 6


def test_a_world_without_replicas_writes_no_curve(tmp_path):
    data = dataclasses.replace(memorised(), replicas=None)
    tables = analyse(data, DynamicsSettings(temperatures=TAUS, n_boot=5, n_boot_gain=20))
    assert tables.replicas is None and "replicas" not in family_summary(tables)
    names = {p.name for p in write_run(tmp_path, {"llama": tables}, {})}
    assert "replicas.parquet" not in names and not any(n.startswith("memorisation") for n in names)


def test_the_dynamics_step_metrics_carry_the_curve():
    from railsweep.dynamics.step import dynamics_metrics

    tables = analyse(memorised(), DynamicsSettings(temperatures=TAUS, n_boot=5, n_boot_gain=20))
    metrics, _ = dynamics_metrics(tables, "llama", "gsm8k")
    assert metrics["dynamics.llama.gsm8k.M_cl.replicas_64.solve_tau_0"] == pytest.approx(0.95)
    assert metrics["dynamics.llama.gsm8k.M_cl.replicas_4.auc_vs_0"] == 1.0


def test_the_mini_replica_preset_samples_both_models_at_greedy_and_tau_1_on_the_replica_world():
    from railsweep.sweep.spec.sweep_spec import load_spec

    spec = load_spec("mini_replica")
    assert spec.miniworld_preset == "replica" and [f.name for f in spec.families] == ["llama"]
    assert spec.temperatures == (0.0, 1.0) and spec.readout.limit is None


def test_the_notebook_frame_and_figures_show_the_curve_read_back_from_a_sweep(replica_tables, tmp_path):
    from railsweep.analysis import dynamics

    read = {}  # as reader.read_dynamics returns them: every table with a domain column
    for name in ("gains", "predictions", "replicas"):
        df = getattr(replica_tables, name).copy()
        df.insert(1, "domain", "gsm8k")
        read[name] = df
    frame = dynamics.replica_frame(read["replicas"])
    assert frame["replicas"].tolist() == [0, 4, 64, 0, 4, 64]
    assert frame["solve τ=0"].iloc[2].startswith("0.95 [") and frame["loss AUC vs 0"].iloc[0] == "n/a"
    paths = dynamics.figures(read, tmp_path)
    assert paths["memorisation_curve_llama_gsm8k"].is_file()
    assert "memorisation_curve_llama_gsm8k" not in dynamics.figures(
        {k: read[k] for k in ("gains", "predictions")}, tmp_path
    )


def test_dynamics_base_adds_a_base_model_cell_per_tau_and_a_base_model_to_the_group():
    from railsweep.sweep.plan.cells import expand, temperature_groups
    from railsweep.sweep.spec.sections import FamilySpec
    from railsweep.sweep.spec.sweep_spec import load_spec

    spec = load_spec("mini_replica")
    assert spec.dynamics_settings.base
    fam = FamilySpec("llama", "/p/base", (("clean", "/p/clean"), ("co_gsm8k", "/p/co")))
    spec = dataclasses.replace(
        spec, source="paths", families=(fam,), data_dir="/d", leak_split="/d/leak_split.json"
    )
    cells = expand(spec)
    base = [c for c in cells if c.config.adapter is None]
    assert sorted(c.config.temperature for c in base) == [0.0, 1.0]
    assert all(c.config.role == "clean" and c.config.strategy == "identity" for c in base)
    assert len(cells) == 7  # M_cl at greedy, 0.7 (the clean reference) and 1; M_co and base at greedy and 1
    (group,) = temperature_groups(spec)
    assert dict(group.adapters)["base"] is None and {m for m, _, _ in group.cells} == {"M_cl", "M_co", "base"}
    without = dataclasses.replace(spec, dynamics=dataclasses.replace(spec.dynamics_settings, base=False))
    assert [c.cell_id for c in expand(without)] == [c.cell_id for c in cells if c.config.adapter is not None]


def test_railsweep_dynamics_with_base_reads_the_base_model_beside_m_cl_and_m_co(smoke_world, tmp_path):
    from railsweep.cli import main
    from railsweep.miniworld import build_world

    world = build_world("smoke", cache_dir=smoke_world)
    argv = [
        "dynamics",
        "--world",
        str(world.root),
        "--base",
        "--limit",
        "4",
        "--m",
        "2",
        "--temperatures",
        "0",
        "1",
    ]
    assert main([*argv, "--n-boot", "5", "--n-boot-gain", "20", "--out", str(tmp_path / "out")]) == 0
    fits = pd.read_parquet(tmp_path / "out" / "fits.parquet")
    assert set(fits["model"]) == {"M_cl", "M_co", "base"}
    assert not (tmp_path / "out" / "replicas.parquet").exists()  # the smoke world has no replicas
