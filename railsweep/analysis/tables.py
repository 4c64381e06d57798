"""The paper's Tables 1–4 (method.md §6) from scored cells (writers: :mod:`railsweep.analysis.table_writers`).

A cell is a dict ``{"family", "domain", "strategy", "score"}`` (the strategy's display label and a
:func:`railsweep.analysis.scoring.score_pair` dict). Every table ends with :data:`FLOOR_ROW`, each column's
binomial noise floor: what a perfect restoration of M_cl reads at the cell's m (:mod:`railsweep.metrics.floor`);
a figure at or below it cannot be told from one. Reference rows (All-Zero) are never marked best.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from railsweep.analysis.uncertainty import sappg_note
from railsweep.errors import ConfigError
from railsweep.strategy_registry import in_table, with_role

LABELS: dict[str, str] = {"g_ap": "G-AP", "g_app": "G-APP", "a_ppg": "A-PPG", "delta_plus": "Δ+",
                          "delta_minus": "Δ−", "sa_ppg": "SA-PPG", "s_delta_plus": "S-Δ+",
                          "s_delta_minus": "S-Δ−"}  # fmt: skip
FLOOR_ROW = "noise floor (M_cl vs itself)"


def reference_rows() -> frozenset[str]:
    """Rows read as references, never marked best: the noise floor and the strategies registered with the role
    ``reference`` (by label and by name)."""
    return frozenset({FLOOR_ROW, *(x for r in with_role("reference") for x in (r.display, r.name))})

STATS = ("value", "ci_low", "ci_high")


@dataclass(frozen=True)
class Table:
    """formatted: str (rows × cols); numeric: float (rows × (col, stat)); best: bool (rows × cols);
    notes: lines shown under the table (Markdown, HTML)."""

    title: str
    formatted: pd.DataFrame
    numeric: pd.DataFrame
    best: pd.DataFrame
    notes: tuple[str, ...] = ()


def format_estimate(value: float, lo: float, hi: float, digits: int = 4, ci_digits: int = 2) -> str:
    """``0.1914 [0.17, 0.21]``; an estimate without a CI prints its value only, a missing one "—"."""
    if value is None or not np.isfinite(value):
        return "—"
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{lo:.{ci_digits}f}, {hi:.{ci_digits}f}]"


def _check_cells(cells: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    cells = list(cells)
    seen: set[tuple[str, str, str]] = set()
    for i, cell in enumerate(cells):
        missing = [k for k in ("family", "domain", "strategy", "score") if k not in cell]
        if missing:
            raise ConfigError(f"cell {i} lacks key(s) {missing}; has {sorted(cell)}")
        key = (str(cell["family"]), str(cell["domain"]), str(cell["strategy"]))
        if key in seen:
            raise ConfigError(f"two cells for family={key[0]!r}, domain={key[1]!r}, strategy={key[2]!r}")
        seen.add(key)
    return cells


def _one_setting(cells: list[Mapping[str, Any]], family: str | None,
                 domain: str | None) -> list[Mapping[str, Any]]:  # fmt: skip
    settings = list(dict.fromkeys((str(c["family"]), str(c["domain"])) for c in cells))
    chosen = [s for s in settings if family in (None, s[0]) and domain in (None, s[1])]
    if len(chosen) != 1:
        what = "no" if not chosen else "several"
        raise ConfigError(f"{what} settings match family={family!r}, domain={domain!r}; available: "
                          + (", ".join(f"{f} × {d}" for f, d in settings) or "none"))  # fmt: skip
    return [c for c in cells if (str(c["family"]), str(c["domain"])) == chosen[0]]


def _estimate(score: Mapping[str, Any], metric: str) -> tuple[float, float, float]:
    est = score.get(metric)
    if est is None:
        return (np.nan, np.nan, np.nan)
    if isinstance(est, Mapping):
        return tuple(float(est.get(s, np.nan)) for s in STATS)  # type: ignore[return-value]
    return (float(est), np.nan, np.nan)


def _floor(score: Mapping[str, Any], metric: str) -> tuple[float, float, float]:
    est = score.get(metric)
    floor = est.get("floor", np.nan) if isinstance(est, Mapping) else np.nan
    return (float(floor), np.nan, np.nan)


def _with_floor_row(values: dict, rows: list[str], floors: dict[str, tuple[float, float, float]]) -> list[str]:
    """Add each column's floor as the last row (where any is known)."""
    if not any(np.isfinite(f[0]) for f in floors.values()):
        return rows
    values.update({(FLOOR_ROW, col): f for col, f in floors.items()})
    return [*rows, FLOOR_ROW]


