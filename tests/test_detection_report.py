"""Clean-subset reporting: full and clean scores, contamination rate and their paired-bootstrap CIs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from railsweep.detection.report import flags_from_detections, sa_ppg_report, subset_report
from railsweep.errors import ConfigError, DataError


def table(sp, m=4, start=0):
    sp = np.asarray(sp, dtype=float)
    c = np.round(sp * m).astype(int)
    return pd.DataFrame(
        {"question_index": np.arange(start, start + sp.size), "leaked": None, "c": c, "m": m,
         "solve_prob": c / m, "r01": (c > m // 2).astype(int)}
    )  # fmt: skip


def row(rep, name):
    return rep.set_index("statistic").loc[name]


LOPSIDED = table([1, 1, 0.75, 1, 0, 0.25, 0.5, 0, 0.25, 0, 0.75, 0.5])
FLAGS = {0, 1, 3, 10}  # the easy items


def test_point_estimates_equal_a_naive_computation():
    rep = subset_report(LOPSIDED, FLAGS, n_boot=50)
    x = LOPSIDED.solve_prob.to_numpy()
    clean = [v for i, v in enumerate(x) if i not in FLAGS]
    assert row(rep, "full").value == pytest.approx(sum(x) / len(x))
    assert row(rep, "clean").value == pytest.approx(sum(clean) / len(clean))
    assert row(rep, "contamination_rate").value == pytest.approx(4 / 12)
    assert row(rep, "full_minus_clean").value == pytest.approx(sum(x) / len(x) - sum(clean) / len(clean))
    assert row(rep, "clean").n_questions == 8


def test_every_ci_contains_its_point_estimate():
    rep = subset_report(LOPSIDED, FLAGS, weight=0.3, n_boot=400, seed=1)
    assert ((rep.ci_low <= rep.value) & (rep.value <= rep.ci_high)).all()


def test_difference_ci_equals_a_naive_paired_loop_with_the_same_seed():
    n_boot, seed = 200, 7
    rep = subset_report(LOPSIDED, FLAGS, n_boot=n_boot, seed=seed)
    x = LOPSIDED.solve_prob.to_numpy()
    flagged = np.array([i in FLAGS for i in range(x.size)])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))  # one stratum: a plain bootstrap
    full, clean, diff = [], [], []
    for b in range(n_boot):
        sample, fl = x[idx[b]], flagged[idx[b]]
        f = sample.mean()
        c = sample[~fl].mean() if (~fl).any() else np.nan
        full.append(f)
        clean.append(c)
        diff.append(f - c)
    for name, boot in (("full", full), ("clean", clean), ("full_minus_clean", diff)):
        boot = np.array(boot)
        boot = boot[np.isfinite(boot)]
        lo, hi = np.quantile(boot, [0.025, 0.975])
        assert (row(rep, name).ci_low, row(rep, name).ci_high) == pytest.approx((lo, hi))
        assert row(rep, name).n_boot_used == boot.size


@pytest.mark.parametrize(("weight", "same_as"), [(0.0, "clean"), (1.0, "full")])
def test_weight_zero_is_the_clean_subset_and_weight_one_the_full_set(weight, same_as):
    rep = subset_report(LOPSIDED, FLAGS, weight=weight, n_boot=100, seed=2)
    got, want = row(rep, f"weighted w={weight:g}"), row(rep, same_as)
    assert (got.value, got.ci_low, got.ci_high) == pytest.approx((want.value, want.ci_low, want.ci_high))


def test_intermediate_weight_is_the_weighted_mean():
    rep = subset_report(LOPSIDED, FLAGS, weight=0.25, n_boot=10)
    x = LOPSIDED.solve_prob.to_numpy()
    w = np.array([0.25 if i in FLAGS else 1.0 for i in range(x.size)])
    assert row(rep, "weighted w=0.25").value == pytest.approx((w * x).sum() / w.sum())


def test_r01_readout_reports_accuracy_of_the_first_sample():
    rep = subset_report(LOPSIDED, FLAGS, readout="r01", n_boot=10)
    assert row(rep, "full").value == pytest.approx(LOPSIDED.r01.mean())


@pytest.mark.parametrize(
    ("flags", "kw", "err", "match"),
    [
        ({99}, {}, DataError, "99"),
        (set(range(12)), {}, DataError, "clean subset is empty"),
        (FLAGS, {"weight": 1.5}, ConfigError, "weight"),
        (FLAGS, {"readout": "c"}, ConfigError, "readout"),
    ],
)
def test_bad_report_input_is_refused(flags, kw, err, match):
    with pytest.raises(err, match=match):
        subset_report(LOPSIDED, flags, n_boot=10, **kw)


def test_sa_ppg_report_scores_the_pair_on_all_and_on_unflagged_questions():
    from railsweep.analysis.scoring import score_pair

    clean = table([0.25, 0.5, 1, 0, 0.75, 0.5, 0.25, 1, 0, 0.5])
    mitigated = table([1, 1, 0.75, 0, 0.5, 0.5, 0.25, 1, 0.25, 0.5])
    flags = {0, 1}
    rep = sa_ppg_report(clean, mitigated, flags, B=5, n_boot=50, seed=3).set_index("metric")
    full = score_pair(clean, mitigated, B=5, n_boot=50, seed=3)
    keep = ~clean.question_index.isin(flags)
    sub = score_pair(clean[keep], mitigated[keep], B=5, n_boot=50, seed=3)
    assert rep.loc["sa_ppg", "full"] == pytest.approx(full["sa_ppg"]["value"])
    assert rep.loc["sa_ppg", "clean_subset"] == pytest.approx(sub["sa_ppg"]["value"])
    assert rep.loc["sa_ppg", "clean_subset_ci_high"] == pytest.approx(sub["sa_ppg"]["ci_high"], nan_ok=True)
    assert (rep.loc["n_questions", "full"], rep.loc["n_questions", "clean_subset"]) == (10, 8)


def _detections(rows):
    cols = ["detector", "setting", "family", "domain", "item_id", "group", "flagged"]
    df = pd.DataFrame(rows, columns=cols)
    df["flagged"] = df["flagged"].astype("boolean")
    return df


def test_flags_are_the_flagged_test_items_of_one_setting_and_ambiguity_is_refused():
    det = _detections(
        [("ngram", "n=8", None, "gsm8k", 0, "test", True), ("ngram", "n=8", None, "gsm8k", 1, "test", None),
         ("ngram", "n=8", None, "gsm8k", 0, "control", True), ("ngram", "n=13", None, "gsm8k", 1, "test", True)]
    )  # fmt: skip
    assert flags_from_detections(det, "ngram", setting="n=8") == {0}
    with pytest.raises(ConfigError, match="2 settings"):
        flags_from_detections(det, "ngram")
    with pytest.raises(ConfigError, match="no test rows for detector 'loss'"):
        flags_from_detections(det, "loss")


def test_cli_report_prints_and_writes_the_side_by_side_table(tmp_path, capsys):
    from detection_cells import write_cells

    from railsweep.cli import main

    orig, para = write_cells(tmp_path, [4, 3, 0, 4, 1, 2], [0, 3, 1, 4, 1, 2])
    det = tmp_path / "det"
    assert main(["detect", "--detector", "perturb", "--original", str(orig), "--paraphrased", str(para),
                 "--threshold", "0.5", "--out", str(det)]) == 0  # fmt: skip
    capsys.readouterr()
    out = tmp_path / "rep"
    args = ["detect", "report", "--questions", str(orig), "--flags", str(det), "--detector", "perturb",
            "--weight", "0.5", "--n-boot", "50", "--clean", str(para), "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "| clean |" in printed and "| weighted w=0.5 |" in printed and "| sa_ppg |" in printed
    rep = pd.read_csv(out / "report.csv").set_index("statistic")
    assert rep.loc["contamination_rate", "value"] == pytest.approx(1 / 6)
    assert rep.loc["clean", "value"] == pytest.approx(np.mean([0.75, 0, 1, 0.25, 0.5]))
    assert sorted(p.name for p in out.iterdir()) == ["report.csv", "report.md", "report_sa_ppg.csv"]

    bad = tmp_path / "bad"
    assert main([*args[:-1], str(bad), "--weight", "2"]) == 2
    assert not bad.exists()
