"""bench/patched_paths.py: one JSON line per family with both paths' rates, the speed-up and the share of samples
the two paths give alike; bad sizes are refused before anything loads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import patched_paths  # noqa: E402


def test_each_family_gets_both_paths_rates_and_the_samples_agree(smoke_world, capsys):
    argv = ["--preset", "smoke", "--cache-dir", str(smoke_world), "--families", "llama", "--questions", "1",
            "--m", "2", "--max-new-tokens", "8", "--repeats", "1"]  # fmt: skip
    assert patched_paths.main(argv) == 0
    (line,) = capsys.readouterr().out.splitlines()
    got = json.loads(line)
    assert got["model"] == "miniworld:smoke/llama" and got["command"] == "python bench/patched_paths.py " + " ".join(argv)
    assert all(got[p]["samples"] == 2 and got[p]["tokens_per_s"] > 0 for p in ("padded", "cascade"))
    assert got["speedup"] > 0 and got["same_samples_share"] == 1.0


def test_a_size_below_one_is_refused_before_anything_loads(capsys):
    with pytest.raises(SystemExit) as exc:
        patched_paths.main(["--preset", "smoke", "--repeats", "0"])
    assert exc.value.code == 2 and "--repeats must be >= 1, got 0" in capsys.readouterr().err
