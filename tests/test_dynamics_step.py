"""The dynamics step's group reading, without Ray or MLflow: a group with an unfinished cell is named as such
(the Ray step skips it rather than failing the sweep), and the sweep's reader travels to a Ray task."""

from __future__ import annotations

import functools
import pickle

import pandas as pd
import pytest

from railsweep.dynamics.groups import TemperatureGroup
from railsweep.dynamics.step import NOT_FINISHED, _observed
from railsweep.errors import DataError
from railsweep.sweep.tracking.reader import cell_tables

GROUP = TemperatureGroup(
    family="llama", domain="gsm8k", base="/b", adapters=(("M_cl", "/cl"), ("M_co", "/co")),
    cells=(("M_cl", 0.0, "c0"), ("M_co", 0.0, "k0")), temperatures=(0.0,), task_cell={},
)  # fmt: skip


def test_a_group_with_a_cell_without_a_finished_run_names_that_cell():
    def read(cell_ids, dst):
        return {"c0": (pd.DataFrame(), pd.DataFrame())}

    with pytest.raises(DataError, match=rf"llama/gsm8k: temperature cell\(s\) {NOT_FINISHED}: \['k0'\]"):
        _observed(GROUP, read, [0], ["gold"])


def test_a_cell_that_logged_no_responses_is_named_with_its_model_and_tau():
    def read(cell_ids, dst):
        return {c: (pd.DataFrame(), None) for c in cell_ids}

    with pytest.raises(DataError, match=r"cell c0 \(M_cl at tau=0\) logged no responses table"):
        _observed(GROUP, read, [0], ["gold"])


def test_the_sweep_reader_bound_to_a_server_pickles_for_the_ray_task():
    read = pickle.loads(pickle.dumps(functools.partial(cell_tables, "http://127.0.0.1:5000", "7")))
    assert read.func is cell_tables and read.args == ("http://127.0.0.1:5000", "7")
    assert pickle.loads(pickle.dumps(GROUP)) == GROUP
