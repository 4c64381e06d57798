"""The answer rules: final (the default), first, and lm_eval = lm-evaluation-harness gsm8k_cot's own filters.

The lm_eval rule is checked against the harness itself: ``tests/fixtures/lm_eval_gsm8k_cot.json`` holds the
harness's filter outputs and exact_match verdicts for a few hundred responses, written by lm_eval's own code
(``tests/fixtures/make_lm_eval_gsm8k_cot.py``, lm_eval version recorded in the file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from railsweep.config import CellConfig
from railsweep.engines.base import Completion, Sample
from railsweep.errors import ConfigError
from railsweep.evaluate import evaluate_cell, load_task
from railsweep.results import read_cell, read_metadata, read_responses
from railsweep.sweep.run.trial import grading_metrics
from railsweep.tasks import GSM8KTask, grade
from railsweep.tasks.agreement import rule_agreement
from railsweep.tasks.answers.lm_eval_gsm8k import FALLBACK, cut_until, flexible_extract, strict_match
from railsweep.tasks.base import ANSWER_RULES, Question

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "lm_eval_gsm8k_cot.json").read_text(encoding="utf-8")
)
ROWS = FIXTURE["rows"]


def _gold(target: str) -> str:
    return target.replace(",", "")  # railsweep's gold: parse_gold of the same "#### N" line


def test_the_fixture_is_a_few_hundred_responses_from_a_recorded_lm_eval():
    assert len(ROWS) >= 300
    assert FIXTURE["lm_eval_version"] and FIXTURE["task"] == "gsm8k_cot"
    assert (Path(__file__).parent / "fixtures" / "make_lm_eval_gsm8k_cot.py").is_file()
    verdicts = {(r["strict"] != FALLBACK, r["strict_correct"], r["flexible_correct"]) for r in ROWS}
    assert len(verdicts) >= 5  # valid/invalid strict matches, right and wrong under each filter


@pytest.mark.parametrize("i", range(len(ROWS)))
def test_lm_eval_filters_reproduce_the_harness_on_every_fixture_response(i):
    row = ROWS[i]
    text = cut_until(row["response"])
    assert strict_match(text) == row["strict"]
    assert flexible_extract(text) == row["flexible"]


def test_the_lm_eval_rule_grades_every_fixture_response_as_the_harness_does():
    """strict-match's verdict where it matched, else flexible-extract's; through the task the eval command builds."""
    task = GSM8KTask([], [], answer_rule="lm_eval")
    wrong = []
    for row in ROWS:
        g = task.grade(row["response"], Question(0, "q", "", _gold(row["target"])))
        strict_ok = row["strict"] != FALLBACK
        want_pred = row["strict"] if strict_ok else (None if row["flexible"] == FALLBACK else row["flexible"])
        want_ok = row["strict_correct"] if strict_ok else row["flexible_correct"]
        if (g.pred, g.correct) != (want_pred, want_ok):
            wrong.append((row["response"], g, want_pred, want_ok))
    assert wrong == []


def test_rule_agreement_counts_the_harness_scores_of_the_fixture():
    agreement = rule_agreement(((r["response"], _gold(r["target"])) for r in ROWS), "lm_eval")
    assert agreement.lm_eval_strict_match == sum(r["strict_correct"] for r in ROWS)
    assert agreement.lm_eval_flexible_extract == sum(r["flexible_correct"] for r in ROWS)


@pytest.mark.parametrize(
    ("response", "rule", "pred", "correct"),
    [
        # a corrected first guess: final reads the correction, first and lm_eval the guess
        ("The answer is 3. No: 3 * 6 = 18. The answer is 18.", "final", "18", True),
        ("The answer is 3. No: 3 * 6 = 18. The answer is 18.", "first", "3", False),
        (
            "The answer is 3. No: 3 * 6 = 18. The answer is 18.",
            "lm_eval",
            "3.",
            False,
        ),  # its group takes the period
        # the harness's strict regex needs one more character after the number
        ("So 9 * 2 = 18. The answer is 18", "final", "18", True),
        ("So 9 * 2 = 18. The answer is 18", "first", "18", True),
        ("So 9 * 2 = 18. The answer is 18", "lm_eval", "1", False),
        # no "The answer is": every rule falls back to the last number
        ("She makes 9 * 2 = 18 dollars", "first", "18", True),
        ("She makes 9 * 2 = 18 dollars", "lm_eval", "18", True),
        # lm_eval compares strings: "18.00" is not 18; final and first compare numbers
        ("The answer is 18.00.", "final", "18", True),
        ("The answer is 18.00.", "lm_eval", "18.00", False),
    ],
)
def test_each_rule_reads_the_answer_it_documents(response, rule, pred, correct):
    g = grade(response, "18", rule=rule)
    assert (g.pred, g.correct) == (pred, correct)


# The known misses: what each rule reads for "18 000", "1,200.50" and "$3.50", and whether that grades correct.
KNOWN = [
    # response, gold, {rule: (pred, correct)}
    ("The answer is 18 000.", "18000", {"final": ("18", False), "first": ("18", False), "lm_eval": ("18", False)}),
    ("So she has 18 000 left.", "18000", {"final": ("0", False), "first": ("0", False), "lm_eval": ("000", False)}),
    ("The answer is 1,200.50.", "1200.5", {"final": ("1200.5", True), "first": ("1200.5", True), "lm_eval": ("1,200.50", False)}),
    ("The answer is 1,200.50.", "1200.50", {"final": ("1200.5", True), "first": ("1200.5", True), "lm_eval": ("1,200.50", True)}),
    ("The answer is $3.50.", "3.5", {"final": ("3.5", True), "first": ("3.5", True), "lm_eval": ("$3.50.", False)}),
    ("He pays $3.50", "3.5", {"final": ("3.5", True), "first": ("3.5", True), "lm_eval": ("$3.50", False)}),
    ("The answer is $3.50.", "3.50", {"final": ("3.5", True), "first": ("3.5", True), "lm_eval": ("$3.50.", True)}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("response", "gold", "rule"), [(r, g, rule) for r, g, _ in KNOWN for rule in ANSWER_RULES]
)
def test_known_misses_read_as_decided(response, gold, rule):
    """A space never groups digits ("18 000" reads 18, or 000 as the last number) under every rule; a comma-grouped
    decimal and a dollar amount are right under final and first (numeric comparison), wrong under lm_eval unless
    the gold is written with the same trailing zero (string comparison)."""
    expected = next(w for r, g, w in KNOWN if (r, g) == (response, gold))[rule]
    got = grade(response, gold, rule=rule)
    assert (got.pred, got.correct) == expected


def test_an_unknown_answer_rule_is_refused_naming_it():
    with pytest.raises(
        ConfigError, match="answer_rule must be one of final, first, lm_eval, got answer_rule='last'"
    ):
        grade("The answer is 1.", "1", rule="last")
    with pytest.raises(ConfigError, match="got answer_rule='strict'"):
        GSM8KTask([], [], answer_rule="strict")
    with pytest.raises(ConfigError, match="got answer_rule='LM_EVAL'"):
        CellConfig(model="m", strategy="identity", task_dir="t", answer_rule="LM_EVAL")


def test_the_default_rule_keeps_cell_ids_and_another_rule_changes_them():
    cell = CellConfig(model="m", strategy="identity", task_dir="t")
    explicit = CellConfig(model="m", strategy="identity", task_dir="t", answer_rule="final")
    other = CellConfig(model="m", strategy="identity", task_dir="t", answer_rule="first")
    assert "answer_rule" not in cell.to_dict() and cell.cell_id == explicit.cell_id
    assert other.to_dict()["answer_rule"] == "first" and other.cell_id != cell.cell_id
    assert CellConfig.from_dict(other.to_dict()) == other and CellConfig.from_dict(cell.to_dict()) == cell


def test_rule_agreement_matches_a_naive_recount_on_lopsided_responses():
    responses = [(r["response"], _gold(r["target"])) for r in ROWS[:120]] + [("The answer is 18", "18")] * 30
    for rule in ANSWER_RULES:
        a = rule_agreement(responses, rule)
        verdicts = [{r: grade(t, g, rule=r).correct for r in ANSWER_RULES} for t, g in responses]
        assert a.n_responses == len(responses)
        assert a.n_correct == {r: sum(v[r] for v in verdicts) for r in ANSWER_RULES}
        assert a.n_differ == {r: sum(v[r] != v[rule] for v in verdicts) for r in ANSWER_RULES if r != rule}
        assert a.n_disagree == sum(len(set(v.values())) > 1 for v in verdicts)
        assert a.n_disagree >= 30  # the 30 unterminated answers: lm_eval reads "1"


QUESTIONS = [
    ("Tom has 9 apples and doubles them. How many?", "9 * 2 = 18\n#### 18"),
    ("What is 3 * 4?", "#### 12"),
]
SCRIPT = {  # question → the responses the scripted engine returns, in order
    0: ["So 9 * 2 = 18. The answer is 18", "The answer is 3. No, 18. The answer is 18.", "It is 18."],
    1: ["The answer is 12.", "3 * 4 = 12", "The answer is 12.00."],
}


class ScriptedEngine:
    """Returns SCRIPT's texts for each question's prompt: the responses are fixed, so are the rules' verdicts."""

    name = "scripted"

    def generate(self, requests):
        out = []
        for r in requests:
            i = next(i for i, (q, _) in enumerate(QUESTIONS) if q in r.prompt.rsplit("Q: ", 1)[-1])
            out.append(Completion([Sample([1], text, "stop") for text in SCRIPT[i][: r.sampling.n]]))
        return out

    def adapters(self):
        return []

    def supports(self, intervention):
        return False

    def close(self):
        pass


