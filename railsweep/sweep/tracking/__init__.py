"""A sweep in MLflow: its runs, how they open in the UI, reading them back, and what is published on them.

- :mod:`~railsweep.sweep.tracking.tracker` — MLflow parent/child runs with retries and idempotent cells;
- :mod:`~railsweep.sweep.tracking.mlflow_view` — how a sweep's experiment opens in MLflow's UI;
- :mod:`~railsweep.sweep.tracking.reader` — a sweep's runs in MLflow → typed records
  (:mod:`railsweep.results.records`);
- :mod:`~railsweep.sweep.tracking.publish` — finished cells in MLflow → tables and figures on the parent run.
"""
