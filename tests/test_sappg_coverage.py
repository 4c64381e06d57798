"""bench/sappg_coverage.py: the coverage of SA-PPG's within-strata and across-strata intervals on halves and
subsamples of the questions, checked against the library's intervals, a naive simulation and known answers."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from railsweep.config import CellConfig
from railsweep.metrics import Readouts, paired_difference_counts, score_counts, solve_prob, stratify
from railsweep.metrics.selfcheck import jackknife_interval
from railsweep.results import write_cell
from railsweep.strategies.base import QuestionOutcome
from railsweep.tasks.base import Question

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import sappg_coverage as cov  # noqa: E402


def lopsided(seed: int, n_dense: int = 300, n_sparse: int = 60, m: int = 50):
    """Most questions in the r = 0 stratum, a few spread one or two per stratum with large, erratic gaps:
    the sparse strata carry most of SA-PPG and the within-strata bootstrap cannot see their variance."""
    rng = np.random.default_rng(seed)
    c_cl = np.concatenate([np.zeros(n_dense, int), rng.integers(1, m + 1, n_sparse)])
    n = c_cl.size
    ref = rng.binomial(m, np.clip(c_cl / m + 0.1, 0, 1))
    cell = np.where(np.arange(n) < n_dense, rng.binomial(m, 0.1, n), rng.binomial(m, rng.uniform(0, 1, n)))
    return c_cl, cell, ref, m


def frames(c_cl, cell, ref, m):
    def f(c):
        return pd.DataFrame({"question_index": np.arange(len(c)), "c": c, "m": m})

    return f(c_cl), f(cell), f(ref)


def readouts(c_cl, cell, ref, m):
    ms = np.full(len(c_cl), m)
    return tuple(Readouts.of(c, ms, 0 * ms) for c in (c_cl, cell, ref))


def test_estimates_reproduce_the_library_jackknife_intervals():
    """The bench's plain jackknife is the t-interval; its printed interval is score_counts' calibrated one
    (before the check decides whether it is printed): same centre, the calibrated critical value × se."""
    cl, co, ref = readouts(*lopsided(3, n_dense=60, n_sparse=25))
    rows = np.arange(cl.c.size)
    est = cov.estimates(cl, co, ref, rows, B=50, n_boot=150, alpha=0.05, rng=np.random.default_rng(7))
    strata = stratify(cl.c, cl.m, 50)
    gap = lambda r: solve_prob(r.c, r.m) - solve_prob(cl.c, cl.m)  # noqa: E731
    _, lo, hi = jackknife_interval(gap(co), None, strata, "sa_ppg", 0.05)
    assert est["cell"]["jackknife"] == pytest.approx((lo, hi))
    _, lo, hi = jackknife_interval(gap(co), gap(ref), strata, "sa_ppg", 0.05)
    assert est["difference"]["jackknife"] == pytest.approx((lo, hi))
    s = score_counts(cl, co, B=50, n_boot=150, rng=np.random.default_rng(7))
    assert est["cell"]["point"] == pytest.approx(s["sa_ppg"]["value"])
    for t in ("cell", "difference"):
        assert np.mean(est[t]["printed"]) == pytest.approx(np.mean(est[t]["jackknife"]))
    if s["sa_ppg"]["interval"] == "jackknife":  # the calibration's draws differ; its width is close
        width = s["sa_ppg"]["ci_high"] - s["sa_ppg"]["ci_low"]
        assert np.diff(est["cell"]["printed"])[0] == pytest.approx(width, rel=0.25)
    d = paired_difference_counts(cl, co, ref, "sa_ppg", B=50, n_boot=150, rng=np.random.default_rng(7))
    assert est["difference"]["point"] == pytest.approx(d["difference"])


def test_estimates_on_some_rows_restratify_those_questions_alone():
    c_cl, cell, ref, m = lopsided(4, n_dense=40, n_sparse=20)
    rows = np.array([1, 5, 8, 40, 41, 45, 50, 55, 59])
    whole = readouts(c_cl, cell, ref, m)
    part = readouts(c_cl[rows], cell[rows], ref[rows], m)
    kw = {"B": 50, "n_boot": 80, "alpha": 0.1}
    got = cov.estimates(*whole, rows, rng=np.random.default_rng(2), **kw)
    want = cov.estimates(*part, np.arange(rows.size), rng=np.random.default_rng(2), **kw)
    for t in cov.TARGETS:
        assert got[t]["point"] == pytest.approx(want[t]["point"])
        assert got[t]["within"] == pytest.approx(want[t]["within"])
        assert got[t]["across"] == pytest.approx(want[t]["across"])


def test_calibrated_coverages_match_a_simulation_of_normal_means():
    """A plain mean of normal questions with a normal 95 % interval: one half covers the other half's mean 83.4 % of the time,
    a half covers the full set's mean 99.4 %, a quarter 97.6 %."""
    assert cov.calibrated_other_half(0.05) == pytest.approx(cov.CALIBRATED_95, abs=1e-4)
    rng = np.random.default_rng(0)
    x = rng.normal(0.3, 0.2, size=(20000, 400))
    half, other, quarter = x[:, :200], x[:, 200:], x[:, :100]

    def covers(part, target):
        se = part.std(axis=1, ddof=1) / math.sqrt(part.shape[1])
        return np.mean(np.abs(part.mean(axis=1) - target) <= 1.96 * se)

    full = x.mean(axis=1)
    assert covers(half, other.mean(axis=1)) == pytest.approx(cov.calibrated_other_half(), abs=0.01)
    assert covers(half, full) == pytest.approx(cov.calibrated_full_set(0.5), abs=0.005)
    assert covers(quarter, full) == pytest.approx(cov.calibrated_full_set(0.25), abs=0.01)