def _row_order(labels: Sequence[str], rows: Sequence[str] | None,
               exclude: frozenset[str] = frozenset()) -> list[str]:  # fmt: skip
    if rows is None:
        return [r for r in dict.fromkeys(labels) if r not in exclude]
    unknown = [r for r in rows if r not in labels]
    if unknown:
        raise ConfigError(f"rows {unknown} have no cell; available strategies: {list(dict.fromkeys(labels))}")
    return list(rows)


def _assemble(title: str, values: dict[tuple[str, str], tuple[float, float, float]], rows: list[str], cols: list[str],
              best_cols: Iterable[str], digits: int, ci_digits: int) -> Table:  # fmt: skip
    numeric = pd.DataFrame([[values.get((r, c), (np.nan,) * 3)[k] for c in cols for k in range(3)] for r in rows],
                           index=pd.Index(rows, name="strategy"),
                           columns=pd.MultiIndex.from_tuples([(c, s) for c in cols for s in STATS]),
                           dtype=float)  # fmt: skip
    formatted = pd.DataFrame(
        [[format_estimate(*values.get((r, c), (np.nan,) * 3), digits, ci_digits) for c in cols] for r in rows],
        index=pd.Index(rows, name="strategy"), columns=cols,
    )  # fmt: skip
    best = pd.DataFrame(False, index=formatted.index, columns=cols)
    references = reference_rows()
    competing = [r for r in rows if r not in references]
    for c in best_cols:
        col = numeric.loc[competing, (c, "value")] if competing else pd.Series(dtype=float)
        if col.notna().any():
            best.loc[col.index[col == col.min()], c] = True
    return Table(title=title, formatted=formatted, numeric=numeric, best=best)


def metric_table(cells: Iterable[Mapping[str, Any]], metrics: Sequence[str], *, family: str | None = None,
                 domain: str | None = None, rows: Sequence[str] | None = None,
                 best_metrics: Sequence[str] | None = None, exclude: frozenset[str] = frozenset(), title: str = "",
                 digits: int = 4, ci_digits: int = 2) -> Table:  # fmt: skip
    """Rows = strategies of ONE setting, columns = ``metrics`` (their display labels)."""
    unknown = [m for m in metrics if m not in LABELS]
    if unknown:
        raise ConfigError(f"unknown metric(s) {unknown}; known: {list(LABELS)}")
    setting = _one_setting(_check_cells(cells), family, domain)
    labels = [str(c["strategy"]) for c in setting]
    order = _row_order(labels, rows, exclude)
    by_label = {str(c["strategy"]): c["score"] for c in setting}
    best = [LABELS[m] for m in (metrics if best_metrics is None else best_metrics)]
    shown = list(metrics)
    values = {(r, LABELS[m]): _estimate(by_label[r], m) for r in order for m in shown}
    rows = _with_floor_row(values, order, {LABELS[m]: _floor(setting[0]["score"], m) for m in shown})
    f, d = str(setting[0]["family"]), str(setting[0]["domain"])
    table = _assemble(title or f"{f} × {d}", values, rows, [LABELS[m] for m in shown], best, digits,
                      ci_digits)  # fmt: skip
    if "sa_ppg" not in metrics:
        return table
    return dataclasses.replace(table, notes=tuple(f"{r}: {sappg_note(by_label[r])}" for r in order))


def _setting_table(metrics: list[str], title: str, doc: str, best: list[str] | None = None, refs=True):
    """A paper table of one setting: :func:`metric_table` over ``metrics`` (``refs``: show reference rows)."""

    def build(cells: Iterable[Mapping[str, Any]], *, family: str | None = None, domain: str | None = None,
              rows: Sequence[str] | None = None, **kw: Any) -> Table:  # fmt: skip
        if not refs:
            kw["exclude"] = reference_rows()
        return metric_table(cells, metrics, family=family, domain=domain, rows=rows, best_metrics=best,
                            title=kw.pop("title", title), **kw)  # fmt: skip

    build.__doc__ = doc
    return build


