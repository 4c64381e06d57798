"""bench/throughput.py: each measured entry names the hardware and the command that measured it, and a later
measurement keeps the entries of other engines (the table's hardware then names every machine)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import throughput  # noqa: E402


def test_a_measured_entry_names_its_hardware_and_command_beside_the_entries_it_keeps(smoke_world, tmp_path):
    out = tmp_path / "t.json"
    other = {"backend": "transformers", "device": "cpu", "model": "miniworld:mini/llama", "units": 1,
             "tokens_per_s": 2000.0, "hardware": "elsewhere"}  # fmt: skip
    out.write_text(json.dumps({"hardware": "elsewhere", "entries": [other]}))
    argv = ["--preset", "smoke", "--cache-dir", str(smoke_world), "--questions", "2", "--m", "2",
            "--max-new-tokens", "8", "--out", str(out)]  # fmt: skip
    assert throughput.main(argv) == 0
    table = json.loads(out.read_text())
    mine = [e for e in table["entries"] if e["model"].startswith("miniworld:smoke/")]
    assert table["entries"][0] == other and mine and all(e["tokens_per_s"] > 0 for e in mine)
    assert all(e["command"] == "python bench/throughput.py " + " ".join(argv) for e in mine)
    assert table["hardware"] == f"elsewhere / {mine[0]['hardware']}" and "-core CPU" in mine[0]["hardware"]


def test_patched_adds_shortcuts_patched_rate_beside_the_plain_one_and_a_plain_rerun_keeps_it(smoke_world, tmp_path):
    out = tmp_path / "t.json"
    base = ["--preset", "smoke", "--cache-dir", str(smoke_world), "--families", "llama", "--m", "2",
            "--max-new-tokens", "8", "--out", str(out)]  # fmt: skip
    assert throughput.main([*base, "--questions", "2", "--patched", "--patched-questions", "1"]) == 0
    first = json.loads(out.read_text())["entries"]
    assert [(e["decode"], e["questions"], e["samples"]) for e in first] == [("plain", 2, 4), ("patched", 1, 2)]
    assert all(e["tokens_per_s"] > 0 for e in first)
    assert throughput.main([*base, "--questions", "1"]) == 0
    again = json.loads(out.read_text())["entries"]
    assert [(e["decode"], e["questions"]) for e in again] == [("patched", 1), ("plain", 1)]
    assert again[0] == first[1]


def test_patched_on_the_vllm_backend_is_refused_before_anything_loads(capsys):
    with pytest.raises(SystemExit) as exc:
        throughput.main(["--preset", "smoke", "--backend", "vllm", "--patched"])
    assert exc.value.code == 2 and "--patched needs --backend transformers" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        throughput.main(["--preset", "smoke", "--patched", "--patched-questions", "0"])
    assert exc.value.code == 2 and "--patched-questions must be >= 1, got 0" in capsys.readouterr().err
