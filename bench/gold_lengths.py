"""Gold-answer token lengths of a miniature world, the expected response lengths `--dry-run` prices with.

    python bench/gold_lengths.py --preset mini [--world-dir DIR | --cache-dir DIR] [--responses RESULTS] [--write]

Steps:
  1. find the world's data and tokenizer: ``--world-dir`` (a world directory with ``data/test.jsonl`` and
     ``tokenizer/tokenizer.json``, read only; a world still being built has both), else the cached world of
     ``--preset`` under ``--cache-dir`` (built when missing);
  2. count the tokens of ``" " + gold solution in the 8-shot answer format + "\\n\\nQ:"`` per test question
     (:func:`railsweep.miniworld.lengths.gold_token_lengths`);
  3. with ``--responses RESULTS`` (a sweep's run directory, or any folder of cells' ``*.responses.parquet``
     on this world): each question's mean generated tokens per response
     (:func:`railsweep.miniworld.lengths.response_lengths`), which the dry run then prices with;
  4. print JSON (mean, min, max, count; the questions the responses read, their mean generated tokens per
     response and its ratio to their gold tokens); with ``--write``,
     record the lengths in ``railsweep/miniworld/gold_lengths.json`` under the preset's data digest.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.miniworld import PRESETS, build_world, preset_config  # noqa: E402
from railsweep.miniworld.lengths import gold_token_lengths, record_lengths, response_lengths  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", choices=sorted(PRESETS))
    p.add_argument("--world-dir", type=Path, help="a world directory to read (its data and tokenizer)")
    p.add_argument(
        "--cache-dir", help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)"
    )
    p.add_argument("--responses", type=Path, help="a folder of this world's cells (*.responses.parquet) to measure")
    p.add_argument(
        "--write", action="store_true", help="record the lengths in railsweep/miniworld/gold_lengths.json"
    )
    args = p.parse_args(argv)
    if args.responses is not None and not any(args.responses.rglob("*.responses.parquet")):
        p.error(f"--responses {args.responses}: no *.responses.parquet there")  # before any world is built
    root = args.world_dir or build_world(args.preset, cache_dir=args.cache_dir).root
    digest = preset_config(args.preset).digest()
    if args.world_dir and not root.name.endswith(digest):
        p.error(f"--world-dir {root} is not the {args.preset!r} world (its directory ends in -{digest})")
    lengths = gold_token_lengths(root / "data" / "test.jsonl", root / "tokenizer" / "tokenizer.json")
    responses = response_lengths(args.responses, lengths) if args.responses else None
    if args.write:
        record_lengths(args.preset, lengths, responses=responses.lengths if responses else None)
    out = {"preset": args.preset, "world": str(root), "questions": len(lengths),
           "mean": round(sum(lengths) / len(lengths), 2), "min": min(lengths), "max": max(lengths)}  # fmt: skip
    if responses is not None:
        out.update(responses=str(args.responses), responses_questions_read=responses.read,
                   responses_mean_read=round(responses.mean_read, 2),
                   responses_over_gold=round(responses.ratio, 3))  # fmt: skip
    print(json.dumps({**out, "written": args.write}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
