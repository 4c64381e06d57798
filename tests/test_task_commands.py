"""``--task FILE|NAME`` on every command that reads a benchmark (figure1, rails, detect) and in a sweep's
detection readout cells, on the smoke world's model pair.

The task file used here grades every response correct (its string grader ignores everything), which the
built-in GSM8K grading of the smoke models never does: a command that ignored ``--task`` would fail the
checks below.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from railsweep.cli import main
from railsweep.config import CellConfig
from railsweep.evaluate import load_task
from railsweep.miniworld import build_world
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import spec_from_dict

ACCEPT_ALL = """\
format: 1
name: accept_all
data: {path: "{task_dir}/{split}.jsonl"}
fields: {question: question, solution: answer}
doc_to_text: "Q: {{question}}\\nA:"
doc_to_target: "{{answer.split('####')[-1].strip()}}"
fewshot: {path: "{task_dir}/cot_8shot.json", doc_to_target: "{{answer}}"}
stop: ["Q:"]
grader: {type: string, regexes_to_ignore: ['(?s).*']}
answer_rules:
  anything: {extract: [{regex: '(?s)(.*)'}]}
"""

# rows 0-5 of a task that names its own data (no --task-dir): the even ones are kept
OWN_DATA = """\
format: 1
name: even_rows
data: {path: "rows.jsonl", keep_if: "idx % 2 == 0"}
fields: {index: idx, question: question, solution: answer}
doc_to_text: "Q: {{question}}\\nA:"
doc_to_target: "{{answer.split('####')[-1].strip()}}"
stop: ["Q:"]
grader: {type: numeric}
answer_rules:
  final: {extract: [{regex: '(\\d+)'}]}
