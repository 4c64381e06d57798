"""Gold-answer token lengths of the miniature worlds' test questions, shipped so a sweep is priced unbuilt.

A response that reproduces its gold solution in the 8-shot answer format and stops generates
``" " + to_cot(solution) + "\\n\\nQ:"`` (the engine keeps the stop string's tokens), capped at
``max_new_tokens``. A model that rambles past its answer (the under-trained smoke world's) generates more, so
where a sweep on the world was measured the entry also holds each question's mean generated tokens per
response (unread questions: gold length times the measured ratio). The tokenizer exists only once the world is
built, so ``gold_lengths.json`` holds them keyed by ``WorldConfig.data_digest()`` for ``railsweep sweep
--dry-run``; ``bench/gold_lengths.py [--responses DIR]`` measures a world and writes its entry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from railsweep.errors import DataError
from railsweep.miniworld.presets import preset_config
from railsweep.tasks.answers.gsm8k_rules import STOP
from railsweep.tasks.answers.gsm8k_solution import to_cot
from railsweep.tasks.data.text import read_utf8

LENGTHS_FILE = Path(__file__).resolve().parent / "gold_lengths.json"


def gold_token_lengths(test_jsonl: str | Path, tokenizer_file: str | Path) -> list[int]:
    """Per test question, the tokens of ``" " + to_cot(solution) + STOP[0]`` under ``tokenizer_file`` (tokenizer.json)."""
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
        out.append(len(tok.encode(" " + to_cot(answer) + STOP[0], add_special_tokens=False).ids))
    return out


def _entry(world_preset: str) -> dict | None:
    return json.loads(read_utf8(LENGTHS_FILE))["worlds"].get(preset_config(world_preset).data_digest())


def shipped_lengths(world_preset: str) -> list[int] | None:
    """The shipped per-question gold lengths of ``world_preset``'s world, or None when none were measured
    for its current data digest (a changed world config is a different world)."""
    entry = _entry(world_preset)
    return None if entry is None else [int(n) for n in entry["lengths"]]


def shipped_response_lengths(world_preset: str) -> list[int] | None:
    """Per test question, the mean tokens a measured sweep on ``world_preset``'s world generated per response
    (rounded), or None when none was measured for its current data digest."""
    entry = _entry(world_preset)
    return None if entry is None or "responses" not in entry else [int(n) for n in entry["responses"]]


@dataclass(frozen=True)
class ResponseLengths:
    lengths: list[int]  # per question: measured, or gold x ratio where no cell read it
    read: int  # questions some cell read
    mean_read: float  # mean generated tokens per response over those questions
    ratio: float  # their generated tokens over their gold tokens


def response_lengths(results_dir: str | Path, gold: list[int]) -> ResponseLengths:
    """Per question, the mean generated tokens per response over every ``*.responses.parquet`` under
    ``results_dir`` (a sweep's or ``railsweep eval``'s cells), rounded; a question no cell read gets its
    ``gold`` length scaled by the measured questions' ratio of generated to gold tokens."""
    import pandas as pd  # only the measurement reads Parquet; the dry run that imports this module stays light

    files = sorted(Path(results_dir).rglob("*.responses.parquet"))
    if not files:
        raise DataError(f"no *.responses.parquet under {results_dir}")
    rows = pd.concat([pd.read_parquet(f, columns=["question_index", "token_ids"]) for f in files])
    means = rows["token_ids"].map(len).groupby(rows["question_index"]).mean().to_dict()
    outside = sorted(i for i in means if not 0 <= i < len(gold))
    if outside:
        raise DataError(f"{results_dir}: question indices {outside[:10]} outside this world's 0..{len(gold) - 1}")
    ratio = sum(means.values()) / sum(gold[i] for i in means)
    lengths = [int(round(means[i] if i in means else gold[i] * ratio)) for i in range(len(gold))]
    return ResponseLengths(lengths, len(means), sum(means.values()) / len(means), ratio)


def record_lengths(world_preset: str, lengths: list[int], responses: list[int] | None = None) -> None:
    """Write (or replace) ``world_preset``'s entry, keyed by its data digest: the gold lengths and, when given,
    the measured response lengths (else the entry's earlier ones are kept)."""
    table = json.loads(read_utf8(LENGTHS_FILE)) if LENGTHS_FILE.is_file() else {"worlds": {}}
    table["about"] = (
        "Per test question: tokens of ' ' + gold solution in the 8-shot answer format (to_cot) + '\\n\\nQ:' "
        "under the world's tokenizer; responses: mean generated tokens per response of a measured sweep, "
        "keyed by WorldConfig.data_digest(); measured by bench/gold_lengths.py"
    )
    key = preset_config(world_preset).data_digest()
    entry = {"preset": world_preset, "lengths": lengths}
    kept = table["worlds"].get(key, {}).get("responses")
    if responses is not None or kept is not None:
        entry["responses"] = responses if responses is not None else kept
    table["worlds"][key] = entry
    LENGTHS_FILE.write_text(json.dumps(table, indent=None, sort_keys=True) + "\n", encoding="utf-8")
