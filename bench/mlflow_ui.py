"""What a person sees in the MLflow UI of a finished sweep, in a real browser, beside the same facts read
through MLflow's REST API.

1. a private MLflow server on a free 127.0.0.1 port over the sweep's own store (``--runs-dir``, the folder
   ``make demo`` writes: ``runs/mlflow`` with ``mlflow.db`` and ``mlartifacts``);
2. through the REST API (``/api/2.0/mlflow/...``): the experiment's runs, their status, names, tags, how many
   metrics and params each cell run carries, the parent's description and summary metrics;
3. headless Chromium (Debian's ``chromium`` package) screenshots of the runs table (the address the demo
   prints: :func:`railsweep.sweep.tracking.mlflow_view.ui_address`), the compare view of two strategies of one setting (Identity and RailCap) and the parent run.

Run after ``make demo``:

    python bench/mlflow_ui.py --runs-dir runs/mlflow --out ui_shots

JSON on stdout: the facts, the addresses and the PNGs written (look at them: the file tool shows PNGs).
Exit 2 with one line when the store, the experiment or Chromium is missing (checked before the server starts).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from railsweep.analysis.scoring import SCORE_CONSTANTS
from railsweep.services.mlflow_server import ensure_mlflow_server
from railsweep.services.process import free_port
from railsweep.sweep.tracking.mlflow_view import VIEW_KEY, ui_address

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
ML = "workflowType=machine_learning"  # MLflow 3's "Model training" side of the UI (the default is GenAI)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", default="runs/mlflow", help="the sweep's MLflow folder (default: runs/mlflow)")
    p.add_argument("--experiment", default="railsweep-mini", help="experiment name (default: railsweep-mini)")
    p.add_argument("--out", default="ui_shots", help="folder for the PNGs (default: ui_shots)")
    p.add_argument("--wait-ms", type=int, default=20000, help="browser time to render each page (default: 20000)")
    p.add_argument("--size", default="1600,1000", help="window size WIDTH,HEIGHT (default: 1600,1000)")
    return p


def fail(msg: str) -> int:
    print(f"mlflow_ui: error: {msg}", file=sys.stderr)
    return 2


def browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def api(url: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(f"{url}/api/2.0/mlflow/{path}", method="POST" if body is not None else "GET",
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def all_runs(url: str, experiment_id: str) -> list[dict]:
    runs, token = [], None
    while True:
        body = {"experiment_ids": [experiment_id], "max_results": 500, **({"page_token": token} if token else {})}
        page = api(url, "runs/search", body)
        runs += page.get("runs", [])
        token = page.get("next_page_token")
        if not token:
            return runs


def tags_of(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def facts(url: str, experiment: str) -> dict:
    """What the UI should show, read through the REST API."""
    exp = api(url, "experiments/get-by-name?experiment_name=" + urllib.parse.quote(experiment))["experiment"]
    runs = all_runs(url, exp["experiment_id"])
    cells = [r for r in runs if tags_of(r).get("railsweep.kind") == "cell"]
    parents = [r for r in runs if tags_of(r).get("railsweep.kind") == "sweep"]
    metric_keys = [{m["key"] for m in r["data"].get("metrics", [])} for r in cells]
    parent = parents[0] if parents else None
    return {
        "experiment_id": exp["experiment_id"],
        "experiment_kind": {t["key"]: t["value"] for t in exp.get("tags", [])}.get("mlflow.experimentKind"),
        "shared_view": any(t["key"] == f"mlflow.sharedViewState.{VIEW_KEY}" for t in exp.get("tags", [])),
        "runs": len(runs), "cells": len(cells), "parents": len(parents),
        "statuses": sorted({r["info"]["status"] for r in runs}),
        "names_unique": len({r["info"]["run_name"] for r in cells}) == len(cells),
        "cell_names": sorted(r["info"]["run_name"] for r in cells),
        "filter_tags_on_every_cell": all(all(f"railsweep.{k}" in tags_of(r) for k in ("family", "domain", "strategy"))
                                         for r in cells),  # fmt: skip
        "constants_logged_as_metrics": sorted({k for keys in metric_keys for k in keys if k in SCORE_CONSTANTS}),
        "metrics_per_cell_run": [min(map(len, metric_keys), default=0), max(map(len, metric_keys), default=0)],
        "parent_description_chars": len(tags_of(parent).get("mlflow.note.content", "")) if parent else 0,
        "parent_summary_metrics": sum(m["key"].startswith("sa_ppg") for m in parent["data"].get("metrics", []))
        if parent else 0,
        "_ids": {"parent": parent["info"]["run_id"] if parent else None, "pair": compare_pair(cells)},
    }  # fmt: skip


def compare_pair(cells: list[dict]) -> list[str]:
    """Run ids of Identity and RailCap (first setting that has both), else the first two cells."""
    by = {}
    for r in cells:
        t = tags_of(r)
        by.setdefault((t.get("railsweep.family"), t.get("railsweep.domain")), {})[t.get("railsweep.strategy", "")] = r
    for strategies in by.values():
        railcap = next((r for s, r in strategies.items() if s.startswith("RailCap")), None)
        if "Identity" in strategies and railcap:
            return [strategies["Identity"]["info"]["run_id"], railcap["info"]["run_id"]]
    return [r["info"]["run_id"] for r in cells[:2]]


def pages(url: str, f: dict) -> dict[str, str]:
    eid, ids = f["experiment_id"], f["_ids"]
    out = {"runs_table": ui_address(url, eid)}  # what `railsweep demo` and `railsweep sweep` print
    if len(ids["pair"]) == 2:
        runs = urllib.parse.quote(json.dumps(ids["pair"]))
        out["compare"] = f"{url}/#/compare-runs?runs={runs}&experiments={urllib.parse.quote(json.dumps([eid]))}&{ML}"
    if ids["parent"]:
        out["parent_run"] = f"{url}/#/experiments/{eid}/runs/{ids['parent']}?{ML}"
    return out


def screenshot(exe: str, address: str, png: Path, wait_ms: int, size: str) -> dict:
    t0 = time.monotonic()
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--window-size={size}",
           f"--virtual-time-budget={wait_ms}", f"--screenshot={png}", address]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    ok = r.returncode == 0 and png.is_file()
    return {"png": str(png), "ok": ok, "bytes": png.stat().st_size if ok else 0,
            "seconds": round(time.monotonic() - t0, 1), **({} if ok else {"stderr": r.stderr[-500:]})}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    store = Path(args.runs_dir) / "mlflow.db"
    if not store.is_file():
        return fail(f"--runs-dir {args.runs_dir!r} has no mlflow.db (run `make demo` first)")
    exe = browser()
    if exe is None:
        return fail(f"no headless browser found ({', '.join(BROWSERS)}); apt-get install chromium")
    try:
        width, height = (int(x) for x in args.size.split(","))
    except ValueError:
        return fail(f"--size {args.size!r} is not WIDTH,HEIGHT")
    server = ensure_mlflow_server(args.runs_dir, port=free_port())
    try:
        try:
            f = facts(server.url, args.experiment)
        except urllib.error.HTTPError as e:
            return fail(f"experiment {args.experiment!r} not found in {args.runs_dir!r} ({e.code})")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        addresses = pages(server.url, f)
        shots = {k: screenshot(exe, a, out / f"{k}.png", args.wait_ms, f"{width},{height}") for k, a in addresses.items()}
    finally:
        server.stop()
    f.pop("_ids")
    print(json.dumps({"facts": f, "pages": addresses, "screenshots": shots}, indent=2))
    return 0 if all(s["ok"] for s in shots.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
