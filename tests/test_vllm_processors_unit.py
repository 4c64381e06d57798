"""The vLLM engine's vllm-free parts, in the default venv: missing-dependency error, LoRA rank setting,
input validation before vLLM is touched. (The processors themselves are tested in tests/vllm_e2e/.)"""

from __future__ import annotations

import json
import sys

import pytest

from railsweep.engines.vllm_engine import VLLMEngine, adapter_rank, lora_rank_setting
from railsweep.errors import ConfigError, DataError, MissingDependencyError


def _adapter(tmp_path, name, **cfg):
    d = tmp_path / name
    d.mkdir()
    (d / "adapter_config.json").write_text(json.dumps(cfg))
    return d


def test_missing_vllm_raises_missing_dependency_with_the_install_command(tiny_model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'railsweep\[vllm\]'"):
        VLLMEngine(tiny_model_dir, runner="v1")


def test_max_lora_rank_is_the_smallest_vllm_rank_covering_every_adapter(tmp_path):
    a = _adapter(tmp_path, "a", r=8)
    b = _adapter(tmp_path, "b", r=12, rank_pattern={"q_proj": 40})
    assert adapter_rank(a) == 8 and adapter_rank(b) == 40
    assert lora_rank_setting([8]) == 8
    assert lora_rank_setting([8, 40]) == 64
    assert lora_rank_setting([320]) == 320
    with pytest.raises(ConfigError, match="513"):
        lora_rank_setting([513])


def test_bad_model_adapter_or_runner_fails_before_vllm_is_imported(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # these errors must not depend on vllm being present
    with pytest.raises(DataError, match="no config.json"):
        VLLMEngine(tmp_path / "nowhere")
    with pytest.raises(DataError, match="adapter_config.json"):
        VLLMEngine(tiny_model_dir, adapters={"co": tmp_path})
    with pytest.raises(DataError, match="'r'"):
        VLLMEngine(tiny_model_dir, adapters={"co": _adapter(tmp_path, "bad", lora_alpha=16)})
    with pytest.raises(ConfigError, match="runner='v3'"):
        VLLMEngine(tiny_model_dir, runner="v3")
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        VLLMEngine(tiny_model_dir, runner="v1", tensor_parallel_size=0)


def test_vllm_wire_refuses_railcap_n_above_max_n_with_the_specs_own_message():
    from railsweep.engines.vllm_adapters import RailCapSlots
    from railsweep.interventions.railcap import MAX_N

    assert RailCapSlots.from_wire({"traj": [1, 2, 3], "n": MAX_N}).n == MAX_N
    with pytest.raises(ValueError, match=rf"\[1, {MAX_N}\], got n={MAX_N + 1}"):
        RailCapSlots.from_wire({"traj": [1, 2, 3], "n": MAX_N + 1})


def test_both_engines_store_railcap_settings_in_the_same_row_layout():
    """The transformers processor's packed batch and the vLLM adapter's slots hold the same rows and free
    masks for the same specs (the layout lives once, in railsweep.interventions.railcap)."""
    import numpy as np
    import torch

    from railsweep.engines.vllm_adapters import RailCapSlots
    from railsweep.interventions.railcap import ROW_FIELDS, RailCapSpec, pack_specs

    specs = [
        RailCapSpec((5, 6, 7, 8, 9), n=2, mode="ban", successor="first", spare=(7,)),
        None,
        RailCapSpec((1, 2, 3), n=1, successor="all"),
    ]
    batch = pack_specs(specs)
    slots = RailCapSlots(4, 8, torch.device("cpu"), pin=False)
    idx = np.array([3, 0, 1])
    slots.write(idx, torch.from_numpy(idx), specs)
    vllm_rows = slots.meta[:, torch.from_numpy(idx)]
    hf_rows = torch.stack([getattr(batch, f) for f in ROW_FIELDS])
    assert torch.equal(vllm_rows, hf_rows)
    assert torch.equal(slots.free[torch.from_numpy(idx), : batch.free.shape[1]], batch.free)