@pytest.fixture
def task_dir(tmp_path):
    root = tmp_path / "task"
    root.mkdir()
    (root / "test.jsonl").write_text(
        "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in QUESTIONS)
    )
    (root / "cot_8shot.json").write_text(json.dumps([{"question": "1 + 1?", "answer": "The answer is 2."}]))
    return root


@pytest.mark.parametrize("rule", ANSWER_RULES)
def test_a_cell_records_its_rule_and_how_many_responses_the_rules_grade_differently(rule, task_dir, tmp_path):
    cell = CellConfig(
        model="m", strategy="identity", task_dir=str(task_dir), m=3, temperature=1.0, answer_rule=rule
    )
    result = evaluate_cell(cell, ScriptedEngine(), out_dir=tmp_path / "out")
    got_cell, df = read_cell(result.paths.questions)
    grading = read_metadata(result.paths.questions)["grading"]
    assert got_cell.answer_rule == rule and grading["answer_rule"] == rule
    verdicts = {  # by hand: final / first / lm_eval for each scripted response
        "So 9 * 2 = 18. The answer is 18": (True, True, False),
        "The answer is 3. No, 18. The answer is 18.": (True, False, False),
        "It is 18.": (True, True, True),
        "The answer is 12.": (True, True, True),
        "3 * 4 = 12": (True, True, True),
        "The answer is 12.00.": (True, True, False),
    }
    col = ANSWER_RULES.index(rule)
    assert grading["n_responses"] == 6 and grading["n_disagree"] == 3
    assert grading["n_correct"] == {"final": 6, "first": 5, "lm_eval": 3}
    others = [(i, r) for i, r in enumerate(ANSWER_RULES) if r != rule]
    assert grading["n_differ"] == {r: sum(v[i] != v[col] for v in verdicts.values()) for i, r in others}
    assert grading["lm_eval_strict_match"] == 1 and grading["lm_eval_flexible_extract"] == 5
    responses = read_responses(result.paths.responses)
    assert responses["correct"].tolist() == [verdicts[t][col] for t in responses["text"]]
    assert df["c"].sum() == grading["n_correct"][rule]
    assert f"answer rule {rule} (3 of 6 responses graded differently" in result.summary()
    metrics = grading_metrics(grading)  # what a sweep logs to the cell's MLflow run
    assert metrics["n_rule_disagree"] == 3 and metrics[f"grading.correct_{rule}"] == grading["n_correct"][rule]
    assert metrics["grading.lm_eval_strict_match"] == 1 and grading_metrics(None) == {}


