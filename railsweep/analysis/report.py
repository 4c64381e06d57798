"""A sweep's scores, tables and figures from its records (pure pandas over a
:class:`railsweep.results.records.SweepRecord`): the sweep's publish step and ``notebooks/analysis.ipynb`` both
call these functions, so the logged tables and the notebook's cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep.analysis import plots
from railsweep.analysis.scoring import paired_difference, score_pair
from railsweep.analysis.tables import LABELS, paper_tables, table_cells
from railsweep.analysis.uncertainty import with_occupancy
from railsweep.errors import DataError
from railsweep.metrics.aggregate import CONCENTRATION
from railsweep.results.records import CellRecord, SweepRecord
from railsweep.strategy_registry import with_role

__all__ = ["cells_frame", "figures", "gap_vs_sappg", "paired_against_identity", "paired_markdown",
           "question_changes", "paper_tables", "sappg_frame", "score_sweep", "scores_frame",
           "setting_label"]  # fmt: skip

ALPHA = 0.05  # score_pair's default: the only level a trial logs


def setting_label(family: str, domain: str | None) -> str:
    return f"{domain or 'all'} × {family}"


def cells_frame(sweep: SweepRecord) -> pd.DataFrame:
    """Overview, one row per cell: id, role, setting, label, status and the mean solve probability."""
    rows = []
    for c in sweep.cells:
        df = c.questions if c.finished else None
        rows.append({"cell_id": c.cell_id, "role": c.role, "family": c.family, "domain": c.domain,
                     "strategy": c.label, "clean_id": c.clean_id, "status": c.status,
                     "n_questions": None if df is None else len(df),
                     "mean_solve_prob": None if df is None else float(df["solve_prob"].mean())})  # fmt: skip
    return pd.DataFrame(rows)


def _reusable(cell: CellRecord, clean: CellRecord, B: int, n_boot: int, seed: int) -> bool:
    """The trial's logged scores hold for this request: same clean run, same bootstrap settings."""
    s = cell.scores
    return (
        s is not None
        and "m" in s  # scores logged before the floors and the checked intervals existed are recomputed
        and cell.scored_against == clean.run_id
        and (s.get("B"), s.get("n_boot"), s.get("seed"), s.get("alpha")) == (B, n_boot, seed, ALPHA)
    )


