"""User-facing text speaks of the product as it is now: no development history ("session 5", "issue 4") in the
README, docs/, the entry scripts, the library's docstrings and comments, or the notebook. History lives in commit
messages and CHANGELOG.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(r"session [0-9]|sessions [0-9]|issue [0-9]|issues [0-9]", re.IGNORECASE)
SCANNED = ["README.md", "docs", "sweeps", "railsweep", "notebooks", "bench", "cluster"]
SUFFIXES = {".md", ".py", ".yaml", ".yml", ".ipynb", ".toml", ".txt", ".sh", ""}


def _files():
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from (p for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES)


def test_no_development_history_in_user_facing_text():
    hits = []
    for path in _files():
        if "__pycache__" in path.parts:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if HISTORY.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:120]}")
    assert not hits, "development history in user-facing text:\n" + "\n".join(hits)


def test_the_history_check_catches_history():
    assert HISTORY.search("as measured in Session 5")
    assert HISTORY.search("see issue 4's comparison")
    assert not HISTORY.search("a Ray session starts; issues are reported")
