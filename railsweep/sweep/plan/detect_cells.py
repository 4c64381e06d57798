"""The readout cells a sweep's detectors read, per family x domain of the miniature world: ``cdd`` reads a
cell's greedy decode and samples, ``perturb`` the per-question tables of the original and paraphrased wording.

The readout is M_co (``co_<domain>``) under TED switched off (``tau=-1, dedup=false``): Identity's samples
exactly (same seeds), plus the greedy decode CDD needs. Readout cells have no clean reference, so the paper
tables leave them out; the other detectors read the world itself.
"""

from __future__ import annotations

from pathlib import Path

from railsweep.config import CellConfig
from railsweep.detection.world import paraphrase_split
from railsweep.miniworld.cache import load_world
from railsweep.strategy_registry import detection_readout, registration
from railsweep.sweep.plan.cells import SweepCell, expand, readout_fields
from railsweep.sweep.spec.sweep_spec import SweepSpec

NEEDS_READOUT = {"cdd": ("original",), "perturb": ("original", "paraphrased")}
WORDINGS = {
    "original": "detection readout, original wording",
    "paraphrased": "detection readout, paraphrased",
}


def paraphrase_dir(spec: SweepSpec) -> Path:
    """Where the paraphrased split of the spec's (resolved) miniature world lives."""
    return Path(spec.data_dir).parent / "detection" / "paraphrased"


def grid_cells(spec: SweepSpec, table: str, *,
               write: bool = True) -> tuple[list[SweepCell], list[dict[str, str]]]:  # fmt: skip
    """The driver's grid: :func:`expand`'s cells, then the readout cells not among them, and the readouts."""
    cells = expand(spec, table)
    extra, readouts = readout_cells(spec, write=write)
    have = {c.cell_id for c in cells}
    return cells + [c for c in extra if c.cell_id not in have], readouts


def readout_cells(spec: SweepSpec, *, write: bool = True) -> tuple[list[SweepCell], list[dict[str, str]]]:
    """The readout cells of a resolved spec and, per family x domain, which cell holds which wording:
    ``[{"family", "domain", "original": cell_id[, "paraphrased": cell_id]}]``. Writes the paraphrased split
    for perturb unless ``write`` is False (a dry run prices the cells of a world it does not build)."""
    needed = {w for d in spec.detectors for w in NEEDS_READOUT.get(d.name, ())}
    wordings = [w for w in WORDINGS if w in needed]
    if not wordings:
        return [], []
    data_dir = Path(spec.data_dir)
    tasks = {"original": {"task_dir": str(data_dir)}}
    if "paraphrased" in wordings:
        out = paraphrase_dir(spec)
        if write:
            paraphrase_split(load_world(data_dir.parent), out)
        tasks["paraphrased"] = {"task_dir": str(out), "fewshot": str(data_dir / "cot_8shot.json")}
    readout = detection_readout()  # switched off, it keeps every sample: Identity's samples and the greedy rows
    switched_off = dict(registration(readout).switched_off)
    cells, pairs = [], []
    for fam in spec.families:
        for domain in spec.domains:
            pair = {"family": fam.name, "domain": domain}
            for wording in wordings:
                cfg = CellConfig(model=fam.base, adapter=f"co_{domain}", strategy=readout,
                                 strategy_params=switched_off, family=fam.name, domain=domain,
                                 role="mitigated", **{**readout_fields(spec), **tasks[wording]})  # fmt: skip
                cells.append(SweepCell(cfg, None, note=WORDINGS[wording]))
                pair[wording] = cfg.cell_id
            pairs.append(pair)
    return cells, pairs
