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


def test_a_directory_appears_whole_or_not_at_all(tmp_path):
    from railsweep.atomic import write_dir_atomic

    def write(d):
        (d / "a.txt").write_text("a")
        (d / "b.txt").write_text("b")

    out = write_dir_atomic(tmp_path / "dir", write)
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "b.txt"] and (out.stat().st_mode & 0o777) == 0o755

    def broken(d):
        (d / "a.txt").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_dir_atomic(tmp_path / "other", broken)
    assert [p.name for p in tmp_path.iterdir()] == ["dir"]  # no target, no temporary left


def test_an_existing_directory_is_replaced_only_when_asked(tmp_path):
    from railsweep.atomic import write_dir_atomic

    target = tmp_path / "dir"
    write_dir_atomic(target, lambda d: (d / "old.txt").write_text("old"))
    write_dir_atomic(target, lambda d: (d / "new.txt").write_text("new"))  # a concurrent writer finished first
    assert [p.name for p in target.iterdir()] == ["old.txt"]
    write_dir_atomic(target, lambda d: (d / "new.txt").write_text("new"), replace=True)
    assert [p.name for p in target.iterdir()] == ["new.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    write_dir_atomic(empty, lambda d: (d / "x.txt").write_text("x"))  # an empty directory is taken over
    assert [p.name for p in empty.iterdir()] == ["x.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "empty"]
