"""Expand a resolved :class:`~railsweep.sweep.spec.sweep_spec.SweepSpec` into the cells of the grid.

Steps:
1. one clean reference cell per (family, clean adapter): Identity on M_cl (one per family when it has a single
   ``clean`` adapter: every domain is evaluated on the same original test questions);
2. one mitigated cell per (family, domain, strategy, parameter point) on ``co_<domain>``, pointing at its
   clean reference by id;
3. with ``temperatures`` (and ``--table all``), per (family, domain) and tau (greedy included): M_cl and M_co
   sampled at tau, read by the dynamics step (:func:`temperature_groups`);
4. optional filter to what one paper table needs (``--table 1..4``; ``Registration.shows``);
5. clean cells first, so they are scheduled before the cells that need them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from railsweep.config import CellConfig
from railsweep.dynamics.groups import TemperatureGroup
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.errors import ConfigError
from railsweep.strategy_registry import registration
from railsweep.sweep.spec.sweep_spec import TABLES, SweepSpec


@dataclass(frozen=True)
class SweepCell:
    """One grid point: the CellConfig evaluated plus the sweep's bookkeeping."""

    config: CellConfig
    clean_id: str | None  # the reference cell's id (None for clean cells and detection readouts)
    note: str = ""  # shown after the strategy label (a detection readout says which wording it reads)
    task_group: str | None = None  # the harness group or tag whose member task the cell reads (spec.task_group)

    @property
    def cell_id(self) -> str:
        return self.config.cell_id

    @property
    def role(self) -> str:
        return self.config.role

    @property
    def family(self) -> str:
        return self.config.family or ""

    @property
    def domain(self) -> str | None:
        return self.config.domain

    def label(self) -> str:
        """Display label used in the tables, e.g. ``RailCap n=4 cap``."""
        label = registration(self.config.strategy).label(self.config.strategy_config)
        return f"{label} ({self.note})" if self.note else label

    def run_name(self) -> str:
        """The cell's MLflow run name: ``llama · gsm8k · RailCap n=4 cap``, or ``llama · clean reference``."""
        c = self.config
        name = f"{c.family} · clean reference" if c.role == "clean" else f"{c.family} · {c.domain or 'all'} · {self.label()}"
        return f"{name} · {self.member()}" if self.task_group else name

    def member(self) -> str:
        """The task's name without ``lm_eval:`` (a group's member), e.g. ``mgsm_direct_en``."""
        return str(self.config.task).removeprefix("lm_eval:")

    def run_tags(self) -> dict[str, str]:
        """Tags that make the cell runs filterable in the MLflow UI."""
        c = self.config
        group = {"railsweep.task": self.member(), "railsweep.task_group": self.task_group} if self.task_group else {}
        return {"railsweep.family": c.family, "railsweep.domain": c.domain or "all", "railsweep.strategy": self.label(),
                **group}  # fmt: skip

    def flat_params(self) -> dict[str, str]:
        """Flat, UI-comparable MLflow params."""
        c = self.config
        out: dict[str, Any] = {
            "cell_id": self.cell_id, "role": c.role, "family": c.family, "domain": c.domain or "all",
            "strategy": c.strategy, "label": self.label(), "adapter": c.adapter, "model": c.model, "m": c.m,
            "temperature": c.temperature, "seed": c.seed, "max_new_tokens": c.max_new_tokens,
            "limit": c.limit, "answer_rule": c.answer_rule, "answer_type": c.answer_type,
            "clean_cell_id": self.clean_id, **({"task": c.task} if c.task else {}),
            **({"task_group": self.task_group} if self.task_group else {}),
        }  # fmt: skip
        out.update({f"strategy.{k}": v for k, v in c.strategy_params.items()})
        return {k: str(v) for k, v in out.items()}


def readout_fields(spec: SweepSpec) -> dict[str, Any]:
    """The CellConfig fields every cell of ``spec`` shares: its readout, data folder and leak split."""
    r = spec.readout
    return dict(m=r.m, temperature=r.temperature, seed=r.seed, max_new_tokens=r.max_new_tokens, limit=r.limit,
                task_dir=spec.data_dir, leak_split=spec.leak_split, answer_rule=r.answer_rule,
                answer_type=r.answer_type, task=r.task)  # fmt: skip


def _temperature_cells(spec: SweepSpec, fam: Any, domain: str) -> list[tuple[str, float, SweepCell]]:
    """``(model, tau, cell)`` for M_cl, M_co and (``dynamics.base``) the bare base at each tau, greedy too."""
    common = readout_fields(spec)
    cname = fam.clean_adapter(domain)
    out = []
    for tau in sorted({0.0, *spec.temperatures}):
        clean = _clean_cell(fam, domain, cname, {**common, "temperature": tau})
        co = CellConfig(model=fam.base, adapter=f"co_{domain}", strategy="temperature",
                        strategy_params={"tau": tau}, family=fam.name, domain=domain, role="mitigated",
                        clean_adapter=cname, **common)  # fmt: skip
        out += [("M_cl", tau, clean), ("M_co", tau, SweepCell(co, clean.cell_id))]
        if spec.dynamics_settings.base:
            base = CellConfig(model=fam.base, adapter=None, strategy="identity", family=fam.name,
                              role="clean", **{**common, "temperature": tau})  # fmt: skip
            out.append(("base", tau, SweepCell(base, None)))
    return out


