"""The ``temperature`` strategy: M_co sampled at its own tau, Identity at the readout temperature."""

from __future__ import annotations

import json

import pytest
from baselines_world import make_ctx, toy_task

from railsweep.errors import ConfigError
from railsweep.strategies import build_strategy, make_config
from railsweep.strategy_registry import strategy_label
from railsweep.sweep.plan.cells import expand
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import spec_from_dict


def _samples(outcomes):
    return [[s.token_ids for s in o.samples] for o in outcomes]


def _run(engine, name, params=None, m=4, seed=0):
    task = toy_task(3)
    return build_strategy(name, params).run(make_ctx(engine, task, m=m, seed=seed), task.questions())


def test_tau_equal_to_the_readout_temperature_reproduces_identity(world_engine):
    # make_ctx reads out at T = 0.7; same seeds, same salt: the same samples and grades
    a, b = _run(world_engine, "temperature", {"tau": 0.7}), _run(world_engine, "identity")
    assert _samples(a) == _samples(b)
    assert [(o.c, o.m, o.r01) for o in a] == [(o.c, o.m, o.r01) for o in b]


def test_tau_none_means_the_readout_temperature(world_engine):
    assert _samples(_run(world_engine, "temperature", {"tau": None})) == _samples(
        _run(world_engine, "identity")
    )


def test_a_hotter_tau_draws_other_samples_than_identity(world_engine):
    assert _samples(_run(world_engine, "temperature", {"tau": 1.5})) != _samples(
        _run(world_engine, "identity")
    )


def test_greedy_tau_gives_m_identical_samples_per_question(world_engine):
    out = _run(world_engine, "temperature", {"tau": 0}, m=5)
    for o in out:
        assert o.m == 5 and len(o.samples) == 5
        assert len({tuple(s.token_ids) for s in o.samples}) == 1
        assert o.c in (0, 5)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "hot", True])
def test_a_bad_tau_is_rejected_naming_the_value(bad):
    with pytest.raises(ConfigError, match="tau"):
        make_config("temperature", {"tau": bad})


def test_tau_round_trips_as_json_and_defaults_to_one():
    cfg = make_config("temperature", json.loads(json.dumps({"tau": 0.3})))
    assert cfg.tau == 0.3 and make_config("temperature").tau == 1.0


def test_each_tau_has_its_own_table_label():
    assert strategy_label("temperature", {"tau": 0.3}) == "Temperature tau=0.3"
    assert strategy_label("temperature", {"tau": None}) == "Temperature tau=readout"
    assert strategy_label("temperature", {}) == "Temperature tau=1.0"


def test_a_sweep_spec_grid_over_tau_validates_and_expands(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    ad = {}
    for a in ("clean", "co_gsm8k"):
        (tmp_path / "fa" / a).mkdir(parents=True)
        (tmp_path / "fa" / a / "adapter_config.json").write_text("{}")  # folders as resolve() checks them
        ad[a] = str(tmp_path / "fa" / a)
    (tmp_path / "fa" / "config.json").write_text("{}")
    spec = {
        "name": "t",
        "source": "paths",
        "data_dir": str(data),
        "families": {"fa": {"base": str(tmp_path / "fa"), "adapters": ad}},
        "domains": ["gsm8k"],
        "strategies": ["identity", {"name": "temperature", "grid": {"tau": [0.3, 1.0]}}],
        "readout": {"m": 3, "limit": 2},
        "tracking": {"uri": "http://127.0.0.1:9"},
    }
    cells = expand(resolve_spec(spec_from_dict(spec)))
    temps = [c for c in cells if c.config.strategy == "temperature"]
    assert [c.config.strategy_params for c in temps] == [{"tau": 0.3}, {"tau": 1.0}]
    assert len({c.cell_id for c in temps}) == 2
    assert [c.label() for c in temps] == ["Temperature tau=0.3", "Temperature tau=1.0"]
    bad = dict(spec, strategies=[{"name": "temperature", "grid": {"tau": [-1.0]}}])
    with pytest.raises(ConfigError, match="tau"):
        spec_from_dict(bad)


def test_railsweep_eval_runs_the_temperature_strategy(tiny_model_dir, tmp_path, capsys):
    from railsweep.cli import main
    from railsweep.results import read_cell

    task = tmp_path / "task"
    task.mkdir()
    rows = [
        {"question": f"There are {i} cars. How many cars?", "answer": f"So {i}.\n#### {i}"} for i in range(3)
    ]
    (task / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shot = [{"question": "There are 2 cars. How many cars?", "answer": "2 cars. The answer is 2."}]
    (task / "cot_8shot.json").write_text(json.dumps(shot))
    argv = [
        "eval", "--model", str(tiny_model_dir), "--task-dir", str(task), "--strategy", "temperature",
        "--param", "tau=1.0", "--m", "3", "--max-new-tokens", "2", "--device", "cpu", "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    assert main(argv) == 0
    path = capsys.readouterr().out.splitlines()[0]
    cell, df = read_cell(path)
    assert cell.strategy == "temperature" and cell.strategy_params == {"tau": 1.0} and len(df) == 3
    assert main([*argv[:-2], "--param", "tau=-2", "--out", str(tmp_path / "bad")]) == 2