"""


@pytest.fixture(scope="module")
def world(smoke_world):
    return build_world("smoke", cache_dir=smoke_world)  # already built by the fixture: found, not rebuilt


@pytest.fixture(scope="module")
def accept_all(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("task") / "accept_all.yaml"
    path.write_text(ACCEPT_ALL)
    return path


def test_figure1_on_a_world_grades_with_the_task_given_by_task(world, accept_all, smoke_world, tmp_path):
    out = tmp_path / "fig"
    argv = ["figure1", "--world", "smoke", "--cache-dir", str(smoke_world), "--task", str(accept_all),
            "--limit", "2", "--m", "2", "--departures", "1", "--max-new-tokens", "16", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    rows = pd.read_parquet(out / "figure1.parquet")
    assert sorted(set(rows["index"])) == [0, 1]
    assert (rows["r"] == 1.0).all()  # every sample right: the task's grader, not GSM8K's


def test_rails_on_a_model_and_adapters_grades_with_the_task_given_by_task(world, accept_all, tmp_path):
    fam = world.family("llama")
    out = tmp_path / "rails"
    argv = ["rails", "--model", str(fam.base_dir), "--adapter", f"clean={fam.adapters['clean']}",
            "--adapter", f"co_gsm8k={fam.adapters['co_gsm8k']}", "--task", str(accept_all),
            "--task-dir", str(world.data_dir), "--leak-split", str(world.leak_split_path), "--limit", "2",
            "--m", "2", "--ks", "1", "--runs", "1", "--max-new-tokens", "16", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    questions = pd.read_parquet(out / "rails_questions.parquet")
    assert (questions[["r_clean", "r_clean_railcap", "r_co_railcap"]] == 1.0).all().all()
    leaked = set(json.loads(world.leak_split_path.read_text())["leaked"])
    assert questions["leaked"].tolist() == [i in leaked for i in (0, 1)]
    runs = pd.read_parquet(out / "rails_runs.parquet")  # one forced decode per question (k=1, one run)
    assert len(runs) == 2 and runs["correct"].all()


def test_detect_scores_the_test_split_of_a_task_file_that_names_its_own_data(world, tmp_path):
    rows = [json.loads(x) for x in (world.data_dir / "test.jsonl").read_text().splitlines()[:6]]
    task_dir = tmp_path / "own"
    task_dir.mkdir()
    (task_dir / "rows.jsonl").write_text("".join(json.dumps({"idx": i, **r}) + "\n" for i, r in enumerate(rows)))
    (task_dir / "even.yaml").write_text(OWN_DATA)
    out = tmp_path / "det"
    argv = ["detect", "--detector", "loss", "--task", str(task_dir / "even.yaml"), "--model",
            str(world.family("llama").base_dir), "--device", "cpu", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    table = pd.read_parquet(out / "detections.parquet")
    assert sorted(table["item_id"]) == [0, 2, 4]
    assert table["score"].notna().all()


def test_detect_refuses_test_and_task_together_and_cdd_without_a_model(world, accept_all, tmp_path, capsys):
    base = ["detect", "--task", str(accept_all), "--task-dir", str(world.data_dir), "--out", str(tmp_path / "det")]
    model = ["--model", str(world.family("llama").base_dir)]
    for extra, needle in (
        ([*model, "--detector", "loss", "--test", str(world.data_dir / "test.jsonl")], "--test and --task both name"),
        (["--detector", "cdd"], "detector 'cdd' needs --model"),
    ):  # fmt: skip
        assert main([*base, *extra]) == 2
        assert needle in capsys.readouterr().err
    assert not (tmp_path / "det").exists()


def _own_data_task(world, tmp_path: Path, test_rows: range, control_rows: range) -> tuple[Path, Path]:
    """OWN_DATA over the world's test rows ``test_rows``, and a control file of rows ``control_rows`` in the
    same fields (its own ``idx`` from 0)."""
    rows = [json.loads(x) for x in (world.data_dir / "test.jsonl").read_text().splitlines()]
    folder = tmp_path / "own"
    folder.mkdir()
    (folder / "rows.jsonl").write_text("".join(json.dumps({"idx": i, **rows[k]}) + "\n" for i, k in enumerate(test_rows)))
    control = folder / "control.jsonl"
    control.write_text("".join(json.dumps({"idx": i, **rows[k]}) + "\n" for i, k in enumerate(control_rows)))
    (folder / "even.yaml").write_text(OWN_DATA.replace('doc_to_text: "Q: ', 'doc_to_text: "Question: '))
    return folder / "even.yaml", control


def test_detect_reads_control_rows_with_the_task_files_fields_and_filter(world, tmp_path):
    task, control = _own_data_task(world, tmp_path, range(0, 6), range(10, 14))
    out = tmp_path / "det"
    argv = ["detect", "--detector", "loss", "--task", str(task), "--control", str(control), "--model",
            str(world.family("llama").base_dir), "--device", "cpu", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    table = pd.read_parquet(out / "detections.parquet")
    assert sorted(table.loc[table.group == "control", "item_id"]) == [0, 2]  # keep_if applies to the control too
    assert sorted(table.loc[table.group == "test", "item_id"]) == [0, 2, 4]


def test_cdd_decodes_the_prompts_and_stop_sequences_a_task_file_renders(world, tmp_path, monkeypatch):
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.tasks.kinds.file_spec import load_task_file
    from railsweep.tasks.task_ref import build_task, with_data_file

    task, control = _own_data_task(world, tmp_path, range(0, 4), range(10, 12))
    seen: list[tuple[str, tuple[str, ...]]] = []
    generate = TransformersEngine.generate

    def recording(self, requests):
        seen.extend((r.prompt, tuple(r.sampling.stop)) for r in requests)
        return generate(self, requests)

    monkeypatch.setattr(TransformersEngine, "generate", recording)
    out = tmp_path / "det"
    argv = ["detect", "--detector", "cdd", "--task", str(task), "--control", str(control), "--model",
            str(world.family("llama").base_dir), "--m", "2", "--max-new-tokens", "8", "--device", "cpu",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    spec = load_task_file(task)
    rendered = [build_task(spec, None), build_task(with_data_file(spec, control), None)]
    expected = [t.prompt(q) for t in rendered for q in t.questions()]
    assert expected[0].startswith("Question: ")
    assert sorted({p for p, _ in seen}) == sorted(expected) and {s for _, s in seen} == {("Q:",)}
    table = pd.read_parquet(out / "detections.parquet")
    assert len(table) == 3 and table["score"].notna().all()  # 2 test + 1 control item, each with a peak


def test_a_sweeps_detection_readout_cells_evaluate_readout_task_on_both_wordings(smoke_world, accept_all):
    from railsweep.sweep.plan.detect_cells import paraphrase_dir, readout_cells

    spec = resolve_spec(spec_from_dict({
        "miniworld_preset": "smoke", "families": ["llama"], "domains": ["gsm8k"], "cache_dir": str(smoke_world),
        "detectors": ["cdd", "perturb"], "readout": {"task": str(accept_all), "limit": 3},
    }))  # fmt: skip
    cells, pairs = readout_cells(spec)  # writes the paraphrased split into the world, as a sweep does
    by_id = {c.cell_id: c.config for c in cells}
    orig, para = by_id[pairs[0]["original"]], by_id[pairs[0]["paraphrased"]]
    assert orig.task == para.task == str(accept_all) and orig.task_sha256 is not None
    assert load_task(orig).answer_rule == load_task(para).answer_rule == "anything"
    paraphrased = [json.loads(x)["question"] for x in (paraphrase_dir(spec) / "test.jsonl").read_text().splitlines()]
    assert [q.question for q in load_task(para).questions()] == paraphrased[:3]
    builtin, _ = readout_cells(dataclasses.replace(spec, readout=dataclasses.replace(spec.readout, task=None)), write=False)
    assert {c.cell_id for c in builtin}.isdisjoint(by_id)  # the task enters the readout cells' ids


def test_a_relative_readout_task_is_made_absolute_for_trials_that_run_elsewhere(accept_all, monkeypatch, tmp_path):
    monkeypatch.chdir(accept_all.parent)
    spec = spec_from_dict({"miniworld_preset": "smoke", "families": ["llama"], "domains": ["gsm8k"],
                           "strategies": ["identity"], "readout": {"task": accept_all.name}})  # fmt: skip
    assert spec.readout.task == str(accept_all.resolve())
    monkeypatch.chdir(tmp_path)  # a trial's directory: the cell's task is still found
    cell = CellConfig(model="m", strategy="identity", task_dir=str(accept_all.parent), task=spec.readout.task)
    assert cell.task_sha256 is not None
    shipped = spec_from_dict({"miniworld_preset": "smoke", "families": ["llama"], "domains": ["gsm8k"],
                              "strategies": ["identity"], "readout": {"task": "pq"}})  # fmt: skip
    assert shipped.readout.task == "pq"  # a shipped name stays a name