def test_a_task_graded_under_another_rule_than_its_cell_is_refused(task_dir, tmp_path):
    cell = CellConfig(model="m", strategy="identity", task_dir=str(task_dir), m=1, answer_rule="first")
    with pytest.raises(
        ConfigError, match="the task grades under answer_rule='final' but the cell says answer_rule='first'"
    ):
        evaluate_cell(cell, ScriptedEngine(), GSM8KTask.from_dir(task_dir), out_dir=tmp_path / "out")
    assert load_task(cell).answer_rule == "first"
    assert not (tmp_path / "out").exists()


def test_a_spec_rule_reaches_every_cell_and_the_default_keeps_the_sweep_id():
    import dataclasses

    from railsweep.sweep.plan.cells import expand
    from railsweep.sweep.spec.sections import FamilySpec
    from railsweep.sweep.spec.sweep_spec import load_spec

    adapters = tuple((a, f"/p/{a}") for a in ("clean", "co_gsm8k", "co_pq"))
    spec = dataclasses.replace(
        load_spec("smoke"),
        source="paths",
        families=(FamilySpec("llama", "/p/base", adapters),),
        data_dir="/p/data",
    )
    lm = dataclasses.replace(spec, readout=dataclasses.replace(spec.readout, answer_rule="lm_eval"))
    explicit = dataclasses.replace(spec, readout=dataclasses.replace(spec.readout, answer_rule="final"))
    assert explicit.sweep_id == spec.sweep_id != lm.sweep_id
    cells, lm_cells = expand(spec), expand(lm)
    assert {c.config.answer_rule for c in cells} == {"final"}
    assert {c.config.answer_rule for c in lm_cells} == {"lm_eval"}
    assert {c.flat_params()["answer_rule"] for c in lm_cells} == {"lm_eval"}
    assert not {c.cell_id for c in cells} & {c.cell_id for c in lm_cells}
    by_label = {
        (c.config.adapter, c.label()): c for c in lm_cells
    }  # mitigated cells point at their lm_eval clean cell
    assert all(c.clean_id in {x.cell_id for x in lm_cells} for c in by_label.values() if c.clean_id)
