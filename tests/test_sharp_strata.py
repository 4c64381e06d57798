"""At m ≥ 2B a question's stratum is read almost without noise: a stratified interval is printed only when every
stratum holds enough questions (railsweep.metrics.selfcheck.sharp_stratum_min), in the scores, in what MLflow
gives back, in the planner and in the coverage bench."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from railsweep.analysis.scoring import flatten_scores, unflatten_scores
from railsweep.metrics import Readouts, paired_difference_counts, score_counts
from railsweep.metrics import aggregate as agg
from railsweep.metrics.aggregate import MEAN_METRICS, NO_INTERVAL, STRATIFIED_METRICS
from railsweep.metrics.power import filled_share, format_plan, plan
from railsweep.metrics.selfcheck import SHARP_MIN, Check, sharp_sparse, sharp_stratum_min
from railsweep.metrics.simulate import Population, row_strata

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import interval_coverage  # noqa: E402

M, B = 20, 10  # m = 2B: stratum = count // 2


def clean_counts(per_stratum: list[int]) -> np.ndarray:
    """Counts out of M with ``per_stratum[b]`` questions in stratum b (counts 2b and 2b + 1)."""
    return np.concatenate([np.resize([2 * b, 2 * b + 1], k) for b, k in enumerate(per_stratum)]).astype(int)


def cell(per_stratum: list[int], m: int = M):
    c_cl = clean_counts(per_stratum) * m // M
    rng = np.random.default_rng(0)
    c_co = np.clip(c_cl + rng.integers(-5, 6, c_cl.size), 0, m)
    ms = np.full(c_cl.size, m)
    return Readouts.of(c_cl, ms, (c_cl > m // 2).astype(int)), Readouts.of(c_co, ms, (c_co > m // 2).astype(int))


@pytest.fixture
def passing_check(monkeypatch):
    """The simulated check passes (0.97, critical value 2.5): what is withheld here is the rule's doing."""
    monkeypatch.setattr(agg, "self_check", lambda *a, **k: dict.fromkeys(STRATIFIED_METRICS, Check(0.97, 2.5, 0.1)))


def test_the_rule_reads_the_sparsest_stratum_only_when_m_is_at_least_twice_b():
    strata = row_strata(clean_counts([6] * 9 + [3]), M, B)
    assert sharp_stratum_min(strata, M, B) == 3 and sharp_sparse(strata, M, B)
    assert sharp_stratum_min(row_strata(clean_counts([0] + [6] * 9), M, B), M, B) == 0  # an empty stratum counts
    assert sharp_stratum_min(strata, 19, B) is None and not sharp_sparse(strata, 19, B)  # m < 2B: no rule
    assert sharp_stratum_min(strata, None, B) is None
    assert not sharp_sparse(row_strata(clean_counts([SHARP_MIN] * 10), M, B), M, B)


def test_a_sparse_stratum_at_m_2b_withholds_every_stratified_interval_with_its_reason(passing_check):
    clean, co = cell([3] + [8] * 9)
    s = score_counts(clean, co, B=B, n_boot=100, rng=np.random.default_rng(0))
    for name in STRATIFIED_METRICS:
        e = s[name]
        assert e["interval"] == "none" and np.isnan(e["ci_low"]) and np.isfinite(e["value"]), name
        assert e["sharp_min"] == 3 and "sparsest stratum holds 3 question(s)" in e["why"], name
        assert f"m={M} >= 2B (B={B})" in e["why"] and f"needs {SHARP_MIN}" in e["why"], name
    for name in MEAN_METRICS:
        assert s[name]["interval"] == "bootstrap", name
    d = paired_difference_counts(clean, co, clean, "sa_ppg", B=B, n_boot=100, rng=np.random.default_rng(0))
    assert d["interval"] == "none" and d["verdict"] == NO_INTERVAL and "sparsest stratum" in d["why"]


def test_every_stratum_holding_enough_questions_prints_the_interval(passing_check):
    s = score_counts(*cell([SHARP_MIN] * 10), B=B, n_boot=100, rng=np.random.default_rng(0))
    for name in STRATIFIED_METRICS:
        assert s[name]["interval"] == "jackknife" and s[name]["why"] == "" and s[name]["sharp_min"] == SHARP_MIN


def test_below_m_2b_a_sparse_stratum_leaves_the_decision_to_the_check(passing_check):
    s = score_counts(*cell([3] + [8] * 9, m=10), B=B, n_boot=100, rng=np.random.default_rng(0))
    for name in STRATIFIED_METRICS:
        assert s[name]["interval"] == "jackknife" and "sharp_min" not in s[name], name


def test_the_reason_comes_back_from_the_logged_numbers(passing_check):
    s = score_counts(*cell([2] + [8] * 9), B=B, n_boot=100, rng=np.random.default_rng(0))
    back = unflatten_scores(flatten_scores(s))
    for name in STRATIFIED_METRICS:
        assert back[name]["interval"] == "none" and back[name]["why"] == s[name]["why"], name
        assert back[name]["sharp_min"] == 2, name


def _pilot(p_cl: np.ndarray) -> Population:
    p = np.stack([p_cl, p_cl, p_cl])
    return Population(("clean", "a", "b"), p, (p > 0.5).astype(float))


def test_the_planner_flags_a_sharp_design_whose_thin_tail_leaves_sparse_strata():
    rng = np.random.default_rng(0)
    thin = _pilot(rng.beta(2.5, 0.9, 2000))  # the reference M_cl: few questions below p = 0.2
    assert filled_share(thin, 100, 50, 10, rng) < 0.1
    assert filled_share(thin, 100, 10, 10, rng) == 1.0  # m < 2B: the rule does not apply
    assert filled_share(_pilot(rng.uniform(0, 1, 2000)), 200, 50, 10, rng) > 0.9
    p = plan(thin, 100, 50, 10, np.random.default_rng(1))
    assert p.too_small and "withheld: sparse strata at m >= 2B" in format_plan([p], "test")


def test_the_coverage_bench_counts_an_interval_as_printed_only_where_the_rule_lets_it():
    c = np.stack([clean_counts([3] + [8] * 9)] * 3)
    passing = dict.fromkeys(interval_coverage.STRATIFIED, (0.97, 2.5))
    for target in ("identity", "difference"):
        out = interval_coverage._strat_intervals(c, M, B, target, passing)
        assert not any(printed for _, _, printed in out.values()), target
    c = np.stack([clean_counts([8] * 10)] * 3)
    out = interval_coverage._strat_intervals(c, M, B, "identity", passing)
    assert all(printed for _, _, printed in out.values())
