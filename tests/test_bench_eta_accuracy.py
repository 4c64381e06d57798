"""bench/eta_accuracy.py: the sweep's ETA against the time its trials took, read from the printed progress."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import eta_accuracy  # noqa: E402

LOG = """[sweep] plan of sweep 'mini', table 3, as priced before it starts:
[sweep] cells 0/21 done (0 skipped), 3 running, 0 failed, 18 queued | 0 samples, 0.0 samples/s, 10s
[sweep] cells 2/21 done (0 skipped), 3 running, 0 failed, 16 queued | 900 samples, 45.0 samples/s, 20s, ETA 20m00s
[sweep] cells 11/21 done (0 skipped), 3 running, 0 failed, 7 queued | 30000 samples, 100.0 samples/s, 300s, ETA 5m00s
[sweep] cells 16/21 done (0 skipped), 3 running, 0 failed, 2 queued | 45000 samples, 100.0 samples/s, 450s, ETA 2m40s
[sweep] cells 21/21 done (0 skipped), 0 running, 0 failed, 0 queued | 61200 samples, 102.0 samples/s, 600s, ETA 0s
[sweep] done in 621.0s: 21 cells, 0 skipped, 0 failed; parent run abc
"""


@pytest.mark.parametrize("text, want", [("0s", 0), ("42s", 42), ("3m05s", 185), ("1h02m", 3720)])
def test_durations_are_read_as_the_progress_line_writes_them(text, want):
    assert eta_accuracy.seconds(text) == want


def test_each_prediction_is_scored_against_the_time_the_trials_took(tmp_path, capsys):
    log = tmp_path / "demo.log"
    log.write_text(LOG)
    assert eta_accuracy.main([str(log)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trials_s"] == 600
    errors = {line["elapsed_s"]: line["error"] for line in out["lines"]}
    assert errors == pytest.approx({20: (1200 - 580) / 580, 300: 0.0, 450: (160 - 150) / 150})
    assert out["worst_error_from_halfway"] == pytest.approx(10 / 150)  # the early over-estimate is not judged
    assert out["within_25_percent_from_halfway"] is True


def test_a_log_without_a_finished_sweep_is_one_error_line(tmp_path, capsys):
    log = tmp_path / "demo.log"
    log.write_text(LOG.split("[sweep] cells 21/21")[0])
    assert eta_accuracy.main([str(log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not finish" in err[0]
