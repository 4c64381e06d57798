"""The ``temperatures:`` sweep dimension without a model: spec validation, the cells it adds (and the cells of a
spec without it, unchanged), reading a cell's tables back into observed solve probabilities and verbatim shares,
and the notebook's frames over the logged dynamics tables."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from railsweep.errors import ConfigError
from railsweep.sweep.plan.cells import expand, temperature_groups
from railsweep.sweep.spec.sections import FamilySpec
from railsweep.sweep.spec.sweep_spec import load_spec, spec_from_dict

BASE = {"name": "t", "strategies": ["identity"]}


def _paths_spec(spec):
    base = "/pinned/llama"
    adapters = tuple((a, f"{base}/{a}") for a in ("clean", "co_gsm8k", "co_pq"))
    return dataclasses.replace(
        spec,
        source="paths",
        families=(FamilySpec("llama", f"{base}/base", adapters),),
        data_dir="/pinned/data",
        leak_split="/pinned/leak_split.json",
    )


def test_temperatures_take_greedy_and_numbers_and_come_back_sorted():
    spec = spec_from_dict({**BASE, "temperatures": [1.3, "greedy", 0.3, 1]})
    assert spec.temperatures == (0.0, 0.3, 1.0, 1.3)
    assert spec.dynamics is None and spec.dynamics_settings.n_boot == 200


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (["greedy", "hot"], "'hot'"),
        ([0.3, -0.5], "-0.5"),
        ([float("nan")], "nan"),
        ([float("inf")], "inf"),
        ([True], "True"),
        ([0.3, 0.3], "0.3"),
        (["greedy", 0], "greedy (0)"),
        ([], "empty list"),
        (0.7, "0.7"),
    ],
)
def test_a_bad_temperature_is_one_config_error_naming_the_value(value, named):
    with pytest.raises(ConfigError) as e:
        spec_from_dict({**BASE, "temperatures": value})
    msg = str(e.value)
    assert msg.startswith("temperatures: ") and named in msg and "\n" not in msg


def test_a_dynamics_block_without_temperatures_is_an_error():
    with pytest.raises(ConfigError, match="'dynamics' block needs a 'temperatures' list"):
        spec_from_dict({**BASE, "dynamics": {"n_boot": 10}})
    with pytest.raises(ConfigError, match=r"dynamics\.n_boot"):
        spec_from_dict({**BASE, "temperatures": [0.3], "dynamics": {"n_boot": 0}})
    with pytest.raises(ConfigError, match="unknown key 'boots' in dynamics"):
        spec_from_dict({**BASE, "temperatures": [0.3], "dynamics": {"boots": 10}})


def test_temperatures_alone_make_a_grid_without_strategies():
    spec = spec_from_dict({"name": "t", "temperatures": ["greedy", 1.0]})
    assert spec.strategies == ()
    with pytest.raises(ConfigError, match="no strategies, detectors or temperatures"):
        spec_from_dict({"name": "t"})


def test_a_spec_without_temperatures_keeps_its_cells_and_its_sweep_id():
    plain = _paths_spec(load_spec("smoke"))
    with_t = dataclasses.replace(plain, temperatures=(0.3, 0.7))
    old = [c.cell_id for c in expand(plain)]
    new = expand(with_t)
    # the old cells, in their order, then nothing but temperature cells
    assert [c.cell_id for c in new if c.cell_id in old] == old
    extra = [c for c in new if c.cell_id not in old]
    assert extra and all(
        (c.role, c.config.strategy) in {("clean", "identity"), ("mitigated", "temperature")} for c in extra
    )
    assert temperature_groups(plain) == []
    assert spec_from_dict({**BASE}).sweep_id == spec_from_dict({**BASE, "temperatures": None}).sweep_id
    assert plain.sweep_id != with_t.sweep_id


def test_each_temperature_samples_both_models_and_greedy_is_always_there():
    spec = dataclasses.replace(_paths_spec(load_spec("smoke")), temperatures=(0.3, 1.3))
    by_id = {c.cell_id: c for c in expand(spec)}
    groups = temperature_groups(spec)
    assert [(g.family, g.domain) for g in groups] == [("llama", "gsm8k"), ("llama", "pq")]
    g = groups[0]
    assert g.temperatures == (0.0, 0.3, 1.3)  # greedy added
    assert sorted({t for _, t, _ in g.cells}) == [0.0, 0.3, 1.3]
    for tau in (0.0, 0.3, 1.3):
        cl, co = by_id[g.cell_id("M_cl", tau)].config, by_id[g.cell_id("M_co", tau)]
        assert (cl.adapter, cl.strategy, cl.temperature, cl.role) == ("clean", "identity", tau, "clean")
        assert (co.config.adapter, co.config.strategy, co.config.strategy_params) == (
            "co_gsm8k",
            "temperature",
            {"tau": tau},
        )
        assert co.clean_id == g.cell_id("M_cl", tau)  # scored against M_cl at the same temperature
    assert dict(g.adapters) == {"M_cl": "/pinned/llama/clean", "M_co": "/pinned/llama/co_gsm8k"}


def test_the_readout_temperature_reuses_the_clean_reference_cell():
    spec = dataclasses.replace(_paths_spec(load_spec("smoke")), temperatures=(0.7,))
    cells = expand(spec)
    ref = cells[0]
    assert ref.role == "clean" and ref.config.temperature == 0.7
    assert temperature_groups(spec)[0].cell_id("M_cl", 0.7) == ref.cell_id
    assert len({c.cell_id for c in cells}) == len(cells)


def test_a_single_paper_table_leaves_the_temperature_cells_out():
    plain = _paths_spec(load_spec("smoke"))
    with_t = dataclasses.replace(plain, temperatures=(0.3,))
    assert [c.cell_id for c in expand(with_t, "3")] == [c.cell_id for c in expand(plain, "3")]


def test_the_mini_dynamics_preset_is_three_families_on_gsm8k_at_six_temperatures():
    spec = load_spec("mini_dynamics")
    assert spec.miniworld_preset == "mini" and spec.domains == ("gsm8k",)
    assert [f.name for f in spec.families] == ["llama", "neox", "gemma"]
    assert spec.temperatures == (0.0, 0.3, 0.5, 0.7, 1.0, 1.3)
    fams = tuple(
        FamilySpec(n, f"/p/{n}/base", tuple((a, f"/p/{n}/{a}") for a in ("clean", "co_gsm8k")))
        for n in ("llama", "neox", "gemma")
    )
    cells = expand(dataclasses.replace(spec, source="paths", families=fams, data_dir="/d", leak_split="/l"))
    assert len(cells) == 3 * 12  # per family: M_cl at 6 tau (0.7 = the clean reference), M_co at 6 tau


def _tables(items, solve, texts):
    q = pd.DataFrame({"question_index": items, "solve_prob": solve})
    rows = [
        {"question_index": i, "sample_index": s, "text": t, "token_ids": [1, 2], "finish_reason": "stop"}
        for i, ts in zip(items, texts)
        for s, t in ts
    ]
    return q, pd.DataFrame(rows)


def test_observed_from_a_cells_tables_follows_the_item_order_and_ignores_the_greedy_row():
    from railsweep.dynamics.observe import observed_from_tables

    q, r = _tables(
        [3, 5],
        [0.5, 1.0],
        [[(-1, "gold a"), (0, "gold  a"), (1, "other")], [(1, "gold b"), (0, "nope")]],
    )
    obs = observed_from_tables(q, r, items=[5, 3], gold=["gold b", "gold a"])
    assert obs.solve.tolist() == [1.0, 0.5]
    assert obs.verbatim.tolist() == [0.5, 0.5]  # whitespace-normalised; sample -1 not counted
    assert [s.text for s in obs.samples] == ["nope", "gold  a"]  # each item's sample 0


def test_observed_from_tables_names_a_missing_item():
    from railsweep.dynamics.observe import observed_from_tables
    from railsweep.errors import DataError

    q, r = _tables([3], [0.5], [[(0, "x")]])
    with pytest.raises(DataError, match=r"\[4\]"):
        observed_from_tables(q, r, items=[3, 4], gold=["x", "y"])


def test_notebook_frames_show_gains_with_intervals_and_predictions_per_tau():
    from railsweep.analysis import dynamics

    gains = pd.DataFrame(
        {
            "family": "llama", "domain": "gsm8k", "tau": [0.7, 0.0], "tau_ref": 0.0,
            "model_gain": [0.2, 0.6], "model_gain_lo": [0.1, 0.5], "model_gain_hi": [0.3, 0.7],
            "model_gain_collapse": [3.0, 1.0], "model_gain_collapse_lo": [2.0, 1.0],
            "model_gain_collapse_hi": [4.0, 1.0], "split_gain": [0.1, np.nan], "split_gain_lo": np.nan,
            "split_gain_hi": np.nan, "split_gain_collapse": np.nan, "split_gain_collapse_lo": np.nan,
            "split_gain_collapse_hi": np.nan,
        }
    )  # fmt: skip
    g = dynamics.gain_frame(gains)
    assert g["tau"].tolist() == [0.0, 0.7]
    assert g["model gain"].tolist() == ["0.60 [0.50, 0.70]", "0.20 [0.10, 0.30]"]
    assert g["model collapse"].tolist()[1] == "3.00 [2.00, 4.00]"
    assert g["split gain"].tolist() == ["n/a", "0.10"]
    acc = pd.DataFrame(
        {
            "family": "llama", "domain": "gsm8k", "model": "M_co", "tau": [1.0, 0.0, 1.0],
            "subset": "all", "predictor": ["p_group", "p_group", "p_tf"], "target": "solve", "n": 10,
            "mean_pred": 0.1, "mean_obs": 0.2, "mae": [0.3, 0.1, 0.9], "spearman": 0.5,
        }
    )  # fmt: skip
    p = dynamics.prediction_frame(acc)
    assert p["tau"].tolist() == [0.0, 1.0] and p["mae"].tolist() == [0.1, 0.3]


def test_a_sweep_of_temperatures_alone_runs_its_cells_whatever_paper_table_is_asked():
    spec = dataclasses.replace(_paths_spec(load_spec("smoke")), strategies=(), temperatures=(1.0,))
    ids = [c.cell_id for c in expand(spec, "all")]
    assert ids and [c.cell_id for c in expand(spec, "3")] == ids


def test_only_a_spec_with_strategies_narrows_to_the_asked_paper_table():
    from railsweep.sweep.plan.cells import effective_table

    spec = _paths_spec(load_spec("smoke"))
    assert effective_table(spec, "3") == "3"
    assert effective_table(dataclasses.replace(spec, strategies=(), temperatures=(1.0,)), "3") == "all"
