"""How a sweep's experiment opens in MLflow 3's UI: the runs table, the cell runs by name with the columns
that compare strategies, on the "Model training" side. The view is a shared view: an experiment tag
(``mlflow.sharedViewState.<key>``) that the UI reads when the address carries ``?viewStateShareKey=<key>``.
"""

from __future__ import annotations

import json

VIEW_KEY = "railsweep"
# A cell run's metrics are logged in this order first: MLflow's compare view charts the first ones a run has
HEADLINE_METRICS = ("sa_ppg", "a_ppg", "g_ap", "sa_ppg_floor", "a_ppg_floor", "mean_solve_prob")
VIEW_COLUMNS = (
    "tags.`railsweep.family`", "tags.`railsweep.domain`", "tags.`railsweep.strategy`",
    "metrics.`sa_ppg`", "metrics.`sa_ppg_floor`", "metrics.`sa_ppg_vs_identity`",
    "metrics.`a_ppg`", "metrics.`a_ppg_floor`", "metrics.`g_ap`", "metrics.`mean_solve_prob`",
)  # fmt: skip
VIEW_STATE = {"searchFilter": "tags.`railsweep.kind` = 'cell'", "orderByKey": "attributes.run_name",
              "orderByAsc": True, "selectedColumns": list(VIEW_COLUMNS)}  # fmt: skip
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development",
                   f"mlflow.sharedViewState.{VIEW_KEY}": json.dumps(VIEW_STATE)}  # fmt: skip


def ui_address(uri: str, experiment_id: str) -> str:
    """The MLflow UI's runs table of a sweep's experiment, in the view above."""
    return f"{uri.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}&workflowType=machine_learning"


def headline_first(metrics: dict[str, float]) -> dict[str, float]:
    """``metrics`` with :data:`HEADLINE_METRICS` first (in that order), the rest as they were."""
    return {**{k: metrics[k] for k in HEADLINE_METRICS if k in metrics}, **metrics}
