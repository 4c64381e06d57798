"""bench/engines_agree.py: a cell that fails leaves its whole log (not only the tail the error shows), and the
comparison counts a question as agreeing when the two rates are inside binomial noise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import engines_agree as bench  # noqa: E402


def test_a_failed_cell_keeps_its_whole_log_and_the_error_names_it(tmp_path):
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nfor i in $(seq 1 3000); do echo "engine line $i" >&2; done\nexit 3\n')
    fake.chmod(0o755)
    args = bench.make_parser().parse_args(["--model", "m", "--task-dir", "t"])
    with pytest.raises(SystemExit) as err:
        bench.run_eval(str(fake), args, "vllm", tmp_path / "keep" / "vllm")
    log = tmp_path / "keep" / "vllm.log"
    assert str(log) in str(err.value) and "exit 3" in str(err.value)
    assert "engine line 3000" in str(err.value) and "engine line 1\n" not in str(err.value)
    assert log.read_text().startswith("engine line 1\n") and "engine line 3000" in log.read_text()


def test_rates_inside_binomial_noise_agree_and_far_apart_do_not():
    hf = {"c": [5, 10, 0], "m": [10, 10, 10], "triggers": [2.0, 3.0, 1.0], "greedy": {}}
    vl = {"c": [6, 1, 0], "m": [10, 10, 10], "triggers": [1.0, 1.0, 1.0], "greedy": {}}
    out = bench.compare(hf, vl)
    assert out["agree"] == 2 and out["questions"] == 3
    assert out["triggers_per_sample"]["ratio"] == 0.5


def test_the_trigger_difference_gets_a_z_and_identical_greedy_rails_are_counted():
    hf = {"c": [1, 1], "m": [4, 4], "triggers": [1.0, 2.0, 3.0, 2.0], "greedy": {0: [5, 6, 7], 1: [5, 6]}}
    vl = {"c": [1, 1], "m": [4, 4], "triggers": [2.0, 2.0, 2.0, 2.0], "greedy": {0: [5, 6, 7], 1: [5, 8]}}
    out = bench.compare(hf, vl)
    assert out["triggers_per_sample"]["z"] == 0.0 and out["greedy_identical"] == 1
    far = bench.compare(hf, {**vl, "triggers": [9.0, 9.5, 8.5, 9.0]})
    assert far["triggers_per_sample"]["z"] > 10


def test_both_engines_run_in_the_same_dtype_float32_unless_told():
    args = bench.make_parser().parse_args(["--model", "m", "--task-dir", "t"])
    for backend in ("transformers", "vllm"):
        cmd = bench.eval_args(args, backend, Path("out"))
        assert cmd[cmd.index("--dtype") + 1] == "float32"
    args = bench.make_parser().parse_args(["--model", "m", "--task-dir", "t", "--dtype", "bfloat16"])
    cmd = bench.eval_args(args, "vllm", Path("out"))
    assert cmd[cmd.index("--dtype") + 1] == "bfloat16"


def test_an_unknown_dtype_is_refused_before_any_engine_runs(capsys):
    with pytest.raises(SystemExit) as err:
        bench.make_parser().parse_args(["--model", "m", "--task-dir", "t", "--dtype", "fp8"])
    assert err.value.code == 2 and "'fp8'" in capsys.readouterr().err