table1 = _setting_table(
    ["g_ap", "sa_ppg"], "Table 1: G-AP and SA-PPG of the same responses",
    "Table 1: G-AP vs SA-PPG for one setting (paper: Llama-2 × GSM8K); All-Zero left out by default.", refs=False,
)  # fmt: skip
table2 = _setting_table(
    ["delta_plus", "delta_minus", "a_ppg", "g_app", "sa_ppg"], "Table 2: components of the per-question gap",
    "Table 2: Δ+, Δ−, A-PPG, G-APP, SA-PPG (+ All-Zero); best marked on the aggregates, not the components.",
    best=["a_ppg", "g_app", "sa_ppg"],
)  # fmt: skip
table4 = _setting_table(
    ["s_delta_plus", "s_delta_minus", "sa_ppg"], "Table 4: RailCap ablation (stratified components)",
    "Table 4: RailCap n sweep, ban, All-Zero: S-Δ+, S-Δ−, SA-PPG; best marked on SA-PPG only.", best=["sa_ppg"],
)  # fmt: skip


def table3(cells: Iterable[Mapping[str, Any]], *, metric: str = "sa_ppg", rows: Sequence[str] | None = None,
           title: str = "Table 3: SA-PPG across settings", digits: int = 4, ci_digits: int = 2) -> Table:  # fmt: skip
    """Table 3: one metric, rows = strategies, columns = settings "{domain} × {family}" (domain-major)."""
    if metric not in LABELS:
        raise ConfigError(f"unknown metric {metric!r}; known: {list(LABELS)}")
    cells = _check_cells(cells)
    domains = list(dict.fromkeys(str(c["domain"]) for c in cells))
    families = list(dict.fromkeys(str(c["family"]) for c in cells))
    present = {(str(c["domain"]), str(c["family"])) for c in cells}
    cols = [f"{d} × {f}" for d in domains for f in families if (d, f) in present]
    order = _row_order([str(c["strategy"]) for c in cells], rows)
    shown = [c for c in cells if str(c["strategy"]) in order]
    values = {(str(c["strategy"]), f"{c['domain']} × {c['family']}"): _estimate(c["score"], metric)
              for c in shown}  # fmt: skip
    floors = {f"{c['domain']} × {c['family']}": _floor(c["score"], metric) for c in shown}
    rows = _with_floor_row(values, order, floors)
    table = _assemble(title, values, rows, cols, cols, digits, ci_digits)
    if metric != "sa_ppg":
        return table
    shown.sort(key=lambda c: (cols.index(f"{c['domain']} × {c['family']}"), order.index(str(c["strategy"]))))
    notes = tuple(f"{c['strategy']} ({c['domain']} × {c['family']}): {sappg_note(c['score'])}" for c in shown)
    return dataclasses.replace(table, notes=notes)


def table_cells(scored: Sequence[Mapping[str, Any]],
                primary: Sequence[str]) -> dict[str, list[Mapping[str, Any]]]:  # fmt: skip
    """The scored cells each of Tables 1–4 (and the figures) shows: the one place that decides which rows go
    where. Tables 1, 2 and 4 use the primary setting, Table 3 every setting; the registration picks the rows
    (:func:`railsweep.strategy_registry.in_table`)."""
    fam, dom = primary
    prim = [s for s in scored if s["family"] == fam and s["domain"] == dom]

    def shown(cells: Sequence[Mapping[str, Any]], table: str) -> list[Mapping[str, Any]]:
        return [s for s in cells if in_table(s["strategy_name"], s.get("params"), table)]

    return {f"table{t}": shown(scored if t == "3" else prim, t) for t in ("1", "2", "3", "4")}


def paper_tables(scored: Sequence[Mapping[str, Any]], primary: Sequence[str]) -> dict[str, Table]:
    """Tables 1–4 (``{"table1": Table, ...}``) from scored cells (rows: :func:`table_cells`); a table without
    cells is left out. The sweep's published tables and the notebook's are both built here."""
    fam, dom = primary
    builders = {"table1": table1, "table2": table2, "table3": table3, "table4": table4}
    return {name: builders[name](cells) if name == "table3" else builders[name](cells, family=fam, domain=dom)
            for name, cells in table_cells(scored, primary).items() if cells}  # fmt: skip
