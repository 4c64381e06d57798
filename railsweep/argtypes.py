"""The argument types every command line shares, so one flag means one thing everywhere: a bad value is refused
while the command line is parsed, before anything loads, in the same words everywhere (``argument --seed: must
be an integer in [0, 4294967295], got '-1'``). :class:`Parser` raises argparse's usage errors as a
:class:`~railsweep.errors.ConfigError`, which every entry point prints as one line.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from railsweep.errors import ConfigError
from railsweep.limits import INT64_MAX, SEED_MAX, TOKEN_ID_BYTES, check_fits

EXAMPLES_HEADING = "examples:"
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


class Parser(argparse.ArgumentParser):
    """argparse with its usage errors raised as ConfigError, so they print like every other bad input."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} (see '{self.prog} --help')")


class HelpFormatter(argparse.HelpFormatter):
    """Every command's ``--help``: a block under a heading (``examples:``, ``commands:``) keeps its lines, and an
    option's default is shown where it has one (not for flags, nor where the help text already says what the
    default is)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text and text.split("\n", 1)[0].endswith(":"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            not action.option_strings
            or any(action.default is nothing for nothing in (None, False, argparse.SUPPRESS))
            or action.default in ([], ())
            or "default" in text.lower()
        ):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


def examples(*lines: str) -> str:
    """The epilog of a command's ``--help``: its examples, one command line each (a ``#`` comment may follow)."""
    return "\n".join([EXAMPLES_HEADING, *(f"  {line}" for line in lines)])


def _bad(text: str, rule: str) -> NoReturn:
    raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")


def integer(lo: int = 1, hi: int = INT64_MAX, *, bytes_each: int = 0, of: str = "") -> Callable[[str], int]:
    """An argument type: an integer in [lo, hi]; with ``bytes_each``, ``value * bytes_each`` must fit in memory."""
    rule = f"an integer >= {lo}" if hi == INT64_MAX else f"an integer in [{lo}, {hi}]"

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            _bad(text, rule)
        if value < lo:
            _bad(text, rule)
        if value > hi:
            _bad(text, f"an integer in [{lo}, {hi}]")
        if bytes_each:
            try:
                check_fits(text, value * bytes_each, of)
            except ConfigError as e:
                raise argparse.ArgumentTypeError(str(e)) from e
        return value

    parse.__name__ = "integer"
    return parse


def real(lo: float = 0.0, hi: float = math.inf, *, open_lo: bool = False, open_hi: bool = False):
    """An argument type: a finite float in the interval [lo, hi] (``open_*``: that end excluded)."""
    rule = f"a finite number in {'(' if open_lo else '['}{lo:g}, {hi:g}{')' if open_hi or hi == math.inf else ']'}"
    if lo == -math.inf and hi == math.inf:
        rule = "a finite number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            _bad(text, rule)
        inside = (lo < value if open_lo else lo <= value) and (value < hi if open_hi else value <= hi)
        if not math.isfinite(value) or not inside:
            _bad(text, rule)
        return value

    parse.__name__ = "real"
    return parse


def text(value: str) -> str:
    """A non-empty string without control characters (a label, a name)."""
    if not value.strip() or any(ord(ch) < 32 for ch in value):
        _bad(value, "a non-empty name without control characters")
    return value


def device(value: str) -> str:
    """auto, cpu, mps, cuda or cuda:N (whether that device exists is checked before a model loads)."""
    if not _DEVICE_RE.match(value):
        _bad(value, "auto, cpu, mps, cuda or cuda:N")
    return value


def threads(value: str) -> int:
    """CPU threads: 1 up to this machine's logical CPUs (more only time-slices the same cores)."""
    return integer(1, os.cpu_count() or 1)(value)


def writable_dir(value: str) -> str:
    """A directory this process can write into or create (checked without leaving anything behind)."""
    try:
        check_writable_dir(value, "")
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e).strip()) from e
    return value


