"""Run a railsweep sweep on Ray Tune, stream every cell to MLflow, and print a paper table.

    python sweeps/tables.py --table 3                       # local Ray, MLflow at $MLFLOW_TRACKING_URI
    ray job submit --working-dir . -- python sweeps/tables.py --table 3 --preset mini

``sweeps/table1.py`` … ``table4.py`` are this script with ``--table`` fixed. The job
itself (options, spec overrides, Ray, the sweep) is :mod:`railsweep.sweep.job`, which
``railsweep sweep`` submits as ``python -m railsweep.sweep.job``; see its ``--help``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# With `ray job submit --working-dir .` the job's cwd is the uploaded checkout; make it importable either way.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.sweep.job import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
