"""Old option names (before one name per concept) still work for a release: rewritten to the new name with one
warning line, and hidden from ``--help``."""

from __future__ import annotations

import pytest

from railsweep import cli
from railsweep.argtypes import renamed_options
from railsweep.commands import contaminate, detect


def test_an_old_name_becomes_the_new_one_with_a_warning(capsys):
    argv = ["--base", "m", "--alpha=8", "--data-dir", "d", "--out", "o"]
    assert renamed_options(argv, contaminate.RENAMED) == ["--model", "m", "--lora-alpha=8", "--task-dir", "d", "--out", "o"]
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "railsweep: warning: --base is now --model (the old name goes in the next release)"
    assert len(err) == 3


@pytest.mark.parametrize("module", [contaminate, detect])
def test_old_names_are_hidden_from_help_and_their_new_names_exist(module):
    name = module.__name__.rsplit(".", 1)[1]
    parser = cli.make_parser([name])
    sub = next(a for a in parser._actions if a.dest == "command").choices[name]
    options = {o for a in sub._actions for o in a.option_strings}
    for old, new in module.RENAMED.items():
        assert new in options and old not in options, (old, new)


def test_the_command_line_accepts_an_old_name(tmp_path, capsys):
    """contaminate --base is read as --model: the refusal names the new option, after the warning."""
    code = cli.main(["contaminate", "--base", str(tmp_path / "nope"), "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and err[0].startswith("railsweep: warning: --base is now --model")
    assert err[-1].startswith("railsweep: error: argument --model:") and str(tmp_path / "nope") in err[-1]