def score_sweep(sweep: SweepRecord, *, B: int | None = None, n_boot: int | None = None,
                seed: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Every finished mitigated cell against its finished clean reference (the sweep's scoring settings unless
    overridden), as the cell dicts :mod:`railsweep.analysis.tables` takes. The scores its trial logged are reused
    when they hold (each pair is bootstrapped once)."""
    s = sweep.scoring
    B, n_boot, seed = B or s["B"], n_boot or s["n_boot"], s["seed"] if seed is None else seed
    by_id = {c.cell_id: c for c in sweep.cells}
    scored = []
    for c in sweep.cells:
        clean = by_id.get(c.clean_id) if c.clean_id else None
        if c.role != "mitigated" or not c.finished or clean is None or not clean.finished:
            continue
        if _reusable(c, clean, B, n_boot, seed):
            score = with_occupancy(c.scores, clean.questions)  # MLflow holds numbers, not the strata list
        else:
            score = score_pair(clean.questions, c.questions, B=B, n_boot=n_boot, seed=seed)
        scored.append({"cell_id": c.cell_id, "clean_id": c.clean_id, "family": c.family, "domain": c.domain,
                       "strategy": c.label, "strategy_name": c.strategy, "params": c.config.get("strategy_params"),
                       "score": score})  # fmt: skip
    return scored


def sappg_frame(scored: Sequence[Mapping[str, Any]], metric: str = "sa_ppg") -> pd.DataFrame:
    """Long format ``setting, strategy, value, ci_low, ci_high`` of one metric (the bars' input)."""
    rows = [
        {"setting": setting_label(s["family"], s["domain"]), "strategy": s["strategy"],
         **{k: s["score"][metric][k] for k in ("value", "ci_low", "ci_high")}}
        for s in scored
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["setting", "strategy", "value", "ci_low", "ci_high"])


def scores_frame(scored: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per scored cell: every metric with its entries as ``<metric>_<key>`` (interval, floor, check,
    corrected reading) and SA-PPG's weight concentration ``sappg_*``."""
    return pd.DataFrame([
        {"cell_id": s["cell_id"], "setting": setting_label(s["family"], s["domain"]), "strategy": s["strategy"],
         **{f"{k}{'' if kk == 'value' else '_' + kk}": vv
            for k, v in s["score"].items() if isinstance(v, Mapping) for kk, vv in v.items()},
         **{f"sappg_{k}": s["score"][f"sappg_{k}"] for k in CONCENTRATION if f"sappg_{k}" in s["score"]}}
        for s in scored
    ])  # fmt: skip


def gap_vs_sappg(scored: Sequence[Mapping[str, Any]], primary: Sequence[str]) -> pd.DataFrame:
    """For the reading guide: per strategy of the primary setting, G-AP next to A-PPG, G-APP and SA-PPG, and
    the cancellation share 1 − G-APP/A-PPG (how much of the per-question gap cancels in the average)."""
    rows = []
    for s in scored:
        if (s["family"], s["domain"]) != tuple(primary):
            continue
        sc = s["score"]
        a, g = sc["a_ppg"]["value"], sc["g_app"]["value"]
        rows.append({"strategy": s["strategy"], "G-AP": sc["g_ap"]["value"], "G-APP": g, "A-PPG": a,
                     "SA-PPG": sc["sa_ppg"]["value"],
                     "cancelled share": (1 - g / a) if a > 0 else float("nan")})  # fmt: skip
    return pd.DataFrame(rows, columns=["strategy", "G-AP", "G-APP", "A-PPG", "SA-PPG", "cancelled share"])


PAIRED_METRICS = ("sa_ppg", "a_ppg", "g_ap")  # the planner's metrics (railsweep.metrics.power)
PAIRED_COLUMNS = ["cell_id", "setting", "strategy", "metric", "value", "Identity", "difference", "ci_low", "ci_high",
                  "interval", "verdict"]  # fmt: skip


def paired_against_identity(sweep: SweepRecord, scored: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """metric(strategy) − metric(Identity) per setting on the same questions, with the interval of the difference
    and its verdict ("lower", "higher" or "not distinguishable at this size"). Settings without an Identity cell
    are left out."""
    by_id, sc = {c.cell_id: c for c in sweep.cells}, sweep.scoring
    ident = {(s["family"], s["domain"]): s for s in scored if s["strategy"] == "Identity"}
    rows = []
    for s in scored:
        ref = ident.get((s["family"], s["domain"]))
        if ref is None or s is ref or s["clean_id"] != ref["clean_id"]:
            continue
        for metric in PAIRED_METRICS:
            d = paired_difference(by_id[s["clean_id"]].questions, by_id[s["cell_id"]].questions,
                                  by_id[ref["cell_id"]].questions, metric, B=sc["B"], n_boot=sc["n_boot"],
                                  seed=sc["seed"])  # fmt: skip
            rows.append({"cell_id": s["cell_id"], "setting": setting_label(s["family"], s["domain"]),
                         "strategy": s["strategy"], "metric": LABELS[metric], "value": d["value_a"],
                         "Identity": d["value_b"], **{k: d[k] for k in PAIRED_COLUMNS[6:]}})  # fmt: skip
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


CHANGE_COLUMNS = ["question_index", "leaked", "r_cl", "r_identity", "r_strategy", "gain"]


def question_changes(sweep: SweepRecord, scored: Sequence[Mapping[str, Any]], strategy: str,
                     setting: tuple[str, str | None] | None = None) -> pd.DataFrame:  # fmt: skip
    """The questions behind a paired difference (one setting, default the primary): M_cl's, Identity's and the
    strategy's solve rates and ``gain`` = |Δ_Identity| − |Δ_strategy| (Δ = r − r_cl; > 0: a question gained),
    most gained first; A-PPG(strategy) − A-PPG(Identity) is minus the column's mean."""
    family, domain = setting or sweep.primary
    here = [s for s in scored if s["family"] == family and s["domain"] == domain]
    cell = next((s for s in here if s["strategy"] == strategy), None)
    ident = next((s for s in here if s["strategy"] == "Identity" and cell and s["clean_id"] == cell["clean_id"]), None)
    if cell is None or ident is None:
        known = sorted({s["strategy"] for s in here})
        raise DataError(f"{setting_label(family, domain)}: no {strategy!r} cell beside an Identity cell (scored: {known})")
    by_id = {c.cell_id: c for c in sweep.cells}
    frames = [by_id[i].questions.set_index("question_index") for i in (cell["clean_id"], ident["cell_id"], cell["cell_id"])]
    clean, base, mine = frames
    out = pd.DataFrame({"leaked": clean["leaked"], "r_cl": clean["solve_prob"], "r_identity": base["solve_prob"],
                        "r_strategy": mine["solve_prob"]}).dropna(subset=["r_identity", "r_strategy"])  # fmt: skip
    out["gain"] = (out["r_identity"] - out["r_cl"]).abs() - (out["r_strategy"] - out["r_cl"]).abs()
    ordered = out.reset_index().sort_values(["gain", "question_index"], ascending=[False, True])
    return ordered[CHANGE_COLUMNS].reset_index(drop=True)


def verdict_logs(frame: pd.DataFrame) -> dict[str, tuple[dict[str, float], dict[str, str]]]:
    """Per cell id, the metrics and tags its run gets from the paired table: ``<metric>_vs_identity``
    (with ``_ci_low``/``_ci_high``) and the tag ``railsweep.verdict.<metric>``."""
    out: dict[str, tuple[dict[str, float], dict[str, str]]] = {}
    names = {label: name for name, label in LABELS.items()}
    for r in frame.itertuples(index=False):
        metrics, tags = out.setdefault(r.cell_id, ({}, {}))
        key = f"{names[r.metric]}_vs_identity"
        metrics.update({key: r.difference, f"{key}_ci_low": r.ci_low, f"{key}_ci_high": r.ci_high})
        tags[f"railsweep.verdict.{names[r.metric]}"] = r.verdict
    return out


def _ci(lo: float, hi: float) -> str:
    return f"[{lo:+.2f}, {hi:+.2f}]" if pd.notna(lo) and pd.notna(hi) else "—"


def paired_markdown(frame: pd.DataFrame) -> str:
    """The paired differences as a Markdown table: ``+0.1260 | [+0.10, +0.15] | higher`` per row."""
    lines = ["| setting | strategy | metric | strategy − Identity | 95 % interval | verdict |",
             "|---|---|---|:---:|:---:|---|"]  # fmt: skip
    lines += [f"| {r.setting} | {r.strategy} | {r.metric} | {r.difference:+.4f} | {_ci(r.ci_low, r.ci_high)} "
              f"| {r.verdict} |" for r in frame.itertuples(index=False)]  # fmt: skip
    title = "**Paired differences against Identity (same questions; lower = closer to M_cl)**"
    return title + "\n\n" + "\n".join(lines) + "\n"


def figures(sweep: SweepRecord, scored: Sequence[Mapping[str, Any]], out_dir: str | Path) -> dict[str, Path]:
    """The sweep's PNG figures by name, only the tables' rows drawn, a figure without data left out: per-question
    scatters, S-Δ± per stratum, SA-PPG bars and readout stability (paper Fig. 2)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_id = {c.cell_id: c for c in sweep.cells}
    rows = table_cells(scored, sweep.primary)
    prim, title = rows["table2"], setting_label(*sweep.primary)
    paths: dict[str, Path] = {}
    scatter = {r.name for r in with_role("scatter")}  # side by side, Table 2's rows
    for s in prim:
        if s["strategy_name"] in scatter:
            key = f"scatter_{s['strategy_name']}"
            paths[key] = plots.scatter_clean_vs_mitigated(by_id[s["clean_id"]].questions,
                                                          by_id[s["cell_id"]].questions, out / f"{key}.png",
                                                          title=f"{title}: {s['strategy']}")  # fmt: skip
    if prim:
        paths["stratum_deltas"] = plots.stratum_deltas(
            by_id[prim[0]["clean_id"]].questions, {s["strategy"]: by_id[s["cell_id"]].questions for s in prim},
            out / "stratum_deltas.png", B=sweep.scoring["B"], title=title,
        )  # fmt: skip
    if rows["table3"]:
        paths["sappg_bars"] = plots.sappg_bars(sappg_frame(rows["table3"]), out / "sappg_bars.png")
    curves = {}
    readout_t = (sweep.spec.get("readout") or {}).get("temperature")
    for c in sweep.cells:
        if readout_t is not None and c.config.get("temperature") != readout_t:
            continue  # M_cl at another temperature (a sweep's temperature dimension) is not the reference
        if c.finished and c.role == "clean" and c.responses is not None:
            try:
                curves[f"M_cl {c.family}"] = plots.stability_curve(c.responses)
            except ValueError:  # too few samples per question for two batches
                continue
    if curves:
        paths["readout_stability"] = plots.readout_stability_plot(curves, out / "readout_stability.png")
    return paths
