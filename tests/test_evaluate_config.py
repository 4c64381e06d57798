"""CellConfig / EngineConfig: validation at construction, round trips, stable cell ids."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest

from railsweep.config import CellConfig
from railsweep.engines.config import EngineConfig
from railsweep.engines.factory import build_engine
from railsweep.errors import ConfigError, DataError, MissingDependencyError


def _cell(**kw):
    base = dict(
        model="/models/tiny", strategy="identity", task_dir="/data/gsm8k", adapter="co", m=8, temperature=0.7
    )
    base.update(kw)
    return CellConfig(**base)


def test_cell_config_round_trips_through_dict():
    cell = _cell(
        strategy="railcap", strategy_params={"n": 3, "mode": "ban"}, family="llama", domain="pq", limit=5
    )
    again = CellConfig.from_dict(cell.to_dict())
    assert again == cell
    assert again.cell_id == cell.cell_id


def test_cell_id_is_stable_and_pinned():
    # The id hashes the canonical JSON of the resolved config; changing that form breaks idempotent reruns.
    cell = CellConfig(model="m", strategy="identity", task_dir="d")
    assert cell.cell_id == _cell(model="m", task_dir="d", adapter=None, m=50).cell_id
    assert cell.cell_id == "f51406701e8b4346"
    naive = hashlib.sha256(
        json.dumps(cell.to_dict(), sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert cell.cell_id == naive[:16]


def test_explicit_default_params_give_the_same_cell_id_as_none():
    implicit = _cell(strategy="railcap")
    explicit = _cell(strategy="railcap", strategy_params={"successor": "last", "n": 4, "mode": "cap"})
    assert implicit.cell_id == explicit.cell_id
    assert list(explicit.strategy_params) == sorted(explicit.strategy_params)


def test_any_field_change_changes_the_cell_id():
    base = _cell()
    for change in (
        dict(m=9),
        dict(seed=1),
        dict(temperature=0.5),
        dict(adapter="clean"),
        dict(limit=3),
        dict(domain="pq"),
    ):
        assert _cell(**change).cell_id != base.cell_id, change


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        (dict(m=0), "m=0"),
        (dict(temperature=-0.1), "temperature=-0.1"),
        (dict(temperature=float("nan")), "temperature=nan"),
        (dict(max_new_tokens=0), "max_new_tokens=0"),
        (dict(limit=0), "limit=0"),
        (dict(role="dirty"), "'dirty'"),
        (dict(role="clean", strategy="railcap"), "'railcap'"),
        (dict(strategy="railcapp"), "did you mean 'railcap'"),
        (dict(strategy="railcap", strategy_params={"n": 0}), "n"),
        (dict(strategy="railcap", strategy_params={"k": 1}), "'k'"),
        (dict(m=2.5), "m=2.5"),
    ],
)
def test_invalid_cell_field_is_rejected_naming_the_value(kw, needle):
    with pytest.raises(ConfigError) as e:
        _cell(**kw)
    assert needle in str(e.value)


def test_unknown_strategy_error_lists_the_known_ones():
    with pytest.raises(ConfigError, match="known strategies: .*identity"):
        _cell(strategy="nonsense")


def test_from_dict_rejects_unknown_and_missing_fields():
    d = _cell().to_dict()
    with pytest.raises(ConfigError, match="bogus"):
        CellConfig.from_dict({**d, "bogus": 1})
    d.pop("task_dir")
    with pytest.raises(ConfigError, match="task_dir"):
        CellConfig.from_dict(d)


def test_engine_config_sorts_adapters_and_rejects_bad_values():
    cfg = EngineConfig(model="/m", adapters={"z": "/z", "a": "/a"})
    assert cfg.adapters == (("a", "/a"), ("z", "/z"))
    for kw, needle in [
        (dict(backend="onnx"), "'onnx'"),
        (dict(device="gpu"), "'gpu'"),
        (dict(dtype="int3"), "'int3'"),
        (dict(max_batch_size=0), "0"),
        (dict(adapters=(("a", "/x"), ("a", "/y"))), "['a']"),
        (dict(model=""), "model=''"),
    ]:
        with pytest.raises(ConfigError) as e:
            EngineConfig(**{"model": "/m", **kw})
        assert needle in str(e.value), kw


def test_vllm_backend_without_vllm_raises_missing_dependency_with_install_command(
    tiny_model_dir, monkeypatch
):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail as if not installed
    with pytest.raises(MissingDependencyError) as e:
        build_engine(EngineConfig(backend="vllm", model=str(tiny_model_dir)))
    assert "pip install 'railsweep[vllm]'" in str(e.value)


def test_engine_config_check_paths_names_the_missing_directory(tmp_path):
    (tmp_path / "model").mkdir()
    EngineConfig(model=str(tmp_path / "model")).check_paths()
    EngineConfig(model="org/hub-model").check_paths()  # hub ids are not paths
    with pytest.raises(DataError, match="model directory not found"):
        EngineConfig(model=str(tmp_path / "absent")).check_paths()
    with pytest.raises(DataError, match="adapter 'co': directory not found"):
        EngineConfig(model=str(tmp_path / "model"), adapters={"co": str(tmp_path / "nope")}).check_paths()
