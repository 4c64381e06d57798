"""A world build's combined progress: step reports from the training loops, every family's share and one ETA."""

from __future__ import annotations

import json
import os
import re
import time

import pytest
from test_miniworld_world import TINY  # the tiny world config those tests build

from railsweep.miniworld import build_progress, build_world
from railsweep.miniworld.build_progress import Phase, _current, _done, remaining, summary
from railsweep.training import progress as step_progress
from railsweep.training.progress import StepReport, read_report

PHASES = [Phase("pretrain", 1000), Phase("clean", 200), Phase("co_gsm8k", 300), Phase("co_pq", 100)]


def family_state(phases, reports) -> tuple:
    """(share of the family's tokens done, its current phase, seconds left on its chain or None)."""
    left = remaining(phases, reports)
    return _done(phases, reports), _current(phases, reports), None if left is None else left[0]


def _report(done: int, total: int, seconds: float) -> dict:
    return {"done": done, "total": total, "start": 100.0, "time": 100.0 + seconds}


def test_a_family_halfway_through_pretraining_is_timed_at_its_pretraining_rate():
    share, current, left = family_state(PHASES, {"pretrain": _report(5, 10, 50.0)})  # 500 tokens in 50 s
    assert current == "pretrain 5/10"
    assert share == pytest.approx(500 / 1600)
    # 500 pretraining tokens + M_cl's 200 + the longer M_co (300; the two train side by side), at 10 tokens/s
    assert left == pytest.approx((500 + 200 + 300) / 10)


def test_a_started_adapter_runs_at_its_own_rate_and_later_adapters_take_it():
    reports = {"pretrain": _report(10, 10, 100.0), "clean": _report(1, 4, 1.0)}  # clean: 50 tokens/s
    share, current, left = family_state(PHASES, reports)
    assert current == "clean 1/4"
    assert left == pytest.approx((150 + 300) / 50)


def test_a_finished_family_has_nothing_left_and_an_unstarted_one_no_eta():
    done = {ph.name: _report(4, 4, 10.0) for ph in PHASES}
    assert family_state(PHASES, done) == (pytest.approx(1.0), "done", pytest.approx(0.0))
    assert family_state(PHASES, {}) == (0.0, "pretrain next", None)
    between = {"pretrain": _report(10, 10, 100.0)}
    assert family_state(PHASES, between)[1] == "clean next"


def test_the_summary_names_every_family_and_the_slowest_ones_eta(tmp_path):
    plans = {"llama": PHASES, "neox": PHASES}
    assert summary(tmp_path, plans).endswith("eta when every family has a rate")
    for family, seconds in (("llama", 50.0), ("neox", 100.0)):
        path = tmp_path / "progress" / family / "pretrain"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(_report(5, 10, seconds)))
    line = summary(tmp_path, plans, cores=2)
    assert line == "build: llama 31 % (pretrain 5/10), neox 31 % (pretrain 5/10); eta 200s (neox)"
    # on one core the two families' work (110 + 220 s) outlasts neox's chain
    assert summary(tmp_path, plans, cores=1).endswith("; eta 330s (1 cores)")


def test_a_resumed_adapter_is_timed_by_the_steps_it_took_since_it_resumed(tmp_path):
    report = StepReport(tmp_path / "clean")
    report(3, 4)  # resumed at step 3 of 4 from a checkpoint
    report(4, 4)
    assert read_report(tmp_path / "clean")["first"] == 3
    resumed = {"pretrain": _report(10, 10, 100.0), "clean": {**_report(2, 4, 1.0), "first": 1}}  # one step: 50 tok/s
    assert family_state(PHASES, resumed)[2] == pytest.approx((100 + 300) / 50)
    not_yet = {**resumed, "clean": {**resumed["clean"], "first": 2}}  # no step since it resumed: no rate of its own
    assert family_state(PHASES, not_yet)[2] == pytest.approx((100 + 300) / 10)  # the family's other rate


def test_a_family_that_yields_its_core_is_timed_at_its_cpu_rate():
    # 500 tokens in 200 wall seconds but 50 CPU seconds: 10 tokens per CPU second once it has a core
    waiting = {"pretrain": {**_report(5, 10, 200.0), "cpu": 50.0}}
    assert family_state(PHASES, waiting)[2] == pytest.approx((500 + 200 + 300) / 10)
    assert build_progress.remaining(PHASES, waiting) == pytest.approx(((500 + 200 + 300) / 10, 1100 / 10))


def test_a_step_report_counts_the_cpu_seconds_of_its_process(tmp_path):
    report = StepReport(tmp_path / "phase")
    report(0, 2)
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    report(2, 2)
    record = read_report(tmp_path / "phase")
    # at least the 0.05 CPU seconds spun here (less a clock tick); at most what every core could give in the
    # wall time between the two reports (other threads of this process may run too)
    assert 0.04 <= record["cpu"] <= (record["time"] - record["start"] + 0.01) * os.cpu_count()


def test_a_step_report_writes_the_first_and_last_steps_and_at_most_one_in_between(tmp_path, monkeypatch):
    monkeypatch.setattr(step_progress, "EVERY_S", 3600.0)
    report = StepReport(tmp_path / "phase")
    assert read_report(tmp_path / "phase") is None
    report(0, 3)
    assert read_report(tmp_path / "phase")["done"] == 0
    report(1, 3)  # within EVERY_S of the last write: not written
    assert read_report(tmp_path / "phase")["done"] == 0
    report(3, 3)
    record = read_report(tmp_path / "phase")
    assert (record["done"], record["total"]) == (3, 3) and record["time"] >= record["start"]


def test_a_build_logs_the_combined_line_while_families_train_and_leaves_no_reports(tmp_path, monkeypatch):
    monkeypatch.setattr(build_progress, "EVERY_S", 0.2)
    lines: list[str] = []
    world = build_world("tiny", cache_dir=tmp_path, config=TINY, log=lines.append)
    combined = [ln for ln in lines if ln.startswith("build: ")]
    assert combined, lines
    shares = [int(re.match(r"build: neox (\d+) % \(", ln).group(1)) for ln in combined]
    assert shares == sorted(shares) and shares[-1] <= 100
    assert not (world.root / "progress").exists()
