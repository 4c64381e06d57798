"""Table 4 of the paper (method.md §6): `python sweeps/table4.py [--preset mini|smoke|paper]`.

The sweep job of :mod:`railsweep.sweep.job` with `--table 4`; works under
`ray job submit --working-dir . -- python sweeps/table4.py`.
"""

import sys
from pathlib import Path

# With `ray job submit --working-dir .` the job's cwd is the uploaded checkout; make it importable either way.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.sweep.job import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(table="4"))