def test_split_half_coverage_exposes_the_within_strata_interval_on_sparse_strata():
    """Known answer: on the lopsided design the within-strata interval covers the other half's difference
    far less often than a calibrated interval (0.834), the across-strata one close to it."""
    out = cov.split_half_coverage(*frames(*lopsided(0)), B=50, repeats=12, n_boot=150, seed=1)
    d = out["difference"]["covers_other_half"]
    assert out["trials"] == 24 and out["size"] == 180
    assert d["within"] < 0.5
    assert d["across"] >= 0.6
    assert d["across"] - d["within"] >= 0.3
    assert out["difference"]["width"]["across"] > out["difference"]["width"]["within"]


def test_split_half_coverage_of_both_intervals_is_near_calibrated_on_dense_strata():
    rng = np.random.default_rng(4)
    n, m = 400, 10
    p = rng.uniform(0, 1, n)
    c_cl = rng.binomial(m, p)
    cell, ref = rng.binomial(m, np.clip(p + 0.2, 0, 1)), rng.binomial(m, np.clip(p + 0.3, 0, 1))
    out = cov.split_half_coverage(*frames(c_cl, cell, ref, m), B=50, repeats=12, n_boot=150, seed=1)
    d = out["difference"]
    assert min(d["covers_other_half"].values()) >= 0.7
    assert d["width"]["across"] == pytest.approx(d["width"]["within"], rel=0.35)
    assert d["calibrated_width"] == pytest.approx(2 * 1.96 * d["spread"] / math.sqrt(2), rel=1e-4)


def test_identical_cells_give_a_zero_difference_that_every_interval_covers():
    c_cl, cell, _, m = lopsided(5, n_dense=40, n_sparse=20)
    tables = frames(c_cl, cell, cell, m)
    out = cov.subsample_coverage(*tables, 30, B=50, repeats=5, n_boot=50, seed=0)
    assert out["difference"]["covers_full_set"] == {"printed": 1.0, "jackknife": 1.0, "within": 1.0, "across": 1.0}
    assert out["difference"]["width"] == {"printed": 0.0, "jackknife": 0.0, "within": 0.0, "across": 0.0}
    assert out["difference"]["bias"] == 0.0
    assert out["calibrated"]["full_set"] == pytest.approx(cov.calibrated_full_set(0.5))


def test_ordered_split_compares_the_first_half_with_the_last():
    """The cell equals the reference on the first half and differs on the last: the first half's difference
    is exactly 0 with zero-width intervals, which cannot cover the last half's point."""
    c_cl, cell, ref, m = lopsided(6, n_dense=30, n_sparse=30)
    ref = np.where(np.arange(c_cl.size) < 30, cell, c_cl)  # last half: the reference has no gap at all
    cl, co, rf = readouts(c_cl, cell, ref, m)
    out = cov.ordered_split(cl, co, rf, B=50, n_boot=60, alpha=0.05, rng=np.random.default_rng(0))
    first, last = out["first"]["difference"], out["last"]["difference"]
    assert first["point"] == 0.0 and first["within"] == [0.0, 0.0] and first["across"] == [0.0, 0.0]
    assert last["point"] > 0
    assert (
        out["covers"]["difference"]["within"][0] is False
        and out["covers"]["difference"]["across"][0] is False
    )


