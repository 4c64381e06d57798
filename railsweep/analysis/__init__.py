"""Scoring a mitigated cell against its clean reference, and the paper's tables.

(Plots live in ``railsweep.analysis.plots``; import it explicitly, it needs matplotlib. A sweep's scores, tables
and figures from its records live in ``railsweep.analysis.report``; the dynamics tables of a sweep with
``temperatures`` are shaped in ``railsweep.analysis.dynamics``. No module here imports ``railsweep.sweep``,
ray or mlflow.)
"""

from railsweep.analysis.scoring import flatten_scores, paired_difference, score_pair, unflatten_scores
from railsweep.analysis.table_writers import to_csv, to_html, to_markdown, write_table
from railsweep.analysis.tables import Table, format_estimate, metric_table, table1, table2, table3, table4

__all__ = ["Table", "flatten_scores", "format_estimate", "metric_table", "paired_difference", "score_pair",
           "table1", "table2", "table3", "table4", "to_csv", "to_html", "to_markdown", "unflatten_scores",
           "write_table"]  # fmt: skip