def _exists(test: str, rule: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if not getattr(Path(value).expanduser(), test)():
            _bad(value, rule)
        return value

    parse.__name__ = f"existing_{test.removeprefix('is_')}"
    return parse


existing_file = _exists("is_file", "an existing file")
existing_dir = _exists("is_dir", "an existing directory")
existing_path = _exists("exists", "an existing file or directory")

# The shared flags' types.
seed = integer(0, SEED_MAX)
temperature = real(0.0)  # 0 = greedy
samples = integer(1, bytes_each=TOKEN_ID_BYTES, of="token ids (at least one per sample)")  # --m
new_tokens = integer(1, bytes_each=TOKEN_ID_BYTES, of="token ids")  # --max-new-tokens
limit = integer(1)  # --limit: the first N questions
positive = integer(1)
n_boot = integer(1, bytes_each=16, of="bootstrap indices (at least one question)")
strata = integer(1, INT64_MAX)  # --B: stratum indices are int64
ngram_order = integer(1, bytes_each=4 * TOKEN_ID_BYTES, of="carried token ids and window hashes")
port = integer(1, 65535)
probability = real(0.0, 1.0, open_lo=True, open_hi=True)
fraction = real(0.0, 1.0)
positive_real = real(0.0, open_lo=True)
finite = real(-math.inf)
percentage = real(0.0, 100.0, open_lo=True)
hash_bits = integer(1, 64)
count = integer(0)  # a number of items where 0 means none


def check_writable_dir(path: str | Path, flag: str = "--out", shown: str | None = None) -> None:
    """Fail now, before any work, unless ``path`` is a directory this process can write into or create.

    ``flag`` and ``shown`` (default ``path``) name the option and the value the user gave in the message.
    Steps:
      1. walk up from ``path`` to the deepest entry that exists;
      2. that entry must be a directory (``path`` itself, or an ancestor it would be created in);
      3. create and remove a temporary directory there: the only reliable test (root, read-only
         mounts, /proc), and nothing is left behind.
    """
    p = Path(path).expanduser()
    what = f"{flag} {shown if shown is not None else path}"
    base = p
    while not os.path.lexists(base) and base != base.parent:
        base = base.parent
    if not base.is_dir():
        if base == p:
            raise ConfigError(f"{what}: {p} is a file, not a directory")
        raise ConfigError(f"{what}: cannot create the directory {p}: {base} is a file, not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".railsweep-probe-", dir=base))
    except OSError as e:
        raise ConfigError(f"{what}: cannot create files in {base} ({e.strerror or e})") from e


def _looks_local(value: str) -> bool:
    """A filesystem path rather than a hub id (``name`` or ``org/name``): it exists, or is absolute,
    starts with ``.`` or ``~``, or has more than one ``/``. A missing local path never reaches a hub client."""
    return Path(value).expanduser().exists() or value.startswith(("/", ".", "~")) or value.count("/") > 1


def model_problem(value: str, needs: str | tuple[str, ...] = "config.json") -> str | None:
    """Why ``value`` is not a usable local folder holding ``needs`` (one of them, a tuple); None when it is,
    or is a hub id."""
    if not _looks_local(value):
        return None
    p = Path(value).expanduser()
    if not p.is_dir():
        return f"{value}: no such directory"
    names = (needs,) if isinstance(needs, str) else needs
    if not any((p / f).is_file() for f in names):
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        return f"{value}: the directory has no {listed}"
    return None


def _checked(name: str, needs: str | tuple[str, ...]) -> Callable[[str], str]:
    def parse(value: str) -> str:
        why = model_problem(value, needs)
        if why:
            raise argparse.ArgumentTypeError(why)
        return value

    parse.__name__ = name
    return parse


model = _checked("model", "config.json")  # a base model folder, or a hub id
adapter = _checked("adapter", "adapter_config.json")  # a peft adapter folder
tokenizer = _checked("tokenizer", ("tokenizer.json", "tokenizer_config.json", "tokenizer.model"))


def renamed_options(argv: list[str], renamed: dict[str, str], prog: str = "railsweep") -> list[str]:
    """``argv`` with each old option name of ``renamed`` ({old: new}) replaced by its new one (``--old=v`` too),
    and one warning line per old name on stderr: old names are accepted for one release, hidden from ``--help``."""
    out = []
    for word in argv:
        name, eq, value = word.partition("=")
        if name in renamed:
            print(f"{prog}: warning: {name} is now {renamed[name]} (the old name goes in the next release)", file=sys.stderr)
            word = renamed[name] + eq + value
        out.append(word)
    return out