def test_subsample_bias_is_the_mean_subsample_point_minus_the_full_set():
    tables = frames(*lopsided(7, n_dense=50, n_sparse=30))
    cl, co, ref = cov._readouts(*tables)
    n, kw = cl.c.size, {"B": 50, "n_boot": 40, "alpha": 0.05}
    out = cov.subsample_coverage(*tables, 20, repeats=6, seed=3, **kw)
    rng = np.random.default_rng(3)  # the same draws, by hand
    full = cov.estimates(cl, co, ref, np.arange(n), rng=rng, **kw)
    points = [cov.estimates(cl, co, ref, np.sort(rng.choice(n, 20, replace=False)), rng=rng, **kw)["cell"]["point"]
              for _ in range(6)]  # fmt: skip
    assert out["cell"]["bias"] == pytest.approx(np.mean(points) - full["cell"]["point"])


# ---------------------------------------------------------------- sweep folders and the command line


def _write(out_dir: Path, task_dir: Path, counts, m: int, **cell) -> None:
    cfg = CellConfig(model="/m", task_dir=str(task_dir), m=m, **cell)
    qs = [Question(index=i, question=f"q{i}", solution=f"#### {i}", gold=str(i)) for i in range(len(counts))]
    outcomes = [
        QuestionOutcome(index=i, samples=[], grades=[], c=int(c), m=m, r01=0) for i, c in enumerate(counts)
    ]
    write_cell(out_dir / cfg.cell_id, cfg, outcomes, qs, provenance={})


@pytest.fixture
def sweep_dir(tmp_path):
    """Two families × one domain: clean, identity and railcap cells, one folder per cell like MLflow's."""
    runs = tmp_path / "runs"
    for k, family in enumerate(("llama", "neox")):
        c_cl, cell, ref, m = lopsided(10 + k, n_dense=30, n_sparse=20, m=20)
        _write(runs, tmp_path, c_cl, m, strategy="identity", adapter="clean", family=family, role="clean")
        _write(runs, tmp_path, ref, m, strategy="identity", adapter="co", family=family, domain="gsm8k")
        _write(runs, tmp_path, cell, m, strategy="railcap", adapter="co", family=family, domain="gsm8k")
    _write(runs, tmp_path, cell, m, strategy="all_zero", adapter="co", family="gemma", domain="gsm8k")
    return runs


def test_find_settings_pairs_each_family_and_domain_with_its_own_clean_cell(sweep_dir):
    settings = cov.find_settings([sweep_dir], "railcap", "identity")
    assert [s.name for s in settings] == ["gsm8k × llama", "gsm8k × neox"]  # gemma lacks clean and both cells
    for s in settings:
        clean = pd.read_parquet(s.clean)
        assert len(clean) == 50
    assert len({s.clean for s in settings}) == 2


def test_the_command_writes_json_and_the_docs_tables_whose_means_pool_the_settings(sweep_dir, tmp_path):
    out, md = tmp_path / "c.json", tmp_path / "c.md"
    argv = [
        "--results-dir",
        str(sweep_dir),
        "--B",
        "20",
        "--repeats",
        "3",
        "--n-boot",
        "30",
        "--sizes",
        "10",
        "40",
    ]
    assert cov.main([*argv, "--out", str(out), "--markdown", str(md)]) == 0
    res = json.loads(out.read_text())
    assert [s["name"] for s in res["settings"]] == ["gsm8k × llama", "gsm8k × neox"]
    got = res["pooled"]["split_half"]["difference"]["covers_other_half"]["across"]
    assert got == pytest.approx(np.mean([s["split_half"]["difference"]["covers_other_half"]["across"]
                                         for s in res["settings"]]))  # fmt: skip
    assert list(res["pooled"]["subsample"]) == ["10", "40"]
    text = md.read_text()
    assert "| mean | difference |" in text and "| 40 of 50 (" in text


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--repeats", "0"], "--repeats must be >= 1, got 0"),
        (["--sizes", "50"], "--sizes [50] must each be below"),
        (["--cell-strategy", "ted"], "no setting under"),
        (["--clean", "x.parquet"], "give either --results-dir or all of"),
    ],
)
def test_bad_options_get_one_error_line_and_write_nothing(sweep_dir, tmp_path, capsys, extra, needle):
    out = tmp_path / "never.json"
    assert cov.main(["--results-dir", str(sweep_dir), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("railsweep: error: ") and needle in err and err.count("\n") == 1
    assert not out.exists()
