"""Bad answer rules and types: ``railsweep eval --answer-rule/--answer-type``, the spec's ``readout.answer_rule``,
and ``score`` given cells graded under different rules or answer types.

Same contract as ``tests/test_bad_inputs.py``: exit code 2, exactly one stderr line ``railsweep: error: ...``
naming the value, nothing written, and no model loaded or service started (tripwires on the engine factory and
the local Ray/MLflow services). The model folder holds only its config file.
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from railsweep.cli import main
from railsweep.sweep.spec.sweep_spec import PRESET_DIR

SERVICES = (
    "railsweep.services.ray_head.ensure_ray_head",
    "railsweep.services.mlflow_server.ensure_mlflow_server",
    "railsweep.services.jobs.submit_job",
)

SMOKE = yaml.safe_load((PRESET_DIR / "smoke.yaml").read_text())


class Tripwire(Exception):
    """Raised where the expensive part starts: a bad input got that far."""


def _spec(readout: dict | None = None, **top) -> dict:
    spec = copy.deepcopy(SMOKE)
    if readout is not None:
        spec["readout"] = {**(spec.get("readout") or {}), **readout}
    spec.update(top)
    return spec


# name → a bad spec and the words the error line must contain
BAD_SPECS: dict[str, tuple[dict, str]] = {
    "answer_rule_unknown": (_spec({"answer_rule": "last"}), "readout: answer_rule must be one of final, first, lm_eval, got answer_rule='last'"),
    "answer_rule_upper_case": (_spec({"answer_rule": "LM_EVAL"}), "readout: answer_rule must be one of final, first, lm_eval, got answer_rule='LM_EVAL'"),
    "answer_rule_empty": (_spec({"answer_rule": ""}), "readout.answer_rule: string should have at least 1 character, got ''"),
    "answer_rule_null": (_spec({"answer_rule": None}), "readout.answer_rule: input should be a valid string, got None"),
    "answer_rule_number": (_spec({"answer_rule": 1}), "readout.answer_rule: input should be a valid string, got 1"),
    "answer_rule_list": (_spec({"answer_rule": ["final", "lm_eval"]}), "readout.answer_rule: input should be a valid string, got ['final', 'lm_eval']"),
    "answer_rule_at_top_level": (_spec(answer_rule="first"), "unknown key 'answer_rule' in the sweep spec"),
}  # fmt: skip


def _write_task(root: Path) -> Path:
    root.mkdir(parents=True)
    rows = [{"question": "What is 4 + 4?", "answer": "4 + 4 = 8\n#### 8"}] * 2
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "cot_8shot.json").write_text(json.dumps([{"question": "1 + 1?", "answer": "The answer is 2."}]))
    return root


def _write_math_task(root: Path) -> Path:
    root.mkdir(parents=True)
    rows = [{"problem": "What is $1/2 + 1/4$?", "solution": "We get $\\boxed{\\frac{3}{4}}$."}] * 2
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _write_cells(root: Path) -> dict[str, Path]:
    """A clean cell graded under final and mitigated cells graded under final and lm_eval, without a model."""
    from railsweep.config import CellConfig
    from railsweep.engines.base import Sample
    from railsweep.results import write_cell
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Grade, Question

    qs = [Question(i, "q", "#### 1", "1") for i in range(4)]
    outcomes = [
        QuestionOutcome(i, [Sample([1], "x", "stop")] * 2, [Grade(False, None, "none")] * 2, 1, 2, 0)
        for i in range(4)
    ]

    def cell(role, adapter, rule, answer_type="numeric"):
        return CellConfig(
            model="m",
            strategy="identity",
            task_dir=str(root),
            adapter=adapter,
            m=2,
            role=role,
            answer_rule=rule,
            answer_type=answer_type,
        )

    return {
        "clean": write_cell(root, cell("clean", "clean", "final"), outcomes, qs).questions,
        "co": write_cell(root, cell("mitigated", "co", "final"), outcomes, qs).questions,
        "co_lm_eval": write_cell(root, cell("mitigated", "co", "lm_eval"), outcomes, qs).questions,
        "co_math": write_cell(root, cell("mitigated", "co", "final", "math"), outcomes, qs).questions,
    }


@pytest.fixture(scope="module")
def inp(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inputs")
    (root / "model").mkdir()
    (root / "model" / "config.json").write_text("{}")  # a model folder passes --model's check; nothing loads it
    paths = {
        "root": root,
        "model": root / "model",
        "task": _write_task(root / "task"),
        "math_task": _write_math_task(root / "math_task"),
        **_write_cells(root / "cells"),
    }
    specs = root / "specs"
    specs.mkdir()
    for name, (data, _) in BAD_SPECS.items():
        (specs / f"{name}.yaml").write_text(yaml.safe_dump(data))
    (specs / "valid.yaml").write_text(yaml.safe_dump(_spec({"answer_rule": "lm_eval"})))
    paths["specs"] = specs
    return paths


def eval_argv(i: dict[str, Path], out: Path, *extra: str, task: str = "task") -> list[str]:
    return [
        "eval", "--model", str(i["model"]), "--task-dir", str(i[task]), "--strategy", "identity",
        "--m", "2", "--device", "cpu", "--out", str(out / "cells"), *extra,
    ]  # fmt: skip


def score_argv(i: dict[str, Path], out: Path, mitigated: str) -> list[str]:
    return ["score", "--clean", str(i["clean"]), "--mitigated", str(i[mitigated]), "--B", "2", "--n-boot", "10",
            "--out", str(out / "report" / "scores")]  # fmt: skip


def sweep_argv(i: dict[str, Path], out: Path, spec: str) -> list[str]:
    return ["sweep", "--spec", str(i["specs"] / f"{spec}.yaml"), "--run-dir", str(out / "runs")]


Case = tuple[Callable[[dict[str, Path], Path], list[str]], str | Callable[[dict[str, Path]], str]]

CATALOGUE: dict[str, Case] = {
    "eval-answer_rule_unknown": (lambda i, o: eval_argv(i, o, "--answer-rule", "last"), "answer_rule must be one of final, first, lm_eval, got answer_rule='last'"),
    "eval-answer_rule_upper_case": (lambda i, o: eval_argv(i, o, "--answer-rule", "LM_EVAL"), "answer_rule must be one of final, first, lm_eval, got answer_rule='LM_EVAL'"),
    "eval-answer_rule_empty": (lambda i, o: eval_argv(i, o, "--answer-rule", ""), "argument --answer-rule: must be a non-empty name without control characters, got ''"),
    "eval-answer_rule_missing_value": (lambda i, o: eval_argv(i, o, "--answer-rule"), "argument --answer-rule: expected one argument"),
    "eval-answer_type_unknown": (lambda i, o: eval_argv(i, o, "--answer-type", "latex"), "argument --answer-type: invalid choice: 'latex'"),
    "eval-answer_type_math_with_lm_eval_rule": (
        lambda i, o: eval_argv(i, o, "--answer-type", "math", "--answer-rule", "lm_eval", task="math_task"),
        "answer_rule='lm_eval' does not apply to answer_type='math'; its rules are final, first",
    ),
    "eval-answer_type_math_on_gsm8k_rows": (
        lambda i, o: eval_argv(i, o, "--answer-type", "math"),
        "test.jsonl:1: expected an object with string 'problem' and 'solution'",
    ),
    "eval-answer_type_numeric_on_math_rows": (
        lambda i, o: eval_argv(i, o, task="math_task"),
        "test.jsonl:1: expected an object with string 'question' and 'answer'",
    ),
    "score-mitigated_graded_under_another_answer_type": (
        lambda i, o: score_argv(i, o, "co_math"),
        lambda i: f"{i['co_math']} was graded under answer_type 'math' but the clean cell {i['clean']} under 'numeric'",
    ),
    "score-mitigated_graded_under_another_rule": (
        lambda i, o: score_argv(i, o, "co_lm_eval"),
        lambda i: f"{i['co_lm_eval']} was graded under answer_rule 'lm_eval' but the clean cell {i['clean']} under 'final'",
    ),
    **{
        f"sweep-spec_{name}": ((lambda n: lambda i, o: sweep_argv(i, o, n))(name), needle)
        for name, (_, needle) in BAD_SPECS.items()
    },
}  # fmt: skip


@pytest.fixture
def tripwires(monkeypatch):
    def trip(*a, **kw):
        raise Tripwire("a bad input reached the expensive part")

    targets = ("railsweep.engines.factory.build_engine", *SERVICES)
    for target in targets:  # imported before the first patch (see test_bad_inputs.tripwires)
        importlib.import_module(target.rsplit(".", 1)[0])
    for target in targets:
        monkeypatch.setattr(target, trip)


def _files(*roots: Path) -> dict[str, bytes | None]:
    return {str(p): (p.read_bytes() if p.is_file() else None) for r in roots for p in sorted(r.rglob("*"))}


@pytest.mark.parametrize("case", list(CATALOGUE))
def test_a_bad_answer_rule_is_one_error_line_exit_2_and_writes_nothing(
    case, inp, tmp_path, monkeypatch, capsys, tripwires
):
    argv_of, needle = CATALOGUE[case]
    needle = needle(inp) if callable(needle) else needle
    monkeypatch.chdir(tmp_path)
    before = _files(inp["root"], tmp_path)
    rc = main(argv_of(inp, tmp_path / "out"))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2, captured.err
    assert len(lines) == 1 and lines[0].startswith("railsweep: error: "), captured.err
    assert needle in lines[0], lines[0]
    assert _files(inp["root"], tmp_path) == before


def test_every_answer_rule_passes_the_checks(inp, tmp_path, monkeypatch, capsys, tripwires):
    """The same command lines with a good rule get past every check: eval and sweep reach the tripwire, score of
    cells graded under the same rule runs to the end."""
    monkeypatch.chdir(tmp_path)
    for rule in ("final", "first", "lm_eval"):
        with pytest.raises(Tripwire):
            main(eval_argv(inp, tmp_path, "--answer-rule", rule))
    for rule in ("final", "first"):
        with pytest.raises(Tripwire):
            main(eval_argv(inp, tmp_path, "--answer-type", "math", "--answer-rule", rule, task="math_task"))
    with pytest.raises(Tripwire):
        main(sweep_argv(inp, tmp_path, "valid"))
    assert main(score_argv(inp, tmp_path, "co")) == 0, capsys.readouterr().err
    assert "answer rule final" in (tmp_path / "report" / "scores.md").read_text()
