"""Scoring a mitigated cell against its clean reference, and the paper's tables. The plots (matplotlib), a
sweep's report and its dynamics tables are submodules to import explicitly; none imports ray or mlflow.
"""

from railsweep.analysis.scoring import flatten_scores, paired_difference, score_pair, unflatten_scores
from railsweep.analysis.table_writers import to_csv, to_html, to_markdown, write_table
from railsweep.analysis.tables import Table, format_estimate, metric_table, table1, table2, table3, table4

__all__ = ["Table", "flatten_scores", "format_estimate", "metric_table", "paired_difference", "score_pair",
           "table1", "table2", "table3", "table4", "to_csv", "to_html", "to_markdown", "unflatten_scores",
           "write_table"]  # fmt: skip
