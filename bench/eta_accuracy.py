"""How true the sweep's ETA was: each progress line's prediction of the time left against the time it took.

Reads a sweep's printed output (``make demo > demo.log``, a ``ray job logs`` dump): every progress line
``[sweep] cells D/T done ... | N samples, R samples/s, Ss, ETA XmYs`` gives, at S seconds into the trials, a
predicted remainder; the trials end at the first line with every cell done (D = T). For each line before it:
the relative error (predicted − real remainder) / real remainder. Summary: the largest error from the halfway
point of the trials on (the target: within ±25 %; lines with less than ``--min-left`` seconds to go are left out
of it, where whole seconds decide the ratio), and over all lines.

    make demo > demo.log; python bench/eta_accuracy.py demo.log

JSON on stdout. Exit 2 with one line when the file is missing or holds no progress line with an ETA.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

LINE = re.compile(r"\[sweep\] cells (\d+)/(\d+) done .*?\| (\d+) samples, [\d.]+ samples/s, (\d+)s(?:, ETA (\S+))?")
PART = re.compile(r"(\d+)([hms])")


def seconds(text: str) -> int:
    """``3m05s`` → 185 (the format of :func:`railsweep.sweep.run.progress.duration`)."""
    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in PART.findall(text))


def progress(text: str) -> list[dict]:
    rows = []
    for m in LINE.finditer(text):
        done, total, samples, elapsed, eta = m.groups()
        rows.append({"done": int(done), "total": int(total), "samples": int(samples), "elapsed_s": int(elapsed),
                     "eta_s": seconds(eta) if eta else None})  # fmt: skip
    return rows


def accuracy(rows: list[dict], min_left_s: int = 30) -> dict:
    end = next((r["elapsed_s"] for r in rows if r["done"] == r["total"]), None)
    if end is None:
        raise ValueError("no progress line with every cell done: the sweep did not finish in this log")
    scored = []
    for r in rows:
        left = end - r["elapsed_s"]
        if r["eta_s"] is None or left <= 0:
            continue
        scored.append({**r, "real_left_s": left, "error": (r["eta_s"] - left) / left})
    late = [s for s in scored if s["elapsed_s"] >= end / 2 and s["real_left_s"] >= min_left_s]

    def worst(xs: list[dict]) -> float | None:
        return max((abs(s["error"]) for s in xs), default=None)

    return {"trials_s": end, "lines": scored, "worst_error_from_halfway": worst(late), "worst_error": worst(scored),
            "within_25_percent_from_halfway": None if not late else worst(late) <= 0.25}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log", help="a sweep's printed output (make demo > demo.log)")
    p.add_argument("--min-left", type=int, default=30, help="seconds to go below which a line is not judged (30)")
    args = p.parse_args(argv)
    path = Path(args.log)
    if not path.is_file():
        print(f"eta_accuracy: error: {args.log!r} is not a file", file=sys.stderr)
        return 2
    rows = progress(path.read_text(encoding="utf-8", errors="replace"))
    try:
        if not any(r["eta_s"] is not None for r in rows):
            raise ValueError("no progress line with an ETA")
        out = accuracy(rows, args.min_left)
    except ValueError as e:
        print(f"eta_accuracy: error: {args.log!r}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
