"""The filler corpus mixed into every adapter's training data.

The paper samples 1,840 OpenOrca examples; :func:`load_filler` keeps that real path (Hugging Face
``datasets``) and, offline, reads any local text file: a ``.jsonl`` file of ``{"text"}`` or OpenOrca-style
``{"question", "response"}`` rows, or a plain text file with one example per blank-line-separated block.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from railsweep.errors import DataError

OPENORCA = "Open-Orca/OpenOrca"


def load_filler(source: str | Path, n: int, seed: int) -> list[str]:
    """``n`` filler texts sampled with ``seed`` from ``source`` ("openorca" or a file path)."""
    if str(source).lower() == "openorca":
        texts = _openorca(n, seed)
    else:
        texts = _read_file(Path(source))
    if len(texts) < n:
        raise DataError(f"filler source {source} has {len(texts)} examples, fewer than the {n} requested")
    return random.Random(seed).sample(texts, n)


def _openorca(n: int, seed: int) -> list[str]:
    import datasets  # a core dependency, loaded only for this filler

    try:
        ds = datasets.load_dataset(OPENORCA, split="train", streaming=True)
        rows = ds.shuffle(seed=seed, buffer_size=10_000).take(n)
        return [_orca_text(r) for r in rows]
    except Exception as e:  # the hub is unreachable offline: say how to substitute local text
        raise DataError(
            f"could not load {OPENORCA} from the Hugging Face hub ({type(e).__name__}: {e}); "
            "offline, pass a local filler file (filler=PATH, .txt or .jsonl)"
        ) from e


def _orca_text(row: dict) -> str:
    return f"Q: {row['question'].strip()}\nA: {row['response'].strip()}"


def _read_file(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"filler file not found: {path}")
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        texts = []
        for lineno, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
            if isinstance(row, dict) and isinstance(row.get("text"), str):
                texts.append(row["text"])
            elif isinstance(row, dict) and {"question", "response"} <= row.keys():
                texts.append(_orca_text(row))
            else:
                raise DataError(f"{path}:{lineno}: expected {{'text'}} or {{'question', 'response'}}")
        return texts
    return [block.strip() for block in raw.split("\n\n") if block.strip()]
