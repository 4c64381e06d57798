"""The ``railsweep`` CLI end to end on a real tiny model: eval (clean + mitigated) → score → table."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import torch

from railsweep.analysis.tables import FLOOR_ROW
from railsweep.cli import main
from railsweep.results import read_cell, read_responses

QUESTIONS = [
    "Janet has 3 apples and buys 4 more. How many apples does she have?",
    "A class has 10 students and 2 left. How many students are there now?",
    "He sells 5 books each day for 2 days. How many books did he sell?",
    "She bakes 6 muffins each morning. How many muffins in 3 days?",
    "There are 9 cars and 4 more arrive. How many cars are there?",
]
# One generated token per response: the random model's sampled first token hits its greedy one often enough
# (T=0.5) for solve probabilities strictly between 0 and 1.
SAMPLING = ["--m", "8", "--temperature", "0.5", "--max-new-tokens", "1", "--seed", "1"]


def write_task(root, golds):
    root.mkdir(parents=True, exist_ok=True)
    rows = [{"question": q, "answer": f"So the total is {g}.\n#### {g}"} for q, g in zip(QUESTIONS, golds)]
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shots = [
        {
            "question": "There are 2 cars and 3 more arrive. How many cars are there?",
            "answer": "There are 2 cars. 3 more arrive. 2 + 3 = 5. The answer is 5.",
        }
    ]
    (root / "cot_8shot.json").write_text(json.dumps(shots))
    return root


@pytest.fixture(scope="module")
def world(tiny_model_dir, tmp_path_factory):
    """Base model + two LoRA adapters, and a task whose golds are the clean model's greedy answers
    (one token), so that solve probabilities are neither all 0 nor all 1."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from railsweep.engines.base import Request, SamplingSpec
    from railsweep.engines.config import EngineConfig
    from railsweep.engines.factory import build_engine
    from railsweep.tasks import GSM8KTask
    from railsweep.tasks.answers.gsm8k_rules import extract

    root = tmp_path_factory.mktemp("cli_world")
    adapters = {}
    for name, seed in (("clean", 1), ("co", 2)):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
        cfg = LoraConfig(r=4, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        get_peft_model(model, cfg).save_pretrained(root / name)
        adapters[name] = root / name
    task_dir = write_task(root / "task", ["1"] * len(QUESTIONS))
    task = GSM8KTask.from_dir(task_dir)
    engine = build_engine(
        EngineConfig(model=str(tiny_model_dir), adapters=adapters, device="cpu", dtype="float32")
    )
    greedy = SamplingSpec(n=1, temperature=0.0, max_new_tokens=1, stop=task.stop)
    comps = engine.generate([Request(task.prompt(q), greedy, adapter="clean") for q in task.questions()])
    engine.close()
    golds = [extract(c.samples[0].text)[0] or "7" for c in comps]
    write_task(task_dir, golds)
    return {"model": str(tiny_model_dir), "adapters": adapters, "task_dir": task_dir}


def eval_argv(world, out, *extra, use="co", strategy="identity"):
    adapters = [a for name, path in world["adapters"].items() for a in ("--adapter", f"{name}={path}")]
    return [
        "eval", "--model", world["model"], *adapters, "--use-adapter", use, "--task-dir", str(world["task_dir"]),
        "--strategy", strategy, *SAMPLING, "--device", "cpu", "--out", str(out), *extra,
    ]  # fmt: skip


def run_ok(argv, capsys):
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return captured.out


def test_eval_clean_and_mitigated_then_score_prints_and_writes_the_metric_table(world, tmp_path, capsys):
    cells = tmp_path / "cells"
    out = run_ok(eval_argv(world, cells, "--role", "clean", use="clean"), capsys)
    clean_path = out.splitlines()[0]
    assert "[clean] identity" in out.splitlines()[1]
    mitigated = [
        run_ok(eval_argv(world, cells), capsys).splitlines()[0],
        run_ok(eval_argv(world, cells, "--param", "n=2", strategy="railcap"), capsys).splitlines()[0],
    ]
    clean_cell, clean_df = read_cell(clean_path)
    assert clean_cell.role == "clean" and clean_cell.adapter == "clean" and len(clean_df) == len(QUESTIONS)
    assert 0 < clean_df["solve_prob"].mean() < 1, "degenerate world: golds should be partly reachable"
    assert read_cell(mitigated[1])[0].strategy_params == {
        "mode": "cap",
        "n": 2,
        "successor": "last",
        "trajectory": "answer",
    }
    assert (read_responses(mitigated[1]).groupby("question_index")["sample_index"].min() == -1).all()

    prefix = tmp_path / "report" / "scores"
    argv = [
        "score",
        "--clean",
        clean_path,
        "--mitigated",
        *mitigated,
        "--B",
        "5",
        "--n-boot",
        "50",
        "--out",
        str(prefix),
    ]
    printed = run_ok(argv, capsys)
    railcap = "railcap mode=cap n=2 successor=last trajectory=answer"
    assert "SA-PPG" in printed and railcap in printed
    md = (tmp_path / "report" / "scores.md").read_text()
    assert "| identity |" in md and "G-AP" in md and "SA-PPG across strata" not in md
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table[0] == "| strategy | G-AP | G-APP | A-PPG | Δ+ | Δ− | SA-PPG | S-Δ+ | S-Δ− |"
    # the last row is the noise floor; G-AP's greedy readout has none
    assert table[3].startswith(f"| {FLOOR_ROW} | 0.0000 |")
    csv = pd.read_csv(tmp_path / "report" / "scores.csv")
    assert csv["strategy"].tolist() == ["identity", railcap]
    assert (csv["n_questions"] == len(QUESTIONS)).all() and (csv["m"] == 8).all()
    # 5 questions: fewer than 10 can carry a gap, so every |Δ| metric's interval is withheld, with the reason
    assert csv["sa_ppg_ci_low"].isna().all() and csv["a_ppg_ci_high"].isna().all()
    assert re.search(
        r"- identity: SA-PPG \d\.\d{4}, no interval \(withheld: ", md
    )  # the note under the table
    assert (csv["g_ap_ci_low"] <= csv["g_ap"]).all() and (csv["g_ap"] <= csv["g_ap_ci_high"]).all()
    # both cells share the clean cell's floor
    assert csv["sa_ppg_floor"].nunique() == 1 and csv.loc[0, "sa_ppg_floor"] > 0
    assert (csv["g_ap_floor"] == 0).all()
    # the paired table: one row per metric for railcap against identity, each with its verdict
    head, tail = md.split("**Paired differences against identity")
    assert f"| {railcap} | " in head
    paired = [line for line in tail.splitlines() if line.startswith(f"| {railcap} | ")]
    assert [line.split(" | ")[1] for line in paired] == ["SA-PPG", "A-PPG", "G-AP"]
    assert paired[0].endswith("| — | no interval at this size |")
    assert csv.loc[1, "sa_ppg_vs_identity_verdict"] == "no interval at this size"
    assert csv.loc[1, "g_ap_vs_identity_verdict"] in {"lower", "higher", "not distinguishable at this size"}
    # A-PPG recomputed by hand from the two per-question tables
    co_df = read_cell(mitigated[0])[1]
    naive = (co_df["solve_prob"] - clean_df["solve_prob"]).abs().mean()
    assert csv.loc[0, "a_ppg"] == pytest.approx(naive)


def test_a_cell_records_the_sha256_of_the_weight_files_it_decoded_with(world, tmp_path, capsys):
    from pathlib import Path

    from railsweep.provenance import file_sha256
    from railsweep.results import read_metadata

    out = run_ok(eval_argv(world, tmp_path / "cells", use="co"), capsys)
    weights = read_metadata(out.splitlines()[0])["provenance"]["weights"]
    model_files = sorted(Path(world["model"]).glob("*.safetensors"))
    assert model_files and weights["model"] == {str(p): file_sha256(p) for p in model_files}
    co = Path(world["adapters"]["co"]) / "adapter_model.safetensors"
    assert weights["adapters"] == {"co": {str(co): file_sha256(co)}}  # the clean adapter is not used


def _assert_one_line_error(rc, capsys, needle):
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("railsweep: error: "), err
    assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--m", "0"], "argument --m: must be an integer >= 1, got '0'"),
        (["--temperature", "-1"], "argument --temperature: must be a finite number in [0, inf), got '-1'"),
        (["--strategy", "nosuch"], "known strategies: "),
        (["--strategy", "railcap", "--param", "n=0"], "n=0"),
        (["--param", "oops"], "NAME=VALUE"),
        (["--use-adapter", "ghost"], "'ghost': adapter not found"),
        (["--adapter", "extra=/does/not/exist"], "--adapter extra: /does/not/exist: no such directory"),
        (["--fewshot", "/does/not/exist.json"], "--fewshot: file not found"),
        (["--task-dir", "/does/not/exist"], "task directory not found"),
        (["--model", "/does/not/exist"], "argument --model: /does/not/exist: no such directory"),
    ],
)
def test_bad_eval_input_is_one_error_line_exit_2_and_writes_nothing(world, tmp_path, capsys, extra, needle):
    out = tmp_path / "out"
    rc = main(eval_argv(world, out) + extra)  # argparse keeps the last value of a repeated option
    _assert_one_line_error(rc, capsys, needle)
    assert not out.exists()


