"""The few error types railsweep raises on purpose: every entry point turns a :class:`RailsweepError` into one
line on stderr and a non-zero exit; anything else is a bug and keeps its traceback."""

from __future__ import annotations


class RailsweepError(Exception):
    """Base class: a problem with the user's input or environment, not a bug."""


class ConfigError(RailsweepError, ValueError):
    """A configuration value is invalid; the message names the value."""


class DataError(RailsweepError, ValueError):
    """An input file is missing or malformed; the message names file and line."""


class ServiceError(RailsweepError):
    """A service railsweep calls (a chat endpoint) is unreachable, refuses, or answers malformed; the message
    names its address."""


class MissingDependencyError(RailsweepError, ImportError):
    """An optional dependency is not installed; the message carries the install command."""

    def __init__(self, package: str, extra: str | None = None, purpose: str = "", install: str | None = None):
        cmd = install or (f"pip install 'railsweep[{extra}]'" if extra else f"pip install {package}")
        what = f" (needed for {purpose})" if purpose else ""
        super().__init__(f"optional dependency {package!r} is not installed{what}; install it with: {cmd}")
        self.package = package
        self.install_command = cmd


def one_line(error: BaseException) -> str:
    """An error's message on one line (its lines stripped and joined): what ``railsweep: error:`` prints."""
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip())
