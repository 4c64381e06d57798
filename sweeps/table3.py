"""Table 3 of the paper (method.md §6): `python sweeps/table3.py [--preset mini|smoke|paper]`.

Same options as `sweeps/tables.py` with `--table 3`; works under
`ray job submit --working-dir . -- python sweeps/table3.py`.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tables import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(table="3"))