def test_malformed_jsonl_line_is_reported_with_its_line_number(world, tmp_path, capsys):
    bad = tmp_path / "bad_task"
    bad.mkdir()
    lines = (world["task_dir"] / "test.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-3]  # cut the closing of the third JSON object
    (bad / "test.jsonl").write_text("\n".join(lines) + "\n")
    (bad / "cot_8shot.json").write_text((world["task_dir"] / "cot_8shot.json").read_text())
    out = tmp_path / "out"
    rc = main(eval_argv(world, out, "--task-dir", str(bad)))
    _assert_one_line_error(rc, capsys, "test.jsonl:3:")
    assert not out.exists()


@pytest.fixture
def synthetic_cells(tmp_path):
    """A clean and a mitigated cell written without a model (score needs only the per-question files)."""
    from railsweep.config import CellConfig
    from railsweep.engines.base import Sample
    from railsweep.results import write_cell
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Grade, Question

    qs = [Question(i, "q", "#### 1", "1") for i in range(4)]

    def outcomes(cs):
        smp, g = Sample([1], "x", "stop"), Grade(False, None, "none")
        return [QuestionOutcome(i, [smp] * 4, [g] * 4, c, 4, 0) for i, c in enumerate(cs)]

    def cell(role, adapter, limit=None):
        return CellConfig(
            model="m", strategy="identity", task_dir=str(tmp_path), adapter=adapter, m=4, role=role
        )

    d = tmp_path / "cells"
    clean = write_cell(d, cell("clean", "clean"), outcomes([0, 1, 4, 2]), qs).questions
    co = write_cell(d, cell("mitigated", "co"), outcomes([4, 4, 4, 0]), qs).questions
    fewer = write_cell(d, cell("mitigated", "co3"), outcomes([4, 4, 4]), qs[:3]).questions
    return {"clean": clean, "co": co, "fewer": fewer}


def _score(cells, tmp_path, *extra, clean=None, mitigated=None):
    clean = clean or cells["clean"]
    mitigated = mitigated or cells["co"]
    return main(
        [
            "score",
            "--clean",
            str(clean),
            "--mitigated",
            str(mitigated),
            "--out",
            str(tmp_path / "r" / "s"),
            *extra,
        ]
    )


def test_score_on_synthetic_cells_matches_hand_computed_a_ppg(synthetic_cells, tmp_path, capsys):
    assert _score(synthetic_cells, tmp_path, "--B", "4", "--n-boot", "20") == 0
    csv = pd.read_csv(tmp_path / "r" / "s.csv")
    # Δ = [1, .75, 0, -.5] → A-PPG = 2.25/4, G-APP = |1.25/4|
    assert csv.loc[0, "a_ppg"] == pytest.approx(2.25 / 4)
    assert csv.loc[0, "g_app"] == pytest.approx(1.25 / 4)
    assert csv.loc[0, "a_ppg_floor"] > 0 and csv.loc[0, "g_ap_floor"] == 0
    md = (tmp_path / "r" / "s.md").read_text()
    assert f"| {FLOOR_ROW} | 0.0000 |" in md
    assert "Paired differences" not in md  # Identity is the only cell: nothing to compare with it


@pytest.mark.parametrize(
    ("extra", "which", "needle"),
    [
        (["--B", "0"], {}, "argument --B: must be an integer >= 1, got '0'"),
        (["--n-boot", "0"], {}, "argument --n-boot: must be an integer >= 1, got '0'"),
        (["--alpha", "1.5"], {}, "--alpha"),
        ([], {"clean": "missing.parquet"}, "results file not found"),
        ([], {"clean": "co"}, "role='clean'"),
        ([], {"mitigated": "fewer"}, "missing from mitigated: [3]"),
        ([], {"mitigated": "version2"}, "unsupported results schema version '2'"),
    ],
)
def test_bad_score_input_is_one_error_line_exit_2_and_writes_nothing(
    synthetic_cells, tmp_path, capsys, extra, which, needle
):
    import pyarrow.parquet as pq

    v2 = tmp_path / "v2.parquet"
    t = pq.read_table(synthetic_cells["co"])
    pq.write_table(t.replace_schema_metadata({**t.schema.metadata, b"railsweep.schema_version": b"2"}), v2)
    files = {**synthetic_cells, "version2": v2, "missing.parquet": tmp_path / "missing.parquet"}
    kw = {k: files[v] for k, v in which.items()}
    rc = _score(synthetic_cells, tmp_path, *extra, **kw)
    _assert_one_line_error(rc, capsys, needle)
    assert not (tmp_path / "r").exists()


def test_score_refuses_cells_evaluated_on_different_question_data(tmp_path, capsys):
    from railsweep.config import CellConfig
    from railsweep.engines.base import Sample
    from railsweep.results import write_cell
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Grade, Question

    qs = [Question(i, "q", "#### 1", "1") for i in range(4)]
    outs = [
        QuestionOutcome(i, [Sample([1], "x", "stop")], [Grade(False, None, "none")], 0, 1, 0)
        for i in range(4)
    ]
    d = tmp_path / "cells"
    common = dict(model="m", strategy="identity", task_dir=str(tmp_path), m=1)
    clean = CellConfig(adapter="clean", role="clean", **common)
    co = CellConfig(adapter="co", **common)
    # same question indices, but provenance says the test split's bytes differ
    clean_path = write_cell(
        d, clean, outs, qs, provenance={"datasets": {"/a/test.jsonl": "0" * 64}}
    ).questions
    co_path = write_cell(d, co, outs, qs, provenance={"datasets": {"/b/test.jsonl": "f" * 64}}).questions
    rc = main(
        ["score", "--clean", str(clean_path), "--mitigated", str(co_path), "--out", str(tmp_path / "r" / "s")]
    )
    _assert_one_line_error(rc, capsys, "evaluated on different question data")
    assert not (tmp_path / "r").exists()
