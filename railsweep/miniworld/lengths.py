"""Gold-answer token lengths of the miniature worlds' test questions, shipped so a sweep is priced unbuilt.

A response that reproduces its question's gold solution and stops generates ``" " + solution + "\\n\\nQ:"``
(the space after the prompt's ``A:``; the engine keeps the stop string's tokens), so that is the expected
length of a response, capped at ``max_new_tokens``. The tokenizer that counts it exists only once the world's
data is built, so ``gold_lengths.json`` (next to this module) holds the lengths per question, keyed by the
world's :meth:`~railsweep.miniworld.presets.WorldConfig.data_digest` (data and tokenizer depend on nothing
else): ``railsweep sweep --dry-run`` reads them without building anything. ``bench/gold_lengths.py``
measures a world and writes its entry.
"""

from __future__ import annotations

import json
from pathlib import Path

from railsweep.errors import DataError
from railsweep.miniworld.presets import preset_config
from railsweep.tasks.grading import STOP
from railsweep.tasks.text import read_utf8

LENGTHS_FILE = Path(__file__).resolve().parent / "gold_lengths.json"


def gold_token_lengths(test_jsonl: str | Path, tokenizer_file: str | Path) -> list[int]:
    """Per test question, the tokens of ``" " + solution + STOP[0]`` under ``tokenizer_file`` (tokenizer.json)."""
    from tokenizers import Tokenizer  # optional heavy dependency of the measurement only

    tok = Tokenizer.from_file(str(tokenizer_file))
    out = []
    for lineno, line in enumerate(read_utf8(Path(test_jsonl)).splitlines(), 1):
        if not line.strip():
            continue
        try:
            answer = json.loads(line)["answer"]
        except (ValueError, KeyError, TypeError) as e:
            raise DataError(f"{test_jsonl}:{lineno}: not a GSM8K row with an 'answer' ({e})") from e
        out.append(len(tok.encode(" " + answer + STOP[0], add_special_tokens=False).ids))
    return out


def shipped_lengths(world_preset: str, path: Path = LENGTHS_FILE) -> list[int] | None:
    """The shipped per-question gold lengths of ``world_preset``'s world, or None when none were measured
    for its current data digest (a changed world config is a different world)."""
    table = json.loads(read_utf8(path))
    entry = table["worlds"].get(preset_config(world_preset).data_digest())
    return None if entry is None else [int(n) for n in entry["lengths"]]


def record_lengths(world_preset: str, lengths: list[int], path: Path = LENGTHS_FILE) -> None:
    """Write (or replace) ``world_preset``'s entry, keyed by its data digest."""
    table = json.loads(read_utf8(path)) if path.is_file() else {"worlds": {}}
    table["about"] = (
        "Per test question: tokens of ' ' + gold solution + '\\n\\nQ:' under the world's tokenizer, "
        "keyed by WorldConfig.data_digest(); measured by bench/gold_lengths.py"
    )
    table["worlds"][preset_config(world_preset).data_digest()] = {"preset": world_preset, "lengths": lengths}
    path.write_text(json.dumps(table, indent=None, sort_keys=True) + "\n", encoding="utf-8")
