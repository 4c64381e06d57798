"""Markdown, HTML and CSV renderings of a :class:`~railsweep.analysis.tables.Table` (or of a plain frame), and
:func:`write_table`, which writes all three atomically. Best cells are marked (bold in Markdown and HTML, a
``best`` column in CSV); notes are printed under the Markdown and HTML."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from railsweep.analysis.tables import Table
from railsweep.atomic import write_text_atomic


def _frame(table: Table | pd.DataFrame, mark: tuple[str, str], escape) -> pd.DataFrame:
    """String frame with cells, index and column labels escaped; best cells wrapped in ``mark``."""
    df = table if isinstance(table, pd.DataFrame) else table.formatted
    out = df.map(lambda v: escape(str(v)))
    if isinstance(table, Table):
        out = out.where(~table.best, mark[0] + out + mark[1])
    out.index = pd.Index([escape(str(i)) for i in df.index], name=escape(df.index.name or ""))
    out.columns = [escape(str(c)) for c in df.columns]
    return out


def to_markdown(table: Table | pd.DataFrame) -> str:
    """A GitHub pipe table (best cells in **bold**); no ``tabulate`` needed."""
    df = _frame(table, ("**", "**"), lambda s: s.replace("|", "\\|"))
    header = [df.index.name or "", *map(str, df.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + [":---:"] * len(df.columns)) + "|"]
    lines += ["| " + " | ".join([str(i), *map(str, row)]) + " |" for i, row in zip(df.index, df.to_numpy())]
    title = f"**{table.title}**\n\n" if isinstance(table, Table) and table.title else ""
    notes = table.notes if isinstance(table, Table) else ()
    tail = "\n" + "".join(f"- {n}\n" for n in notes) if notes else ""
    return title + "\n".join(lines) + "\n" + tail


def to_html(table: Table | pd.DataFrame) -> str:
    """An HTML table (best cells in <b>), values escaped."""
    df = _frame(table, ("<b>", "</b>"), html.escape)
    body = df.to_html(escape=False, border=0)
    title = f"<h3>{html.escape(table.title)}</h3>\n" if isinstance(table, Table) and table.title else ""
    notes = table.notes if isinstance(table, Table) else ()
    tail = "<ul>\n" + "".join(f"<li>{html.escape(n)}</li>\n" for n in notes) + "</ul>\n" if notes else ""
    return title + body + "\n" + tail


def to_html_page(table: Table) -> str:
    """:func:`to_html` as a whole page that declares its encoding (UTF-8), so that a browser opening the file (an
    MLflow artifact, say) reads "×" and "Δ" as written."""
    title = html.escape(table.title or "railsweep table")
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n</head>\n'
            f"<body>\n{to_html(table)}</body>\n</html>\n")  # fmt: skip


def to_csv(table: Table | pd.DataFrame) -> str:
    """CSV of the numeric values: columns ``<metric>``, ``<metric> ci_low``, ``<metric> ci_high``, ``<metric> best``."""
    if isinstance(table, pd.DataFrame):
        return table.to_csv()
    num = table.numeric.copy()
    num.columns = [c if s == "value" else f"{c} {s}" for c, s in num.columns]
    for c in table.best.columns:
        num[f"{c} best"] = table.best[c]
    ordered = [x for c in table.best.columns for x in (c, f"{c} ci_low", f"{c} ci_high", f"{c} best")]
    return num[ordered].to_csv()


def write_table(table: Table, out_dir: str | Path, name: str) -> dict[str, Path]:
    """Write ``<name>.md``, ``<name>.csv``, ``<name>.html`` atomically; returns {format: path}."""
    out_dir = Path(out_dir)
    paths = {"md": out_dir / f"{name}.md", "csv": out_dir / f"{name}.csv", "html": out_dir / f"{name}.html"}
    texts = {"md": to_markdown(table), "csv": to_csv(table), "html": to_html_page(table)}
    for fmt, path in paths.items():
        write_text_atomic(path, texts[fmt])
    return paths
