"""What ``railsweep dynamics`` does once its options, world and families are checked. Loads torch, pandas and
pyarrow (the command imports it when it runs)."""

from __future__ import annotations

import sys
import time
from typing import Any

from railsweep import provenance
from railsweep.dynamics.analyse import analyse
from railsweep.dynamics.collect import collect_family
from railsweep.dynamics.output import family_summary, write_run
from railsweep.dynamics.settings import DynamicsSettings


def collect_analyse_write(out: str, world: Any, families: list[str], s: DynamicsSettings) -> None:
    """Per family: sample and teacher-force (:func:`~railsweep.dynamics.collect.collect_family`), then
    analyse; then the tables, figures and summary written under ``out`` (their paths printed)."""

    def log(msg: str) -> None:
        print(f"[dynamics] {msg}", file=sys.stderr, flush=True)

    tables = {}
    summary = {"settings": vars(s) | {"temperatures": list(s.temperatures)}, "world": str(world.root), "families": {}}
    for fam in families:
        t0 = time.time()
        data = collect_family(world, fam, s, log)
        tables[fam] = analyse(data, s)
        summary["families"][fam] = family_summary(tables[fam]) | {
            "items": len(data.items),
            "leaked": int(data.leaked.sum()),
            "seconds": {
                **{k: round(v, 1) for k, v in data.seconds.items()},
                "total": round(time.time() - t0, 1),
            },
        }
    summary["provenance"] = provenance.collect([])
    for path in write_run(out, tables, summary):
        print(path)
