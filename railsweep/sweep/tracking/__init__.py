"""A sweep in MLflow: its parent and cell runs, how they open in the UI, reading them back as records, and the
tables and figures published on the parent run."""
