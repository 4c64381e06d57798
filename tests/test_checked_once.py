"""A sweep's values are checked where they come in, not again inside: a spec's strategy grid when the spec is read
(not on each copy), a cell's strategy settings when its CellConfig is built (its labels, table membership and
pricing read the config built then). The engine's side, a checked CellConfig taken as it is, is in
tests/test_sweep_trial_result.py."""

from __future__ import annotations

import dataclasses

import pytest

from railsweep.config import CellConfig
from railsweep.errors import ConfigError
from railsweep.strategies.railcap.strategy import RailCapConfig
from railsweep.strategy_registry import STRATEGIES
from railsweep.sweep.plan.cells import SweepCell
from railsweep.sweep.plan.pricing import cell_samples
from railsweep.sweep.run.sweep_run import cell_meta
from railsweep.sweep.spec.sweep_spec import load_spec, spec_from_dict


@pytest.fixture
def built(monkeypatch):
    """How many strategy configs are built (each one checks its settings) from now on."""
    made = []
    make = STRATEGIES.make_config

    def counting(name, params=None):
        made.append(name)
        return make(name, params)

    monkeypatch.setattr(STRATEGIES, "make_config", counting)
    return made


def test_a_spec_checks_its_strategy_grid_when_read_not_when_copied(built):
    spec = load_spec("smoke")
    assert built.count("railcap") == 2  # its two grid points, n=2 and n=4
    dataclasses.replace(spec, name="copy")
    dataclasses.replace(spec, readout=dataclasses.replace(spec.readout, limit=2))
    assert built.count("railcap") == 2


def test_a_bad_grid_point_is_still_refused_when_the_spec_is_read():
    with pytest.raises(ConfigError, match=r"strategies\[0\]: RailCap n must be an integer in \[1, 64\], got n=0"):
        spec_from_dict({"source": "paths", "data_dir": "/d", "strategies": [{"name": "railcap", "grid": {"n": [0]}}]})


def test_a_cells_label_tables_and_price_read_the_strategy_config_its_cellconfig_built(built):
    cfg = CellConfig(model="/m", strategy="railcap", task_dir="/t", strategy_params={"n": 2}, family="llama",
                     domain="gsm8k", m=4)  # fmt: skip
    assert built == ["railcap"] and cfg.strategy_config == RailCapConfig(n=2)
    cell = SweepCell(cfg, "0" * 16)
    meta = cell_meta(cell)
    assert meta["label"] == "RailCap n=2 cap" and cell_samples(cell, 6) == 6 * (4 + 1)
    assert built == ["railcap"]


def test_a_cells_strategy_config_is_rebuilt_with_the_cell_and_compares_by_its_fields():
    cfg = CellConfig(model="/m", strategy="railcap", task_dir="/t", strategy_params={"n": 2})
    other = dataclasses.replace(cfg, strategy_params={"n": 3})
    assert other.strategy_config == RailCapConfig(n=3) and cfg.strategy_config == RailCapConfig(n=2)
    assert CellConfig.from_dict(cfg.to_dict()) == cfg
