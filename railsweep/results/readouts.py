"""Per-question results tables checked and turned into the metrics' :class:`Readouts`: the one place that
reads a cell's table for scoring (rows joined on ``question_index``, ``solve_prob`` agreeing with ``c / m``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from railsweep.errors import DataError
from railsweep.metrics import Readouts

REQUIRED_COLUMNS: tuple[str, ...] = ("question_index", "c", "m", "solve_prob", "r01")


def check_frame(df: pd.DataFrame, role: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"{role} results must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{role} results lack column(s) {missing}; have {list(df.columns)}")
    if df.empty:
        raise DataError(f"{role} results have no rows")
    dup = df["question_index"][df["question_index"].duplicated()]
    if len(dup):
        raise DataError(f"{role} results repeat question_index {sorted(dup.unique().tolist())[:10]}")
    for col in REQUIRED_COLUMNS:
        na = df["question_index"][df[col].isna()] if col != "question_index" else df.index[df[col].isna()]
        if len(na):
            raise DataError(f"{role} results: column {col!r} is missing values (at question_index "
                            f"{list(na)[:10]})")  # fmt: skip
    out = df.sort_values("question_index", kind="stable").reset_index(drop=True)
    c, m = out["c"].to_numpy(dtype=float), out["m"].to_numpy(dtype=float)
    expected = np.divide(c, m, out=np.zeros(len(out)), where=m > 0)
    off = np.flatnonzero(~np.isclose(out["solve_prob"].to_numpy(dtype=float), expected, atol=1e-9))
    if off.size:
        q = int(out["question_index"].iloc[off[0]])
        raise DataError(f"{role} results: solve_prob disagrees with c/m at {off.size} question(s), first "
                        f"question_index={q} (solve_prob={out['solve_prob'].iloc[off[0]]}, c={c[off[0]]}, "
                        f"m={m[off[0]]})")  # fmt: skip
    return out


def aligned_readouts(**frames: pd.DataFrame) -> dict[str, Readouts]:
    """Check and sort every frame, require identical question sets, build Readouts by position."""
    checked = {role: check_frame(df, role) for role, df in frames.items()}
    roles = list(checked)
    ref_role = roles[0]
    ref = set(checked[ref_role]["question_index"].tolist())
    for role in roles[1:]:
        have = set(checked[role]["question_index"].tolist())
        if have != ref:
            only_ref, only_here = sorted(ref - have), sorted(have - ref)
            raise DataError(f"{ref_role} and {role} results cover different questions: missing from {role}: "
                            f"{only_ref[:10]}{' ...' if len(only_ref) > 10 else ''} ({len(only_ref)}); "
                            f"missing from {ref_role}: {only_here[:10]}"
                            f"{' ...' if len(only_here) > 10 else ''} ({len(only_here)})")
    return {role: Readouts.of(df["c"], df["m"], df["r01"], role) for role, df in checked.items()}
