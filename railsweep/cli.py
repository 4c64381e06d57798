"""The ``railsweep`` command line: one sub-command per module in :mod:`railsweep.commands`, imported only when
``main`` runs (only the named one when a command is named), so ``railsweep score`` never pays for torch or Ray.
A :class:`~railsweep.errors.RailsweepError` or a command line argparse rejects becomes one line on stderr and
exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from railsweep import __version__
from railsweep.argtypes import HelpFormatter, Parser, renamed_options
from railsweep.argtypes import examples as examples_text
from railsweep.errors import RailsweepError, one_line

COMMANDS = ("demo", "sweep", "plan", "eval", "score", "miniworld", "base", "contaminate", "data",
            "paraphrase", "figure1", "rails", "detect", "dynamics")  # fmt: skip
GROUPS = ("run a sweep", "evaluate one cell", "build a laboratory", "look inside")
EXIT_USER_ERROR = 2


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"railsweep.commands.{name}")


def make_parser(names: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The top-level parser with each available command; ``args._run`` is the command's ``run``.

    A command module may carry ``GROUP`` (its heading in ``railsweep --help``, one of :data:`GROUPS`) and
    ``EXAMPLES`` (command lines printed at the end of its ``--help``); every command's help shows defaults.
    """
    parser = Parser(
        prog="railsweep",
        description="Did a decoding strategy restore a contaminated model's ability, question by question?",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"railsweep {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, help="one of the commands below")
    listing: dict[str, list[tuple[str, str]]] = {group: [] for group in GROUPS}
    for name in names:
        mod = _load(name)
        before = set(sub.choices)
        command = mod.add_parser(sub)
        for added in set(sub.choices) - before:  # the command's name and any aliases
            sub.choices[added].set_defaults(_run=mod.run)
        _teach(command, getattr(mod, "EXAMPLES", ()))
        line = next((a.help for a in sub._choices_actions if a.dest == name), "") or ""
        listing[getattr(mod, "GROUP", GROUPS[-1])].append((name, line))
    sub._choices_actions.clear()  # listed by group below instead of in one flat list
    parser.epilog = _grouped(listing)
    return parser


def _teach(command: argparse.ArgumentParser, examples: Sequence[str]) -> None:
    """Defaults shown in the command's help (and its sub-commands'), its examples at the end."""
    command.formatter_class = HelpFormatter
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            for nested in action.choices.values():
                nested.formatter_class = HelpFormatter
    if examples and not command.epilog:
        command.epilog = examples_text(*examples)


def _grouped(listing: dict[str, list[tuple[str, str]]]) -> str:
    width = max((len(name) for rows in listing.values() for name, _ in rows), default=0)
    lines = ["commands:"]
    for group, rows in listing.items():
        if rows:
            lines.append(f"  {group}:")
            lines += [f"    {name:<{width}}  {text}" for name, text in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Import only the named command when the first word names one; otherwise all (for --help).
    names = (argv[0],) if argv and argv[0] in COMMANDS else COMMANDS
    if len(names) == 1:  # a command's old option names, accepted for a release with a warning
        argv = [argv[0], *renamed_options(argv[1:], getattr(_load(argv[0]), "RENAMED", {}))]
    parser = make_parser(names)
    try:
        args = parser.parse_args(argv)
        return int(args._run(args) or 0)
    except RailsweepError as e:
        print(f"railsweep: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("railsweep: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