def temperature_groups(spec: SweepSpec) -> list[TemperatureGroup]:
    """The temperature dimension of a resolved spec, one group per (family, domain); [] without it."""
    if not spec.temperatures:
        return []
    groups = []
    for fam in spec.families:
        adapters = fam.adapter_dict()
        for domain in spec.domains:
            cells = _temperature_cells(spec, fam, domain)
            models = (("M_cl", adapters[fam.clean_adapter(domain)]), ("M_co", adapters[f"co_{domain}"]))
            groups.append(TemperatureGroup(
                family=fam.name, domain=domain, base=fam.base,
                adapters=models + ((("base", None),) if spec.dynamics_settings.base else ()),
                cells=tuple((m, t, c.cell_id) for m, t, c in cells),
                temperatures=tuple(sorted({0.0, *spec.temperatures})),
                task_cell=cells[0][2].config.to_dict(),
            ))  # fmt: skip
    return groups


def effective_table(spec: SweepSpec, table: str) -> str:
    """The table a sweep runs for: ``table``, or "all" for a spec without strategies (no paper table)."""
    return table if spec.strategies else "all"


def expand(spec: SweepSpec, table: str = "all") -> list[SweepCell]:
    """All cells of a resolved spec (clean references first); ``table`` narrows to one paper table."""
    if table not in TABLES:
        raise ConfigError(f"unknown table {table!r}; choose one of {list(TABLES)}")
    if not spec.strategies and not spec.temperatures:  # detection only: the readouts of detect_cells
        return []
    table = effective_table(spec, table)
    common = readout_fields(spec)
    clean: dict[tuple[str, str], SweepCell] = {}
    mitigated: list[SweepCell] = []
    tau_clean: list[SweepCell] = []
    tau_co: list[SweepCell] = []
    for fam in spec.families:
        for domain in spec.domains:
            if table in ("1", "2", "4") and (fam.name, domain) != spec.primary_setting:
                continue
            cname = fam.clean_adapter(domain)
            ref = clean.setdefault((fam.name, cname), _clean_cell(fam, domain, cname, common))
            mitigated += _mitigated_cells(spec, fam, domain, table, ref, common)
            if table == "all" and spec.temperatures:
                for model, _, cell in _temperature_cells(spec, fam, domain):
                    (tau_co if model == "M_co" else tau_clean).append(cell)
    if not mitigated + tau_co:
        raise ConfigError(f"sweep {spec.name!r} has no cells for table {table!r}: the grid is empty "
                          f"(strategies: {[s.name for s in spec.strategies]}, families: "
                          f"{[f.name for f in spec.families]})")  # fmt: skip
    cells = _first_of_each_id([*clean.values(), *tau_clean, *mitigated, *tau_co])
    return [dataclasses.replace(c, task_group=spec.task_group) for c in cells] if spec.task_group else cells


def _first_of_each_id(cells: list[SweepCell]) -> list[SweepCell]:
    """Each cell id once, the first cell that has it (a grid point's, not an equal temperature cell)."""
    seen: dict[str, SweepCell] = {}
    for c in cells:
        seen.setdefault(c.cell_id, c)
    return list(seen.values())


def _clean_cell(fam: Any, domain: str, cname: str, common: dict[str, Any]) -> SweepCell:
    """The family's reference cell: Identity on M_cl (its clean adapter ``cname``)."""
    cfg = CellConfig(model=fam.base, adapter=cname, strategy="identity", family=fam.name,
                     domain=domain if cname != "clean" else None, role="clean", **common)  # fmt: skip
    return SweepCell(cfg, None)


def _mitigated_cells(spec: SweepSpec, fam: Any, domain: str, table: str, ref: SweepCell,
                     common: dict[str, Any]) -> list[SweepCell]:  # fmt: skip
    """Every strategy's parameter points on M_co of ``domain`` that ``table`` shows, read against ``ref``."""
    out = []
    for sg in spec.strategies:
        for point in sg.points():
            cfg = CellConfig(model=fam.base, adapter=f"co_{domain}", strategy=sg.name, strategy_params=point,
                             family=fam.name, domain=domain, role="mitigated",
                             clean_adapter=ref.config.adapter, **common)  # fmt: skip
            if table == "all" or registration(sg.name).shows(table, cfg.strategy_config):
                out.append(SweepCell(cfg, ref.cell_id))
    return out


def trial_order(cells: list[SweepCell]) -> list[SweepCell]:
    """The order trials start in: every cell without a reference first (the others wait for them), then the
    rest taken in turn from each family, so every family's engines get work from the start instead of the last
    family's cells queueing behind the first family's (Tune starts trials in this order)."""
    first = [c for c in cells if c.clean_id is None]
    queues: dict[str, list[SweepCell]] = {}
    for c in cells:
        if c.clean_id is not None:
            queues.setdefault(c.family, []).append(c)
    depth = max((len(q) for q in queues.values()), default=0)
    return first + [q[i] for i in range(depth) for q in queues.values() if i < len(q)]


def settings_for(spec: SweepSpec, group: TemperatureGroup) -> DynamicsSettings:
    """The dynamics settings of one group: the spec's readout (m, limit, batch, tokens) and ``dynamics``."""
    r = spec.readout
    return DynamicsSettings(temperatures=group.temperatures, m=r.m, limit=r.limit, domain=group.domain,
                            max_new_tokens=r.max_new_tokens, batch_size=r.batch_size,
                            **dataclasses.asdict(spec.dynamics_settings))  # fmt: skip
