"""Detection inside a sweep, without Ray or MLflow: the spec's ``detectors:``, the readout cells cdd and perturb
read, the paraphrased split, the ROC curve and the metric names the detection step logs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from railsweep.errors import ConfigError
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import load_spec, spec_from_dict

BASE = {"miniworld_preset": "smoke", "families": ["llama"], "domains": ["gsm8k", "pq"]}


def _spec(detectors, **more):
    return spec_from_dict({**BASE, "detectors": detectors, **more})


def test_detectors_take_names_and_mappings_with_params_and_a_threshold():
    spec = _spec(["ngram", {"name": "loss"}, {"name": "mink", "params": {"k": 10}}, "cdd",
                  {"name": "perturb", "threshold": 0.2}, ])  # fmt: skip
    assert [d.name for d in spec.detectors] == ["ngram", "loss", "mink", "cdd", "perturb"]
    assert spec.detectors[2].build().config.k == 10
    assert spec.detectors[4].threshold == 0.2 and spec.detectors[0].threshold is None
    assert spec.detection.control_rate == 0.01  # the section's defaults
    ngram = _spec([{"name": "ngram", "params": {"n": [8, 13], "fields": "question"}}]).detectors[0].build()
    assert ngram.config.n == (8, 13) and ngram.config.fields == "question"


def test_a_detection_only_spec_needs_no_strategies_but_an_empty_one_still_fails():
    assert _spec(["ngram"]).strategies == ()
    with pytest.raises(ConfigError, match="no strategies"):
        spec_from_dict(BASE)


@pytest.mark.parametrize(
    ("detectors", "message"),
    [
        (["ngramm"], "unknown detector 'ngramm' (did you mean 'ngram'?); known detectors: cdd, loss, mink"),
        ([{"name": "mink", "params": {"kk": 1}}], "unknown parameter(s) ['kk'] for detector 'mink'"),
        ([{"name": "mink", "params": {"k": 0}}], "k must be a percentage in (0, 100], got k=0"),
        ([{"name": "ngram", "params": {"n": [0]}}], "detectors[0]: n-gram order n must be an integer >= 1, got n=0"),
        ([{"name": "cdd", "threshold": 1.5}], "threshold for detector 'cdd' must lie in [0, 1], got 1.5"),
        ([{"name": "perturb", "threshold": "0.2"}], "detectors[0].threshold: input should be a valid number"),
        ([{"name": "loss", "weight": 1}], "unknown key 'weight' in detectors; allowed: ['name', 'params', 'threshold']"),
        (["loss", "loss"], "detector 'loss' is listed twice"),
        ([], "detectors: is an empty list"),
        ("ngram", "detectors: must be a list of detector names"),
    ],
    ids=["unknown-name", "unknown-param", "bad-param", "bad-order", "threshold-range", "threshold-type",
         "unknown-key", "twice", "empty", "not-a-list"],
)  # fmt: skip
def test_a_bad_detector_entry_is_one_config_error_naming_it(detectors, message):
    with pytest.raises(ConfigError) as e:
        _spec(detectors)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_detection_settings_are_validated_and_detectors_need_the_miniature_world():
    with pytest.raises(ConfigError, match=r"detection.control_rate: input should be less than or equal to 1"):
        _spec(["ngram"], detection={"control_rate": 1.5})
    with pytest.raises(ConfigError, match="unknown key 'rate' in detection"):
        _spec(["ngram"], detection={"rate": 0.1})
    paths = {"source": "paths", "families": {"fa": {"base": "/m", "adapters": {"clean": "/c", "co_gsm8k": "/g"}}},
             "domains": ["gsm8k"], "detectors": ["loss"]}  # fmt: skip
    with pytest.raises(ConfigError, match="need source 'miniworld'"):
        spec_from_dict(paths)


def test_a_spec_without_detectors_keeps_its_sweep_id_and_detectors_change_it():
    smoke = load_spec("smoke")
    assert smoke.sweep_id == "9927a24e6b24"  # the id it had before the spec knew detectors (resume finds it)
    assert dataclasses.replace(smoke, detectors=_spec(["ngram"]).detectors).sweep_id != smoke.sweep_id


def test_the_mini_detect_preset_is_every_family_and_domain_with_every_detector():
    spec = load_spec("mini_detect")
    assert spec.miniworld_preset == "mini" and spec.strategies == ()
    assert [f.name for f in spec.families] == ["llama", "neox", "gemma"] and spec.domains == ("gsm8k", "pq")
    assert [d.name for d in spec.detectors] == ["ngram", "loss", "mink", "cdd", "perturb"]


@pytest.fixture(scope="module")
def resolved(smoke_world):
    return resolve_spec(
        _spec(["ngram", "cdd", {"name": "perturb", "threshold": 0.2}], cache_dir=str(smoke_world))
    )


def test_cdd_and_perturb_add_one_readout_cell_per_wording_and_the_others_none(resolved):
    from railsweep.sweep.plan.detect_cells import readout_cells

    cells, pairs = readout_cells(resolved)
    assert len(cells) == 4 and len({c.cell_id for c in cells}) == 4  # (gsm8k, pq) x (original, paraphrased)
    assert [(p["family"], p["domain"]) for p in pairs] == [("llama", "gsm8k"), ("llama", "pq")]
    by_id = {c.cell_id: c for c in cells}
    for p in pairs:
        orig, para = by_id[p["original"]].config, by_id[p["paraphrased"]].config
        assert orig.adapter == para.adapter == f"co_{p['domain']}"
        assert orig.strategy == para.strategy == "ted" and orig.strategy_params["tau"] == -1
        assert orig.task_dir == resolved.data_dir and para.task_dir != resolved.data_dir
        assert by_id[p["original"]].clean_id is None  # left out of the paper tables
        assert "paraphrased" in by_id[p["paraphrased"]].label()
    only_cdd = dataclasses.replace(resolved, detectors=_spec(["cdd"]).detectors)
    cells, pairs = readout_cells(only_cdd)
    assert len(cells) == 2 and all("paraphrased" not in p for p in pairs)
    assert readout_cells(dataclasses.replace(resolved, detectors=_spec(["ngram", "loss"]).detectors)) == (
        [],
        [],
    )


def test_the_paraphrased_split_rewords_each_test_question_and_keeps_its_solution(resolved):
    from pathlib import Path

    from railsweep.sweep.plan.detect_cells import paraphrase_dir
    from railsweep.tasks.data.gsm8k_rows import read_jsonl

    original = read_jsonl(Path(resolved.data_dir) / "test.jsonl")
    para = read_jsonl(paraphrase_dir(resolved) / "test.jsonl")
    pq = [json.loads(line) for line in (Path(resolved.data_dir) / "pq_test.jsonl").read_text().splitlines()]
    assert len(para) == len(original)
    assert [r["answer"] for r in para] == [r["answer"] for r in original]
    assert [r["question"] for r in para] == [r["question"] for r in pq]
    assert sum(a["question"] != b["question"] for a, b in zip(para, original)) >= len(original) // 2


def test_the_roc_curve_has_the_area_of_the_rank_sum_auc_with_ties_on_lopsided_data():
    from railsweep.metrics.auc import roc_auc, roc_curve

    rng = np.random.default_rng(3)
    score = np.round(rng.normal(size=41), 1)  # rounding makes ties, some across the classes
    label = rng.random(41) < 0.2
    score[label] += 0.7
    score[5] = np.nan
    fpr, tpr = roc_curve(score, label)
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert np.trapezoid(tpr, fpr) == pytest.approx(roc_auc(score, label), abs=1e-12)
    assert roc_curve(score, np.zeros(41, bool))[0].size == 0


def test_logged_metric_names_keep_only_mlflow_characters():
    from railsweep.sweep.run.detection import metric_name

    row = {"detector": "ngram", "setting": "n=13,fields=question+solution", "family": None, "domain": "pq"}
    assert metric_name(row, "auc") == "detect.ngram.n_13_fields_question_solution.corpus.pq.auc"
    row = {"detector": "loss", "setting": "reference=clean", "family": "llama", "domain": "gsm8k"}
    assert metric_name(row, "tpr") == "detect.loss.reference_clean.llama.gsm8k.tpr"
