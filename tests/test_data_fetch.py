"""`railsweep data gsm8k` (railsweep.tasks.data.fetch): every file from a mirror laid out like GitHub's raw files,
checked against its pinned sha256, written all or nothing, and found afterwards by every command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from railsweep.cli import main
from railsweep.tasks.data import fetch
from railsweep.tasks.data.shared_data import shared_data_dir

SHARED = shared_data_dir()


def _mirror_of_the_sources(root: Path) -> str:
    """A file:// mirror holding each source at its GitHub path, made from the project's copies: the lm-eval
    task YAML is rebuilt from the exemplars (its fewshot samples are what railsweep reads of it)."""
    copies = {
        "gsm8k/test.jsonl": SHARED / "gsm8k/test.jsonl",
        "gsm8k/train.jsonl": SHARED / "gsm8k/train.jsonl",
        "gsm8k/LICENSE": SHARED / "gsm8k/LICENSE",
        "gsm8k/LICENSE.lm-evaluation-harness": SHARED / "gsm8k/LICENSE.lm-evaluation-harness",
        f"{fetch.PQ_DIR}/rephrase_gsm8k.jsonl": SHARED / fetch.PQ_DIR / "rephrase_gsm8k.jsonl",
        f"{fetch.PQ_DIR}/LICENSE": SHARED / fetch.PQ_DIR / "LICENSE",
    }
    for name, src in copies.items():
        dst = root / fetch.FILES[name].path
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    pairs = json.loads((SHARED / "gsm8k/cot_8shot.json").read_text(encoding="utf-8"))
    task = {"dataset_path": "openai/gsm8k", "fewshot_config": {"sampler": "first_n", "samples": [
        {"question": p["question"], "target": p["answer"]} for p in pairs]}}  # fmt: skip
    dst = root / fetch.EXEMPLARS_YAML.path
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(yaml.safe_dump(task, allow_unicode=True), encoding="utf-8")
    return root.as_uri()


@pytest.fixture
def mirror(tmp_path):
    return _mirror_of_the_sources(tmp_path / "mirror")


def test_fetch_writes_every_file_byte_for_byte_as_the_project_uses_it_and_keeps_them_on_a_second_run(
    mirror, tmp_path, capsys
):
    out = tmp_path / "data"
    assert main(["data", "gsm8k", "--out", str(out), "--mirror", mirror]) == 0
    names = [*fetch.FILES, *fetch.DERIVED]
    for name in names:
        assert (out / name).read_bytes() == (SHARED / name).read_bytes(), name
    assert "8 files checked" in capsys.readouterr().out
    assert main(["data", "gsm8k", "--out", str(out), "--mirror", mirror]) == 0
    printed = capsys.readouterr().out
    assert printed.count("[data] kept:") == len(names) and "<-" not in printed  # nothing downloaded again


def test_a_source_that_differs_from_its_pin_is_one_error_naming_it_and_nothing_is_written(
    mirror, tmp_path, capsys
):
    test = Path(mirror.removeprefix("file://")) / fetch.FILES["gsm8k/test.jsonl"].path
    test.write_bytes(test.read_bytes().replace(b"Janet", b"Janey", 1))
    out = tmp_path / "data"
    assert main(["data", "gsm8k", "--out", str(out), "--mirror", mirror]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gsm8k/test.jsonl" in err[0] and "sha256" in err[0], err
    assert not out.exists() or not any(out.rglob("*"))


def test_exemplars_that_changed_upstream_are_refused_by_their_derived_digest(mirror, tmp_path, capsys):
    task = Path(mirror.removeprefix("file://")) / fetch.EXEMPLARS_YAML.path
    task.write_text(task.read_text(encoding="utf-8").replace("15 trees", "16 trees"), encoding="utf-8")
    assert main(["data", "gsm8k", "--out", str(tmp_path / "data"), "--mirror", mirror]) == 2
    assert "cot_8shot.json" in capsys.readouterr().err


def test_an_unreachable_mirror_names_the_address(tmp_path, capsys):
    missing = (tmp_path / "nothing").as_uri()
    assert main(["data", "gsm8k", "--out", str(tmp_path / "data"), "--mirror", missing]) == 2
    err = capsys.readouterr().err
    assert "could not download" in err and "nothing" in err


@pytest.mark.parametrize(
    "argv, named",
    [(["data", "gsm8k", "--mirror", "ftp://x"], "ftp://x"), (["data", "mnist"], "mnist")],
)
def test_bad_options_are_refused_before_anything_is_fetched(argv, named, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_commands_find_the_fetched_folder_from_where_it_was_fetched(mirror, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("RAILSWEEP_DATA_DIR", "RAILSWEEP_SHARED_DATA"):
        monkeypatch.delenv(var, raising=False)
    assert main(["data", "gsm8k", "--mirror", mirror]) == 0
    assert shared_data_dir() == (tmp_path / "data").resolve()
