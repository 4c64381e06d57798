"""The ``railsweep`` command line: one sub-command per module in :mod:`railsweep.commands`.

Each command module exposes ``add_parser(subparsers)`` and ``run(args) -> int``
(``main`` dispatches to the module's ``run``) and is imported only when ``main`` runs (when a known command is named, only
that module), so ``railsweep score`` never pays for torch or Ray. A
:class:`~railsweep.errors.RailsweepError`, or a command line argparse rejects,
becomes one line on stderr (``railsweep: error: ...``) and exit code 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from railsweep import __version__
from railsweep.argtypes import Parser
from railsweep.errors import RailsweepError

COMMANDS = (
    "eval",
    "score",
    "plan",
    "contaminate",
    "miniworld",
    "base",
    "figure1",
    "rails",
    "demo",
    "sweep",
    "detect",
    "dynamics",
    "paraphrase",
    "data",
)
EXIT_USER_ERROR = 2


def _load(name: str) -> ModuleType | None:
    """Import ``railsweep.commands.<name>``; None only when that very module does not exist yet."""
    modname = f"railsweep.commands.{name}"
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name == modname:
            return None
        raise


def make_parser(names: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The top-level parser with each available command; ``args._run`` is the command's ``run``."""
    parser = Parser(
        prog="railsweep",
        description="Did a decoding strategy restore a contaminated model's ability, question by question?",
    )
    parser.add_argument("--version", action="version", version=f"railsweep {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in names:
        mod = _load(name)
        if mod is None:
            continue
        before = set(sub.choices)
        mod.add_parser(sub)
        for added in set(sub.choices) - before:  # the command's name and any aliases
            sub.choices[added].set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Import only the named command when the first word names one; otherwise all (for --help).
    names = (argv[0],) if argv and argv[0] in COMMANDS and _load(argv[0]) is not None else COMMANDS
    parser = make_parser(names)
    try:
        args = parser.parse_args(argv)
        return int(args._run(args) or 0)
    except RailsweepError as e:
        message = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
        print(f"railsweep: error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("railsweep: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
