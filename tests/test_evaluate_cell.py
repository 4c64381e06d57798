"""evaluate_cell on a real tiny model: one row per question, counts that match the raw responses."""

from __future__ import annotations

import json

import pytest

from railsweep.config import CellConfig
from railsweep.engines.config import EngineConfig
from railsweep.engines.factory import build_engine
from railsweep.errors import ConfigError
from railsweep.evaluate import evaluate_cell, load_task
from railsweep.results import read_cell, read_responses
from railsweep.tasks.base import Grade

QUESTIONS = [
    ("Janet has 3 apples and buys 4 more. How many apples does she have?", "3 + 4 = 7\n#### 7"),
    ("A class has 10 students and 2 left. How many students are there now?", "10 - 2 = 8\n#### 8"),
    ("He sells 5 books each day for 2 days. How many books did he sell?", "5 * 2 = 10\n#### 10"),
]


def write_task_dir(root, rows=QUESTIONS):
    root.mkdir(parents=True, exist_ok=True)
    (root / "test.jsonl").write_text(
        "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in rows)
    )
    shots = [
        {
            "question": "There are 2 cars and 3 more arrive. How many cars are there?",
            "answer": "There are 2 cars. 3 more arrive. 2 + 3 = 5. The answer is 5.",
        }
    ]
    (root / "cot_8shot.json").write_text(json.dumps(shots))
    (root / "leak.json").write_text(json.dumps({"leaked": [0, 2], "unleaked": [1]}))
    return root


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    eng = build_engine(EngineConfig(model=str(tiny_model_dir), device="cpu", dtype="float32"))
    yield eng
    eng.close()


def _cell(task_dir, **kw):
    base = dict(
        model="tiny",
        strategy="identity",
        task_dir=str(task_dir),
        leak_split=str(task_dir / "leak.json"),
        m=4,
        temperature=1.0,
        max_new_tokens=12,
        seed=0,
    )
    base.update(kw)
    return CellConfig(**base)


class ParityGraded:
    """The real GSM8K task, graded by response-length parity so that c takes mixed values on a random model."""

    def __init__(self, task):
        self.inner, self.name, self.stop = task, task.name, task.stop

    def questions(self):
        return self.inner.questions()

    def prompt(self, q):
        return self.inner.prompt(q)

    def grade(self, response, q):
        g = self.inner.grade(response, q)
        return Grade(correct=len(response) % 2 == 0, pred=g.pred, rule=g.rule)


def test_identity_cell_counts_match_its_graded_responses(tmp_path, engine):
    task_dir = write_task_dir(tmp_path / "task")
    cell = _cell(task_dir)
    result = evaluate_cell(cell, engine, ParityGraded(load_task(cell)), out_dir=tmp_path / "out")
    got_cell, df = read_cell(result.paths.questions)
    assert got_cell == cell and result.n_questions == 3 and result.n_samples == 12
    assert df["question_index"].tolist() == [0, 1, 2]
    assert df["leaked"].tolist() == [True, False, True]
    assert (df["m"] == 4).all()
    r = read_responses(result.paths.responses)
    assert len(r) == 12
    assert r.groupby("question_index")["correct"].sum().tolist() == df["c"].tolist()
    assert 0 < r["correct"].sum() < 12  # mixed grades, so the comparison above means something
    assert df["solve_prob"].tolist() == (df["c"] / 4).tolist()
    first = r[r["sample_index"] == 0].set_index("question_index")["correct"].astype(int)
    assert first.tolist() == df["r01"].tolist()
    assert (df["n_strict"] + df["n_flexible"] + df["n_none"] == 4).all()
    assert cell.cell_id in result.summary()
    assert set(json.loads(json.dumps(result.cell.to_dict()))) >= {"model", "strategy", "m"}


def test_same_cell_twice_writes_identical_results(tmp_path, engine):
    task_dir = write_task_dir(tmp_path / "task")
    cell = _cell(task_dir, limit=2)
    a = evaluate_cell(cell, engine, out_dir=tmp_path / "a")
    b = evaluate_cell(cell, engine, out_dir=tmp_path / "b")
    assert read_cell(a.paths.questions)[1].equals(read_cell(b.paths.questions)[1])
    assert (
        read_responses(a.paths.responses)["text"].tolist()
        == read_responses(b.paths.responses)["text"].tolist()
    )
    assert len(read_cell(a.paths.questions)[1]) == 2


def test_railcap_cell_stores_greedy_trajectory_and_extras(tmp_path, engine):
    task_dir = write_task_dir(tmp_path / "task")
    cell = _cell(task_dir, strategy="railcap", strategy_params={"n": 1})
    result = evaluate_cell(cell, engine, load_task(cell), out_dir=tmp_path / "out")
    _, df = read_cell(result.paths.questions)
    assert any(c.startswith("x_") for c in df.columns)
    r = read_responses(result.paths.responses)
    assert (r.groupby("question_index")["sample_index"].min() == -1).all()
    assert result.n_samples == 3 + 12  # greedy + m samples per question


def test_adapter_the_engine_does_not_serve_is_refused_before_decoding(tmp_path, engine):
    task_dir = write_task_dir(tmp_path / "task")
    with pytest.raises(ConfigError, match="adapter 'co' not found"):
        evaluate_cell(_cell(task_dir, adapter="co"), engine, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
