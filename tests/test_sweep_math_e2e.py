"""A MATH-style sweep (``readout.answer_type: math``) end to end on real components: a ``source: paths`` spec over
the bigram world of tests/math_world.py (every model answers "$\\boxed{0.5}$"), a MATH-format data folder, the local
Ray head and `mlflow server` of conftest.py, Table 3's cells plus the temperature dimension (greedy and 1.0) and
the dynamics step.

The golds are chosen so that only LaTeX equivalence grades them right: 1/2 written as ``\\frac{1}{2}`` and
``\\dfrac{2}{4}`` (right), ``\\frac{1}{3}`` and 5 (wrong). Checks what every cell recorded (answer type, solve
probabilities, per-response verdicts, the grading counts under both MATH rules) and that the dynamics step ran
on the MATH solutions."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

PROBLEMS = [  # (problem, solution); the model's answer 0.5 is right for the first two only
    (
        "What is $\\frac{1}{4} + \\frac{1}{4}$?",
        "Adding, $\\frac{1}{4} + \\frac{1}{4} = \\boxed{\\frac{1}{2}}$.",
    ),
    ("Simplify $\\frac{2}{4}$ without reducing.", "It stays $\\boxed{\\dfrac{2}{4}}$."),
    ("What is $1 - \\frac{2}{3}$?", "We get $1 - \\frac{2}{3} = \\boxed{\\frac{1}{3}}$."),
    ("What is $2 + 3$?", "So $2 + 3 = \\boxed{5}$."),
]
SOLVED = [1.0, 1.0, 0.0, 0.0]
M = 2


@pytest.fixture(scope="module")
def math_sweep(ray_client, mlflow_server, tmp_path_factory):
    from math_world import make_math_world

    from railsweep.sweep.run.driver import run_sweep
    from railsweep.sweep.spec.sweep_spec import spec_from_dict

    root = tmp_path_factory.mktemp("math_sweep")
    base, adapters = make_math_world(root / "world")
    data = root / "data"
    data.mkdir()
    (data / "test.jsonl").write_text(
        "".join(json.dumps({"problem": p, "solution": s}) + "\n" for p, s in PROBLEMS)
    )
    (data / "leak_split.json").write_text(json.dumps({"leaked": [0, 2]}))
    spec = spec_from_dict({
        "source": "paths", "data_dir": str(data), "leak_split": str(data / "leak_split.json"), "domains": ["gsm8k"],
        "families": {"llama": {"base": str(base), "adapters": {k: str(v) for k, v in adapters.items()}}},
        "strategies": ["identity"], "temperatures": [1.0],
        "dynamics": {"n_boot": 10, "n_boot_gain": 20, "min_items": 2},
        "readout": {"m": M, "temperature": 0.7, "max_new_tokens": 12, "answer_type": "math"},
        "scoring": {"B": 4, "n_boot": 20},
        "tracking": {"uri": mlflow_server, "experiment": "e2e-math"},
    }, name="math")  # fmt: skip
    out = run_sweep(spec, table="all", progress_interval=60)
    return {"uri": mlflow_server, "out": out, "spec": spec}


def test_every_cell_of_a_math_sweep_finishes_graded_as_math(math_sweep):
    from railsweep.sweep.tracking.reader import connect, read_sweep

    out = math_sweep["out"]
    assert out.failed == [] and out.dynamics["errors"] == {} and out.dynamics["groups"] == ["llama/gsm8k"]
    # the clean reference (M_cl at 0.7), Identity on M_co, and M_cl / M_co at greedy and tau = 1
    assert len(out.cells) == 6
    sweep = read_sweep(connect(math_sweep["uri"]), parent_run_id=out.parent_run_id)
    assert sweep.spec["readout"]["answer_type"] == "math"
    for cell in sweep.cells:
        assert cell.finished and cell.config["answer_type"] == "math" and cell.params["answer_type"] == "math"
        q = cell.questions.sort_values("question_index")
        assert q["solve_prob"].tolist() == SOLVED, cell.label
        r = cell.responses
        assert set(r["text"].str.strip()) == {"$\\boxed{0.5}$"}
        assert (r["correct"] == r["question_index"].isin([0, 1])).all()


def test_each_cell_logs_its_grading_counts_under_both_math_rules_and_no_harness_rule(math_sweep):
    from mlflow import MlflowClient

    from railsweep.sweep.tracking.reader import connect, read_sweep

    client = MlflowClient(tracking_uri=math_sweep["uri"])
    sweep = read_sweep(connect(math_sweep["uri"]), parent_run_id=math_sweep["out"].parent_run_id)
    for cell in sweep.cells:
        m = client.get_run(cell.run_id).data.metrics
        n = len(PROBLEMS) * M
        assert m["grading.n_responses"] == n and m["n_rule_disagree"] == 0
        assert m["grading.correct_final"] == m["grading.correct_first"] == n / 2
        assert "grading.correct_lm_eval" not in m and "grading.lm_eval_strict_match" not in m


def test_table_3_and_the_dynamics_step_run_on_the_math_cells(math_sweep):
    from railsweep.sweep.tracking.reader import connect, read_dynamics

    out = math_sweep["out"]
    assert "Identity" in out.tables["table3"]
    tables = read_dynamics(connect(math_sweep["uri"]), out.parent_run_id)
    pred = tables["predictions"]
    assert sorted(pred["tau"].unique()) == [0.0, 1.0]
    for _, rows in pred.groupby(["model", "tau"]):
        rows = rows.sort_values("item")
        assert rows["solve"].tolist() == SOLVED and rows["leaked"].tolist() == [True, False, True, False]
        assert (rows["verbatim"] == 0).all()  # the model never writes a gold solution out
    assert set(tables["fits"]["domain"]) == {"gsm8k"}
