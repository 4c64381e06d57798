"""Task files: the shipped GSM8K and PQ files against the coded tasks, a custom file, and every bad field.

The shipped files must send byte-identical prompts, record identical gold answers, grade every response as
the coded rules do, and so write the same per-question tables on the smoke world.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from railsweep.cli import main
from railsweep.config import CellConfig
from railsweep.errors import ConfigError, DataError
from railsweep.evaluate import evaluate_cell, load_task
from railsweep.tasks import GSM8KTask, load_paraphrases
from railsweep.tasks.answers.file_rules import grade_with
from railsweep.tasks.answers.gsm8k_rules import STOP, grade
from railsweep.tasks.base import ANSWER_RULES, Question
from railsweep.tasks.data.gsm8k_rows import load_exemplars
from railsweep.tasks.data.shared_data import shared_data_dir
from railsweep.tasks.kinds.file_spec import builtin_tasks, load_task_file
from railsweep.tasks.kinds.file_task import FileTask

FIXTURE = Path(__file__).parent / "fixtures" / "lm_eval_gsm8k_cot.json"
PQ_FILE = Path("gsm8k_paraphrase") / "lmsys_rephrase" / "pq_test.jsonl"


def _pq_reference(pq_file: Path, gsm8k: GSM8KTask, fewshot: Path, rule: str = "final") -> GSM8KTask:
    """The coded PQ task: load_paraphrases' questions (empty rows left out) with the test split's gold."""
    gold = {q.index: q.gold for q in gsm8k.questions()}
    para = load_paraphrases(pq_file)
    questions = [Question(i, t, "", gold[i]) for i, t in sorted(para.items())]
    return GSM8KTask(questions, load_exemplars(fewshot), answer_rule=rule)


def test_the_package_ships_gsm8k_and_pq_task_files():
    assert {"gsm8k", "pq"} <= set(builtin_tasks())
    assert load_task_file("gsm8k").rule_names == ANSWER_RULES


def test_the_gsm8k_file_sends_the_coded_prompts_byte_for_byte_on_the_whole_test_split():
    data = shared_data_dir() / "gsm8k"
    coded, filed = GSM8KTask.from_dir(data), FileTask(load_task_file("gsm8k"), data)
    assert len(filed.questions()) == len(coded.questions()) == 1319
    for a, b in zip(filed.questions(), coded.questions()):
        assert a == b  # index, question, solution, gold (commas removed), leaked
        assert filed.prompt(a) == coded.prompt(b)
        assert filed.gold_chain(a) == coded.gold_chain(b)
    assert filed.prefix == (data / "cot_8shot_prefix.txt").read_text(encoding="utf-8")
    assert filed.stop == coded.stop


def test_the_pq_file_sends_the_paraphrase_prompts_byte_for_byte_and_leaves_out_empty_rows():
    root = shared_data_dir()
    fewshot = root / "gsm8k" / "cot_8shot.json"
    reference = _pq_reference(root / PQ_FILE, GSM8KTask.from_dir(root / "gsm8k"), fewshot)
    filed = FileTask(load_task_file("pq"), (root / PQ_FILE).parent, fewshot_path=fewshot)
    got, want = filed.questions(), reference.questions()
    assert len(got) == len(want) == 1315  # 1319 minus the 4 empty paraphrases
    assert {309, 669, 727, 948}.isdisjoint(q.index for q in got)
    assert [(q.index, q.gold) for q in got] == [(q.index, q.gold) for q in want]
    assert all(filed.prompt(a) == reference.prompt(b) for a, b in zip(got, want))


def _responses() -> list[tuple[str, str]]:
    """The harness fixture's responses plus random strings made of the pieces the rules read."""
    rows = json.loads(FIXTURE.read_text(encoding="utf-8"))["rows"]
    out = [(r["response"], r["target"].replace(",", "")) for r in rows]
    rng = random.Random(0)
    pieces = [*"0123456789 ,.$-\u2212\n\t", "The answer is ", "the answer is: ", "Q:", "\n\nQ:", "1,234", "(3)-"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        out.append((text, rng.choice(["18", "1234", "-5", "0.5", "3"])))
    return out


@pytest.mark.parametrize("rule", ANSWER_RULES)
def test_the_gsm8k_file_grades_every_response_as_the_coded_rule(rule):
    spec = load_task_file("gsm8k")
    for text, gold in _responses():
        assert grade_with(spec.rule(rule), text, gold, spec.stop) == grade(text, gold, STOP, rule), text


def _tables(path: Path) -> tuple:
    """A cell's two tables without their metadata, plus the answer rules' counts."""
    q = pq.read_table(path)
    r = pq.read_table(str(path).replace(".parquet", ".responses.parquet"))
    grading = json.loads(q.schema.metadata[b"railsweep.grading"])
    return q.replace_schema_metadata(None), r.replace_schema_metadata(None), grading


@pytest.fixture(scope="module")
def smoke_engine(smoke_world):
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.miniworld import build_world

    world = build_world("smoke", cache_dir=smoke_world)
    fam = world.family("llama")
    eng = TransformersEngine(fam.base_dir, {k: str(v) for k, v in fam.adapters.items()}, device="cpu", dtype="float32")
    yield world, eng
    eng.close()


@pytest.mark.parametrize("rule", ["final", "lm_eval"])
def test_cells_run_from_the_task_files_write_the_coded_tasks_tables_on_the_smoke_world(smoke_engine, rule, tmp_path):
    world, eng = smoke_engine
    data = world.data_dir
    common = dict(model="m", strategy="identity", task_dir=str(data), adapter="co_gsm8k", m=2, temperature=1.0,
                  max_new_tokens=40, leak_split=str(world.leak_split_path), answer_rule=rule)  # fmt: skip
    cell = CellConfig(**common)
    coded = GSM8KTask.from_dir(data, leak_split=world.leak_split_path, answer_rule=rule)
    filed = FileTask(load_task_file("gsm8k"), data, leak_split=world.leak_split_path, answer_rule=rule)
    a = evaluate_cell(cell, eng, coded, out_dir=tmp_path / "coded")
    b = evaluate_cell(cell, eng, filed, out_dir=tmp_path / "filed")
    qa, ra, ga = _tables(a.paths.questions)
    qb, rb, gb = _tables(b.paths.questions)
    assert qa.equals(qb) and ra.equals(rb) and ga == gb
    assert qa.num_rows == 24 and ra.num_rows == 48

    pq_cell = CellConfig(**common, task="pq")
    reference = _pq_reference(data / "pq_test.jsonl", coded, data / "cot_8shot.json", rule)
    c = evaluate_cell(pq_cell, eng, out_dir=tmp_path / "pq")  # the pq file, loaded from the cell
    d = evaluate_cell(cell, eng, reference, out_dir=tmp_path / "pq_coded")
    qc, rc, gc = _tables(c.paths.questions)
    qd, rd, gd = _tables(d.paths.questions)
    assert rc.equals(rd) and gc == gd
    assert qc.drop(["leaked"]).equals(qd.drop(["leaked"]))  # the coded reference has no leak split
    assert pq_cell.cell_id != cell.cell_id and "task_sha256" not in pq_cell.to_dict()


def test_the_shipped_gsm8k_name_keeps_the_built_in_cell_id():
    plain = CellConfig(model="m", strategy="identity", task_dir="/d")
    named = CellConfig(model="m", strategy="identity", task_dir="/d", task="gsm8k")
    assert named == plain and named.cell_id == plain.cell_id and "task" not in named.to_dict()


CUSTOM = """\
name: capitals
description: "Answer with the city.\\n\\n"
data: {path: "cities.csv", keep_if: "country != 'skip'"}
fields: {question: country}
doc_to_text: "Country: {{country}}\\nCapital:"
doc_to_target: "{{capital}}"
fewshot: {split: train, n: 2}
target_delimiter: " "
fewshot_delimiter: "\\n\\n"
stop: ["\\n"]
grader: {type: string, ignore_case: true, regexes_to_ignore: ['\\.$']}
answer_rules:
  exact:
    extract:
      - regex: 'capital is (\\w+)'
        select: first
      - regex: '^\\s*(\\w+)'
"""


@pytest.fixture
def custom(tmp_path):
    root = tmp_path / "capitals"
    root.mkdir()
    (root / "cities.csv").write_text("country,capital\nFrance,Paris\nskip,x\nJapan,Tokyo\n")
    (root / "capitals.yaml").write_text(CUSTOM.replace('"cities.csv"', '"{split}.csv"'))
    (root / "test.csv").write_text("country,capital\nFrance,Paris\nskip,x\nJapan,Tokyo\n")
    (root / "train.csv").write_text("country,capital\nItaly,Rome\nSpain,Madrid\nPeru,Lima\n")
    return root


def test_a_custom_task_file_renders_lm_eval_style_prompts_and_grades_by_its_own_rules(custom):
    task = FileTask(load_task_file(custom / "capitals.yaml"))
    qs = task.questions()
    assert [(q.index, q.question, q.gold) for q in qs] == [(0, "France", "Paris"), (2, "Japan", "Tokyo")]
    assert task.prompt(qs[0]) == (
        "Answer with the city.\n\nCountry: Italy\nCapital: Rome\n\nCountry: Spain\nCapital: Madrid\n\n"
        "Country: France\nCapital:"
    )
    assert task.grade(" paris.\nCountry: X", qs[0]).correct
    assert task.grade(" I think the capital is Paris, not Lyon", qs[0]).rule == "strict"
    assert not task.grade(" Lyon", qs[0]).correct


def test_a_custom_files_content_hash_enters_the_cell_id_and_an_edit_is_caught(custom, tmp_path):
    path = custom / "capitals.yaml"
    cell = CellConfig(model="m", strategy="identity", task_dir=str(custom), task=str(path))
    assert cell.answer_rule == "exact" and cell.answer_type == "string"
    assert cell.to_dict()["task_sha256"] == load_task_file(path).sha256
    assert CellConfig.from_dict(cell.to_dict()) == cell
    path.write_text(path.read_text() + "# edited\n")
    edited = CellConfig(model="m", strategy="identity", task_dir=str(custom), task=str(path))
    assert edited.cell_id != cell.cell_id
    with pytest.raises(DataError, match="changed since this cell was configured"):
        load_task(cell)


def test_a_numeric_grader_reads_thousands_separators_and_a_tolerance(tmp_path):
    text = CUSTOM.split("grader:")[0] + (
        "grader: {type: numeric, tolerance: 0.01, thousands_separator: \"'\"}\n"
        "answer_rules:\n  exact:\n    extract: [{regex: \"([-0-9'.]+)\"}]\n"
    )
    (tmp_path / "t.yaml").write_text(text)
    rule = load_task_file(tmp_path / "t.yaml").rule("exact")
    assert grade_with(rule, "1'234.005", "1234", ()).correct
    assert grade_with(rule, "1'234.005", "1'234", ()).pred == "1234.005"
    assert not grade_with(rule, "1'234.02", "1234", ()).correct


def test_a_math_grader_with_boxed_steps_grades_as_the_math_task(tmp_path):
    from railsweep.tasks.answers.math_rules import STOP as MATH_STOP
    from railsweep.tasks.answers.math_rules import grade_math

    text = CUSTOM.split("grader:")[0] + "grader: {type: math}\nanswer_rules:\n  final:\n    extract: [{boxed: last}, {answer_is: last}]\n"
    tmp = tmp_path / "m.yaml"
    tmp.write_text(text)
    rule = load_task_file(tmp).rule("final")
    for response, gold in [("so \\boxed{\\frac{1}{2}}", "0.5"), ("The answer is $x^2$.", "x^2"),
                           ("\\boxed{3} then \\boxed{4}", "3"), ("nothing", "1"), ("\\boxed{2,3}", "3,2")]:  # fmt: skip
        assert grade_with(rule, response, gold, MATH_STOP) == grade_math(response, gold, MATH_STOP, "final")


BAD = [  # (edit of the custom file, the field the error names, what it says)
    (lambda t: t.replace("name: capitals\n", ""), "name", "required field is missing"),
    (lambda t: t + "prompt: x\n", "prompt", "unknown field"),
    (lambda t: t.replace("doc_to_text:", "doc_to_txt:"), "doc_to_txt", "did you mean 'doc_to_text'"),
    (lambda t: t.replace('"Country: {{country}}', '"Country: {{country'), "doc_to_text", "not a valid Jinja template"),
    (lambda t: t.replace("capital is (\\w+)", "capital is (\\w+"), "answer_rules.exact.extract[0].regex",
     "not a valid regular expression"),
    (lambda t: t.replace("select: first", "select: middle"), "answer_rules.exact.extract[0].select", "must be one of"),
    (lambda t: t.replace("type: string", "type: fuzzy"), "grader.type", "must be one of numeric, string, math"),
    (lambda t: t.replace("ignore_case: true", "tolerance: 1"), "grader.tolerance", "does not apply to a string grader"),
    (lambda t: t.replace("{split: train, n: 2}", "{split: train}"), "fewshot.n", "required with 'split'"),
    (lambda t: t.replace('"cities.csv"', '"cities.txt"'), "data.format", "cannot tell the format"),
    (lambda t: t.replace('stop: ["\\n"]', "stop: [1]"), "stop", "list of non-empty strings"),
    (lambda t: t.replace("  exact:", "  Exact:"), "answer_rules.Exact", "a rule name is lower-case"),
    (lambda t: "format: 2\n" + t, "format", "reads task file format 1"),
]  # fmt: skip


@pytest.mark.parametrize("edit,field,problem", BAD)
def test_a_bad_task_file_field_is_refused_naming_the_file_and_the_field(edit, field, problem, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(CUSTOM))
    with pytest.raises(ConfigError) as e:
        load_task_file(path)
    assert str(e.value).startswith(f"task file {path}: {field}: ") and problem in str(e.value)


def test_eval_refuses_a_bad_task_file_with_one_line_before_loading_anything(tmp_path, model_dir, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(CUSTOM.replace("select: first", "select: middle"))
    out = tmp_path / "out"
    argv = ["eval", "--model", str(model_dir), "--task", str(path), "--strategy", "identity",
            "--out", str(out)]  # fmt: skip
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == (
        f"railsweep: error: task file {path}: answer_rules.exact.extract[0].select: must be one of last, first, "
        "got 'middle'"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "argv_task,message",
    [("gsm8", "task 'gsm8': neither a task file nor a shipped task (shipped: gsm8k, math, pq); did you mean 'gsm8k'?"),
     ("pq", "--task pq: the task file reads its data from {task_dir}; give --task-dir")],
)  # fmt: skip
def test_eval_refuses_an_unknown_task_or_a_missing_task_dir(argv_task, message, tmp_path, model_dir, capsys):
    argv = ["eval", "--model", str(model_dir), "--task", argv_task, "--strategy", "identity", "--out", str(tmp_path / "o")]
    code = main(argv)
    assert code == 2 and capsys.readouterr().err.strip() == f"railsweep: error: {message}"


def _spec_with_task(task):
    import dataclasses

    from railsweep.sweep.spec.sections import FamilySpec
    from railsweep.sweep.spec.sweep_spec import load_spec

    adapters = tuple((a, f"/p/{a}") for a in ("clean", "co_gsm8k", "co_pq"))
    spec = dataclasses.replace(
        load_spec("smoke"), source="paths", families=(FamilySpec("llama", "/p/base", adapters),), data_dir="/p/data"
    )
    return spec, dataclasses.replace(spec, readout=dataclasses.replace(spec.readout, task=task))


def test_a_spec_task_reaches_every_cell_and_a_custom_files_content_changes_the_sweep_id(custom):
    from railsweep.sweep.plan.cells import expand

    path = custom / "capitals.yaml"
    plain, pq_spec = _spec_with_task("pq")
    assert {c.config.task for c in expand(pq_spec)} == {"pq"} and pq_spec.sweep_id != plain.sweep_id
    assert _spec_with_task("gsm8k")[1].sweep_id != plain.sweep_id  # the spec names it; its cells keep their ids
    assert [c.cell_id for c in expand(_spec_with_task("gsm8k")[1])] == [c.cell_id for c in expand(plain)]
    before = _spec_with_task(str(path))[1].sweep_id
    path.write_text(path.read_text() + "# edited\n")
    assert _spec_with_task(str(path))[1].sweep_id != before


def test_a_spec_naming_a_bad_task_file_is_refused_naming_its_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(CUSTOM.replace("select: first", "select: middle"))
    with pytest.raises(ConfigError, match=r"answer_rules\.exact\.extract\[0\]\.select: must be one of"):
        _spec_with_task(str(path))
