"""The CLI shell: command discovery, lazy imports, and how user errors surface."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from railsweep import cli
from railsweep.errors import ConfigError


def test_help_lists_every_command_module_that_exists(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        try:
            importlib.import_module(f"railsweep.commands.{name}")
        except ModuleNotFoundError:
            continue
        assert name in out


def test_a_command_module_with_a_broken_import_is_not_silently_skipped(monkeypatch):
    real = importlib.import_module

    def fake(name, *a, **kw):
        if name == "railsweep.commands.score":
            raise ModuleNotFoundError("No module named 'some_dependency'", name="some_dependency")
        return real(name, *a, **kw)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(ModuleNotFoundError, match="some_dependency"):
        cli.main(["score", "--help"])


def test_naming_a_command_imports_only_that_command(monkeypatch, capsys):
    loaded = []
    real = cli._load
    monkeypatch.setattr(cli, "_load", lambda name: loaded.append(name) or real(name))
    with pytest.raises(SystemExit):
        cli.main(["score", "--help"])
    assert set(loaded) == {"score"}


def test_railsweep_error_becomes_one_stderr_line_and_exit_2(monkeypatch, capsys):
    from railsweep.commands import score

    def boom(args):
        raise ConfigError("bad value x=3")

    monkeypatch.setattr(score, "run", boom)
    rc = cli.main(["score", "--clean", "a", "--mitigated", "b", "--out", "c"])
    assert rc == 2
    assert capsys.readouterr().err == "railsweep: error: bad value x=3\n"


def test_other_exceptions_keep_their_traceback(monkeypatch):
    from railsweep.commands import score

    def bug(args):
        raise KeyError("a bug")

    monkeypatch.setattr(score, "run", bug)
    with pytest.raises(KeyError):
        cli.main(["score", "--clean", "a", "--mitigated", "b", "--out", "c"])


def test_real_process_prints_no_traceback_for_a_missing_input(tmp_path):
    code = "import sys; from railsweep.cli import main; sys.exit(main())"
    argv = [
        "score",
        "--clean",
        str(tmp_path / "nope.parquet"),
        "--mitigated",
        "x",
        "--out",
        str(tmp_path / "r"),
    ]
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"railsweep: error: results file not found: {tmp_path / 'nope.parquet'}"
    assert "Traceback" not in proc.stderr and list(tmp_path.iterdir()) == []


REPO = Path(__file__).resolve().parents[1]  # this checkout's railsweep, whatever is installed
HEAVY = ("torch", "transformers", "ray", "mlflow", "pandas", "pyarrow", "vllm", "matplotlib", "scipy")


@pytest.mark.parametrize("argv", [["--help"], *[[name, "--help"] for name in cli.COMMANDS]], ids=" ".join)
def test_help_loads_no_heavy_dependency(argv):
    """``railsweep --help`` imports every command module and ``railsweep sweep --help`` the sweep's spec and
    options: none of them may load torch (the strategies, the world build) or the services' and tables'
    libraries; each command loads those when it runs. A fresh interpreter, so nothing is loaded already."""
    code = (
        "import sys\n"
        "from railsweep import cli\n"
        "try:\n"
        f"    cli.main({argv!r})\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", f"railsweep {' '.join(argv)} loaded {proc.stdout[-300:]}"
