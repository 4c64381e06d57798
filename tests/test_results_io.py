"""The per-cell Parquet format: round trip, schema checks, atomic writes, provenance."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pandas as pd
import pyarrow
import pyarrow.parquet as pq
import pytest

from railsweep import provenance
from railsweep.config import CellConfig
from railsweep.engines.base import Sample
from railsweep.errors import DataError
from railsweep.results import (
    SCHEMA_VERSION,
    cell_paths,
    find_cells,
    read_cell,
    read_metadata,
    read_responses,
    write_cell,
)
from railsweep.results import io as results_io
from railsweep.strategies.base import QuestionOutcome
from railsweep.tasks.base import Grade, Question


def _questions(n=3, leaked=True):
    return [
        Question(
            index=i,
            question=f"q{i}",
            solution=f"s\n#### {i}",
            gold=str(i),
            leaked=(i % 2 == 0) if leaked else None,
        )
        for i in range(n)
    ]


def _sample(text, ids=(5, 6), triggers=0):
    return Sample(token_ids=list(ids), text=text, finish_reason="stop", triggers=triggers)


def _outcomes():
    g_ok, g_bad, g_none = (
        Grade(True, "1", "strict"),
        Grade(False, "7", "flexible"),
        Grade(False, None, "none"),
    )
    return [
        # out of order on purpose: rows come back sorted by question_index
        QuestionOutcome(
            index=2,
            samples=[_sample("a"), _sample("b")],
            grades=[g_bad, g_none],
            c=0,
            m=2,
            r01=0,
            extras={"triggers": np.int64(3), "traj_len": 11},  # numpy ints stay ints
        ),
        QuestionOutcome(
            index=0,
            samples=[_sample("c"), _sample("d", triggers=2)],
            grades=[g_ok, g_bad],
            c=1,
            m=2,
            r01=1,
            greedy=_sample("greedy text", ids=(1, 2, 3)),
            extras={"triggers": 2},
        ),
        QuestionOutcome(index=1, samples=[], grades=[], c=0, m=0, r01=0),  # e.g. TED kept nothing
    ]


@pytest.fixture
def cell(tmp_path):
    return CellConfig(model="/m", strategy="identity", task_dir=str(tmp_path), adapter="co", m=2, seed=3)


def test_round_trip_returns_the_config_and_one_sorted_row_per_question(tmp_path, cell):
    paths = write_cell(tmp_path / "out", cell, _outcomes(), _questions())
    assert paths == cell_paths(tmp_path / "out", cell.cell_id)
    got_cell, df = read_cell(paths.questions)
    assert got_cell == cell
    assert df["question_index"].tolist() == [0, 1, 2]
    assert df["c"].tolist() == [1, 0, 0] and df["m"].tolist() == [2, 0, 2]
    assert df["solve_prob"].tolist() == [0.5, 0.0, 0.0]
    assert df["r01"].tolist() == [1, 0, 0]
    assert df["leaked"].tolist() == [True, False, True]
    assert df["n_strict"].tolist() == [1, 0, 0]
    assert df["n_flexible"].tolist() == [1, 0, 1]
    assert df["n_none"].tolist() == [0, 0, 1]


def test_strategy_extras_become_nullable_x_columns(tmp_path, cell):
    _, df = read_cell(write_cell(tmp_path, cell, _outcomes(), _questions()).questions)
    assert df["x_triggers"].tolist()[0] == 2 and df["x_triggers"].tolist()[2] == 3
    assert df["x_triggers"].isna().tolist() == [False, True, False]
    assert df["x_traj_len"].isna().tolist() == [True, True, False]
    assert pq.read_schema(tmp_path / f"{cell.cell_id}.parquet").field("x_triggers").type == pyarrow.int64()


def test_unknown_leak_status_is_null_not_false(tmp_path, cell):
    _, df = read_cell(write_cell(tmp_path, cell, _outcomes(), _questions(leaked=False)).questions)
    assert df["leaked"].isna().all()


def test_responses_file_has_every_sample_and_the_greedy_trajectory_at_minus_one(tmp_path, cell):
    paths = write_cell(tmp_path, cell, _outcomes(), _questions())
    r = read_responses(paths.responses)
    assert list(zip(r["question_index"], r["sample_index"])) == [(0, -1), (0, 0), (0, 1), (2, 0), (2, 1)]
    greedy = r[r["sample_index"] == -1].iloc[0]
    assert greedy["text"] == "greedy text" and list(greedy["token_ids"]) == [1, 2, 3]
    assert pd.isna(greedy["correct"]) and pd.isna(greedy["rule"]) and pd.isna(greedy["pred"])
    assert r["correct"].tolist()[1:3] == [True, False]
    assert r["rule"].tolist()[3:] == ["flexible", "none"]
    assert r["triggers"].tolist()[2] == 2
    assert read_responses(paths.questions).equals(r)  # the per-question path finds its sibling


def test_metadata_records_version_config_and_provenance(tmp_path, cell):
    data = tmp_path / "test.jsonl"
    data.write_text('{"question": "q", "answer": "#### 1"}\n')
    paths = write_cell(tmp_path, cell, _outcomes(), _questions())
    meta = pq.read_schema(paths.questions).metadata
    assert meta[b"railsweep.schema_version"] == str(SCHEMA_VERSION).encode()
    assert json.loads(meta[b"railsweep.cell"]) == cell.to_dict()
    info = read_metadata(paths.questions)
    prov = info["provenance"]
    assert info["cell_id"] == cell.cell_id
    assert prov["datasets"] == {str(data): provenance.file_sha256(data)}
    assert set(prov["git"]) == {"commit", "dirty"}
    assert prov["packages"]["pyarrow"] == pyarrow.__version__
    assert prov["packages"]["numpy"] is not None


def test_git_info_reports_commit_and_dirty_flag_of_a_checkout(tmp_path):
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (repo / "f.txt").write_text("x")
    run("add", "f.txt")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    clean = provenance.git_info(repo)
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    (repo / "f.txt").write_text("y")
    assert provenance.git_info(repo) == {"commit": clean["commit"], "dirty": True}
    assert provenance.git_info(tmp_path / "nowhere") == {"commit": None, "dirty": None}


def _rewrite(path, *, meta=None, drop=None):
    table = pq.read_table(path)
    if drop:
        table = table.drop_columns([drop])
    if meta is not None:
        table = table.replace_schema_metadata({**table.schema.metadata, **meta})
    pq.write_table(table, path)


def test_unknown_schema_version_is_refused(tmp_path, cell):
    paths = write_cell(tmp_path, cell, _outcomes(), _questions())
    _rewrite(paths.questions, meta={b"railsweep.schema_version": b"2"})
    with pytest.raises(DataError, match="unsupported results schema version '2'"):
        read_cell(paths.questions)


def test_missing_column_is_refused_naming_it(tmp_path, cell):
    paths = write_cell(tmp_path, cell, _outcomes(), _questions())
    _rewrite(paths.questions, drop="solve_prob")
    with pytest.raises(DataError, match="missing column 'solve_prob'"):
        read_cell(paths.questions)


def test_plain_parquet_and_missing_file_are_refused(tmp_path):
    import pandas as pd

    plain = tmp_path / "plain.parquet"
    pd.DataFrame({"question_index": [0]}).to_parquet(plain)
    with pytest.raises(DataError, match="not a railsweep results file"):
        read_cell(plain)
    with pytest.raises(DataError, match="not found"):
        read_cell(tmp_path / "absent.parquet")


def test_invalid_outcomes_are_refused_before_anything_is_written(tmp_path, cell):
    out = tmp_path / "out"
    bad = _outcomes()
    bad[0].c = 3  # c > m
    with pytest.raises(DataError, match="c=3, m=2"):
        write_cell(out, cell, bad, _questions())
    with pytest.raises(DataError, match="question_index=2"):
        write_cell(out, cell, _outcomes(), _questions(n=2))
    assert not out.exists()


def test_failure_mid_write_leaves_no_files(tmp_path, cell, monkeypatch):
    out = tmp_path / "out"
    calls = []
    real = results_io._write_synced

    def fail_second(table, path):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        real(table, path)

    monkeypatch.setattr(results_io, "_write_synced", fail_second)
    with pytest.raises(OSError, match="disk full"):
        write_cell(out, cell, _outcomes(), _questions())
    assert not out.exists()
    out.mkdir()
    calls.clear()
    with pytest.raises(OSError):
        write_cell(out, cell, _outcomes(), _questions())
    assert list(out.iterdir()) == []


def test_rewriting_a_cell_replaces_both_files_and_leaves_no_temporaries(tmp_path, cell):
    write_cell(tmp_path, cell, _outcomes(), _questions())
    outs = _outcomes()
    outs[1].c = 2
    paths = write_cell(tmp_path, cell, outs, _questions())
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".jsonl") == sorted(
        [paths.questions.name, paths.responses.name]
    )
    assert read_cell(paths.questions)[1]["c"].tolist() == [2, 0, 0]


def test_file_checksum_is_sha256_and_follows_file_changes(tmp_path):
    f = tmp_path / "data.jsonl"
    f.write_bytes(b"abc")
    assert provenance.file_sha256(f) == hashlib.sha256(b"abc").hexdigest()
    f.write_bytes(b"abcd")
    os.utime(f, ns=(1, 1))  # a different mtime and size must not hit the memo
    assert provenance.file_sha256(f) == hashlib.sha256(b"abcd").hexdigest()


def test_a_fresh_sha256_reads_the_bytes_where_the_memo_would_answer(tmp_path):
    f = tmp_path / "pinned.whl"
    f.write_bytes(b"good")
    st = os.stat(f)
    assert provenance.file_sha256(f) == hashlib.sha256(b"good").hexdigest()
    f.write_bytes(b"evil")  # the same size, the same mtime: the memo cannot tell
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert provenance.file_sha256(f) == hashlib.sha256(b"good").hexdigest()
    assert provenance.file_sha256(f, fresh=True) == hashlib.sha256(b"evil").hexdigest()


def test_find_cells_lists_complete_cells_only(tmp_path, cell):
    other = CellConfig(model="/m", strategy="identity", task_dir=str(tmp_path), adapter="co", m=2, seed=4)
    a = write_cell(tmp_path, cell, _outcomes(), _questions()).questions
    b = write_cell(tmp_path, other, _outcomes(), _questions()).questions
    (tmp_path / ".x.parquet.123.tmp").write_bytes(b"partial")
    assert find_cells(tmp_path) == sorted([a, b])
    with pytest.raises(DataError, match="results directory not found"):
        find_cells(tmp_path / "nope")
