"""Where the project's shared data (GSM8K, paraphrases) lives; it is read by path, never copied into the repo.

Lookup order (the first that applies wins): 1. the ``explicit`` argument; 2. ``$RAILSWEEP_DATA_DIR`` (or its
older name ``$RAILSWEEP_SHARED_DATA``); 3. ``./data`` when it holds ``gsm8k`` (``railsweep data gsm8k``);
4. ``../shared/data`` from the current directory; 5. the same beside the checkout this package is imported
from (an editable install); 6. else a DataError naming the command that fetches it and the variable to set.
"""

from __future__ import annotations

import os
from pathlib import Path

from railsweep.errors import DataError

ENV_VAR = "RAILSWEEP_DATA_DIR"
_OLD_ENV_VAR = "RAILSWEEP_SHARED_DATA"
_RELATIVE = Path("..") / "shared" / "data"


def shared_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The shared data directory (see the module docstring for the lookup order)."""
    if explicit is not None:
        return _existing(Path(explicit).expanduser(), "the given shared data directory")
    for var in (ENV_VAR, _OLD_ENV_VAR):
        value = os.environ.get(var)
        if value:
            return _existing(Path(value).expanduser(), f"${var}")
    fetched = Path.cwd() / "data"
    candidates = [fetched] if (fetched / "gsm8k").is_dir() else []
    candidates.append(Path.cwd() / _RELATIVE)
    checkout = Path(__file__).resolve().parents[3]  # railsweep/tasks/data/ -> the checkout
    if (checkout / "pyproject.toml").is_file():  # imported from a checkout, not from site-packages
        candidates.append(checkout / _RELATIVE)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    raise DataError(
        f"the shared data directory (GSM8K, paraphrases) was not found at "
        f"{' or '.join(str(c.resolve()) for c in candidates)}; `railsweep data gsm8k` fetches it into ./data, "
        f"or set {ENV_VAR} to a folder that holds it"
    )


def _existing(path: Path, what: str) -> Path:
    if not path.is_dir():
        raise DataError(f"{what} {str(path)!r} is not a directory")
    return path
