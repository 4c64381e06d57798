"""railsweep.atomic: a write that fails leaves the old file (or nothing) behind, never part of a new one."""

from __future__ import annotations

import pytest

from railsweep.atomic import synced_text, write_all_atomic, write_atomic, write_text_atomic


class Boom(RuntimeError):
    pass


def _half_then_fail(tmp):
    tmp.write_text("half of the new")
    raise Boom


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = write_text_atomic(tmp_path / "t.md", "old")
    with pytest.raises(Boom):
        write_atomic(target, _half_then_fail)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.md"]


def test_a_write_creates_the_missing_directories_and_replaces_the_file(tmp_path):
    target = tmp_path / "a" / "b" / "t.csv"
    write_text_atomic(target, "x,y\n")
    write_atomic(target, lambda tmp: tmp.write_text("x,y\n1,2\n"))
    assert target.read_text() == "x,y\n1,2\n"


def test_several_files_are_written_all_or_none(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(Boom):
        write_all_atomic({out / "a.csv": synced_text("a"), out / "b.md": _half_then_fail})
    assert not out.exists()  # the directory this call created is gone with its files
    paths = write_all_atomic({out / "a.csv": synced_text("a"), out / "b.md": synced_text("b")})
    assert [p.read_text() for p in paths] == ["a", "b"]


def test_a_failure_after_the_first_rename_removes_the_renamed_file_too(tmp_path, monkeypatch):
    import os

    import railsweep.atomic as atomic

    calls, real_replace = [], os.replace

    def replace_once(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise Boom
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace_once)
    with pytest.raises(Boom):
        write_all_atomic({tmp_path / "a": synced_text("a"), tmp_path / "b": synced_text("b")})
    assert calls == [tmp_path / "a", tmp_path / "b"]  # "a" was in place when "b" failed
    assert list(tmp_path.iterdir()) == []


def test_files_in_two_new_directories_leave_neither_behind_when_one_fails(tmp_path):
    a, b = tmp_path / "rows" / "pq.jsonl", tmp_path / "reports" / "pq.json"
    with pytest.raises(Boom):
        write_all_atomic({a: synced_text("rows"), b: _half_then_fail})
    assert list(tmp_path.iterdir()) == []
    write_all_atomic({a: synced_text("rows"), b: synced_text("{}")})
    assert (a.read_text(), b.read_text()) == ("rows", "{}")
