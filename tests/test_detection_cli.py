"""``railsweep detect``: a run on files writes one versioned table; bad input is one error and writes nothing."""

from __future__ import annotations

import json

import pytest

from railsweep.cli import main
from railsweep.detection.output import read_detections

TEST_ROWS = [
    ("Sam has 13 marbles and gives 7 marbles to Finn who keeps them all day long", "13 - 7 = 6\n#### 6"),
    ("Tom had 5 plums in a box and the plums grow 4 times over the whole long week", "5 * 4 = 20\n#### 20"),
    ("Ann reads 3 books on Monday and 4 books on Tuesday at the old town library", "3 + 4 = 7\n#### 7"),
]
CONTROL_ROWS = [
    ("Lee buys 2 kites at the fair and then buys 6 more kites at the market later", "2 + 6 = 8\n#### 8"),
    ("Mia has 9 shells and finds 3 more shells on the beach near the big rocks", "9 + 3 = 12\n#### 12"),
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in rows))
    return path


@pytest.fixture
def files(tmp_path):
    test = _jsonl(tmp_path / "test.jsonl", TEST_ROWS)
    control = _jsonl(tmp_path / "control.jsonl", CONTROL_ROWS)
    leak = tmp_path / "leak.json"
    leak.write_text(json.dumps({"leaked": [0, 2]}))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"text": f"{TEST_ROWS[0][0]}\n{TEST_ROWS[0][1]}"})
        + "\n"
        + json.dumps({"text": "unrelated words about a fox and a dog"})
        + "\n"
        + json.dumps({"text": TEST_ROWS[2][0]})
        + "\n"
    )
    return {"test": test, "control": control, "leak": leak, "corpus": corpus, "tmp": tmp_path}


def base_args(f, out):
    return ["detect", "--detector", "ngram", "--test", str(f["test"]), "--leak-split", str(f["leak"]),
            "--control", str(f["control"]), "--corpus", str(f["corpus"]), "--n", "8", "13", "--out", str(out)]  # fmt: skip


def test_a_file_run_writes_one_row_per_item_per_setting_and_the_truth_table(files, capsys):
    out = files["tmp"] / "out"
    assert main(base_args(files, out) + ["--n-boot", "20"]) == 0
    table = read_detections(out)
    assert len(table) == 2 * (3 + 2)
    row = table[(table.setting == "n=13,fields=question+solution") & (table.group == "test")]
    assert row.score.tolist()[0] == 1.0 and row.flagged.tolist() == [True, False, True]
    assert (out / "truth.csv").is_file() and "| ngram |" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["detections.parquet", "truth.csv", "truth.md"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a, f: a[: a.index("--n") + 1] + ["0"] + a[a.index("--out") :], "argument --n: must be an integer >= 1, got '0'"),
        (lambda a, f: a + ["--threshold", "1.5"], "1.5"),
        (lambda a, f: a + ["--control-rate", "-0.1"], "-0.1"),
        (lambda a, f: a + ["--detector", "ngarm"], "did you mean 'ngram'"),
        (lambda a, f: _swap(a, "--control", str(f["test"])), "overlaps the test set"),
        (lambda a, f: _swap(a, "--corpus", str(_empty(f["tmp"]))), "empty"),
        (lambda a, f: _swap(a, "--corpus", str(f["tmp"] / "missing.jsonl")), "argument --corpus: must be an existing file"),
        (lambda a, f: _swap(a, "--corpus", str(_wordless(f["tmp"]))), "corpus is empty"),
    ],
)
def test_bad_input_is_one_error_line_and_writes_nothing(files, capsys, change, message):
    out = files["tmp"] / "out"
    assert main(change(base_args(files, out), files)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("railsweep: error:") and message in err[0]
    assert not out.exists()


def test_a_world_that_is_not_built_is_not_built_here(files, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("RAILSWEEP_CACHE", str(tmp_path / "empty-cache"))
    assert main(["detect", "--detector", "ngram", "--world", "smoke", "--out", str(tmp_path / "o")]) == 2
    assert "not built" in capsys.readouterr().err
    assert not (tmp_path / "empty-cache").exists()


def _swap(args, flag, value):
    args = list(args)
    args[args.index(flag) + 1] = value
    return args


def _empty(tmp):
    p = tmp / "empty.jsonl"
    p.write_text("")
    return p


def _wordless(tmp):
    p = tmp / "wordless.jsonl"
    p.write_text(json.dumps({"text": "?!"}) + "\n")
    return p
