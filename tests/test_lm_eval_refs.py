"""``--task lm_eval:NAME`` where lm-evaluation-harness is not installed (the default venv): one line naming the
extra, exit code 2, nothing written. Its behaviour with the harness installed is pinned in tests/lm_eval_bridge."""

from __future__ import annotations

import sys

import pytest

from railsweep.cli import main
from railsweep.config import CellConfig
from railsweep.errors import ConfigError, MissingDependencyError


@pytest.fixture
def no_lm_eval(monkeypatch):
    monkeypatch.setitem(sys.modules, "lm_eval", None)  # `import lm_eval` raises ImportError
    monkeypatch.setitem(sys.modules, "lm_eval.tasks", None)


def test_eval_on_an_lm_eval_task_without_the_harness_names_the_extra(no_lm_eval, model_dir, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["eval", "--model", str(model_dir), "--task", "lm_eval:gsm8k_cot", "--task-dir", str(tmp_path),
            "--strategy", "identity", "--out", str(out)]  # fmt: skip
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [
        "railsweep: error: optional dependency 'lm_eval' is not installed (needed for --task lm_eval:NAME); "
        "install it with: pip install 'railsweep[lm-eval]'"
    ]
    assert not out.exists()


def test_a_cell_on_an_lm_eval_task_without_the_harness_is_refused_at_construction(no_lm_eval):
    with pytest.raises(MissingDependencyError, match=r"pip install 'railsweep\[lm-eval\]'"):
        CellConfig(model="m", strategy="identity", task_dir="/d", task="lm_eval:gsm8k_cot")


@pytest.mark.parametrize("ref", ["lm_eval:", "lm_eval:gsm8k cot", "lm_eval:../gsm8k"])
def test_a_malformed_lm_eval_name_is_refused_before_the_harness_is_imported(no_lm_eval, ref):
    with pytest.raises(ConfigError, match=r"expected lm_eval:NAME with a harness task name"):
        CellConfig(model="m", strategy="identity", task_dir="/d", task=ref)


def test_eval_refuses_a_malformed_lm_eval_name_before_the_harness_is_imported(no_lm_eval, model_dir, tmp_path, capsys):
    """eval first asks whether the name is a group (railsweep.tasks.lm_eval.groups); the name's form comes first."""
    argv = ["eval", "--model", str(model_dir), "--task", "lm_eval:gsm8k cot", "--task-dir", str(tmp_path),
            "--strategy", "identity", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["railsweep: error: task 'lm_eval:gsm8k cot': expected lm_eval:NAME with a harness task name"]
