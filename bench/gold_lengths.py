"""Gold-answer token lengths of a miniature world, the expected response lengths `--dry-run` prices with.

    python bench/gold_lengths.py --preset mini [--world-dir DIR | --cache-dir DIR] [--write]

Steps:
  1. find the world's data and tokenizer: ``--world-dir`` (a world directory with ``data/test.jsonl`` and
     ``tokenizer/tokenizer.json``, read only; a world still being built has both), else the cached world of
     ``--preset`` under ``--cache-dir`` (built when missing);
  2. count the tokens of ``" " + gold solution + "\\n\\nQ:"`` per test question
     (:func:`railsweep.miniworld.lengths.gold_token_lengths`);
  3. print JSON (mean, min, max, count); with ``--write``, record the lengths in
     ``railsweep/miniworld/gold_lengths.json`` under the preset's data digest.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.miniworld import PRESETS, build_world, preset_config  # noqa: E402
from railsweep.miniworld.lengths import gold_token_lengths, record_lengths  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", choices=sorted(PRESETS))
    p.add_argument("--world-dir", type=Path, help="a world directory to read (its data and tokenizer)")
    p.add_argument(
        "--cache-dir", help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)"
    )
    p.add_argument(
        "--write", action="store_true", help="record the lengths in railsweep/miniworld/gold_lengths.json"
    )
    args = p.parse_args(argv)
    root = args.world_dir or build_world(args.preset, cache_dir=args.cache_dir).root
    digest = preset_config(args.preset).digest()
    if args.world_dir and not root.name.endswith(digest):
        p.error(f"--world-dir {root} is not the {args.preset!r} world (its directory ends in -{digest})")
    lengths = gold_token_lengths(root / "data" / "test.jsonl", root / "tokenizer" / "tokenizer.json")
    if args.write:
        record_lengths(args.preset, lengths)
    print(json.dumps({"preset": args.preset, "world": str(root), "questions": len(lengths),
                      "mean": round(sum(lengths) / len(lengths), 2), "min": min(lengths), "max": max(lengths),
                      "written": args.write}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
