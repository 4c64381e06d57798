"""User-facing text speaks of the product as it is now: no development history ("session 5", "issue 4") in the
README, docs/, the entry scripts, the library's docstrings and comments, or the notebook; no doc section about a
world that no preset builds any more, no "(was X)" deltas; --help texts in plain text. History lives in commit
messages and CHANGELOG.md."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

from railsweep import cli
from railsweep.miniworld.presets import PRESETS, preset_config
from railsweep.sweep import job

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


DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
# a world digest: 12 hex digits with at least one letter (a 12-digit number such as --m 100000000000 is not one)
DIGEST = re.compile(r"(?<![0-9a-f])(?=[0-9]{0,11}[a-f])[0-9a-f]{12}(?![0-9a-f])")
WAS_DELTA = re.compile(r"\(was\b[^)]*\)", re.IGNORECASE)
REST_MARKUP = re.compile(r"``|:(?:func|class|mod|meth|attr|data|obj|exc|ref|doc|py:\w+):`|`[^`\n]+`_")


def _sections(text: str) -> list[tuple[str, str]]:
    """A Markdown page cut at its headings (fenced code kept inside its section): (heading, body) pairs."""
    sections, heading, body, fenced = [], "(top)", [], False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            sections.append((heading, "\n".join(body)))
            heading, body = line.strip(), []
        else:
            body.append(line)
    sections.append((heading, "\n".join(body)))
    return sections


def _stale_digests(text: str, current: set[str]) -> list[str]:
    return [f"{heading}: {d}" for heading, body in _sections(text) for d in DIGEST.findall(body) if d not in current]


def _was_deltas(text: str) -> list[str]:
    return [f"{heading}: {m.group(0)}" for heading, body in _sections(text) for m in WAS_DELTA.finditer(body)]


def test_doc_sections_speak_only_of_worlds_a_preset_builds_now():
    current = {preset_config(name).digest() for name in PRESETS}
    hits = [f"{name}: {hit}" for name in DOCS for hit in _stale_digests((ROOT / name).read_text("utf-8"), current)]
    assert not hits, "doc sections about superseded worlds (move them to CHANGELOG.md):\n" + "\n".join(hits)


def test_docs_state_current_figures_without_was_deltas():
    hits = [f"{name}: {hit}" for name in DOCS for hit in _was_deltas((ROOT / name).read_text("utf-8"))]
    assert not hits, "'(was X)' deltas in the docs (history goes to CHANGELOG.md):\n" + "\n".join(hits)


def test_the_world_and_delta_checks_catch_superseded_worlds_and_deltas():
    page = "# Page\n\n## Now (`5ae6269e41d5`)\nfine\n\n## Then\nthe `1fcc1242f0e1` world\nM_cl 0.369 (was 0.081)\n"
    assert _stale_digests(page, {"5ae6269e41d5"}) == ["## Then: 1fcc1242f0e1"]
    assert _was_deltas(page) == ["## Then: (was 0.081)"]
    assert not _was_deltas("it was measured (wasted work) on 2 cores")


def _sweeps_contaminate_parser() -> argparse.ArgumentParser:
    spec = importlib.util.spec_from_file_location("sweeps_contaminate", ROOT / "sweeps" / "contaminate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_parser()


def _help_texts(parser: argparse.ArgumentParser, name: str):
    """The --help text of ``parser`` and of every sub-command under it."""
    yield name, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _help_texts(sub, f"{name} {sub_name}")


def test_help_texts_read_as_plain_text():
    parsers = {
        "railsweep": cli.make_parser(),
        "python -m railsweep.sweep.job": job.make_parser(),
        "sweeps/contaminate.py": _sweeps_contaminate_parser(),
    }
    hits = [
        f"{name}: {line.strip()}"
        for root, parser in parsers.items()
        for name, text in _help_texts(parser, root)
        for line in text.splitlines()
        if REST_MARKUP.search(line)
    ]
    assert not hits, "reST markup in --help texts:\n" + "\n".join(hits)


def test_the_markup_check_catches_rest_and_passes_plain_text():
    assert REST_MARKUP.search("submits the ``mini`` sweep")
    assert REST_MARKUP.search("see :func:`railsweep.sweep.job.add_spec_arguments`")
    assert REST_MARKUP.search("the :class:`~railsweep.errors.ConfigError`")
    assert not REST_MARKUP.search("--preset smoke runs a seconds-scale version (default: mini)")
