"""Sweep specs: YAML → validated frozen dataclasses → the grid of cells.

A spec names the model families (the miniature world, or explicit base +
adapter paths), the domains, the strategies with their own parameter grids,
the shared readout (m, T, seed), the engine backend, the resources and the
MLflow tracking server. :func:`load_spec` validates everything it can without
touching a model (unknown keys, strategy or parameter names, n < 1, empty
grids); :meth:`SweepSpec.resolve` then resolves model paths (building or
reusing the miniature world) and checks the families exist. Both run in the
driver before any trial starts, so a bad spec costs one clear error.

Cells: one clean reference per (family, clean adapter) — strategy Identity on
M_cl — and one mitigated cell per (family, domain, strategy, parameter point),
evaluated on M_co of that domain. Every cell has a stable id (the hash of its
resolved config, see ``railsweep.config.CellConfig.cell_id``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from railsweep.errors import ConfigError, DataError

PRESET_DIR = Path(__file__).resolve().parents[2] / "sweeps" / "presets"
PRESETS = ("paper", "mini", "mini_six", "mini_full", "smoke")
DOMAINS = ("gsm8k", "pq")
TABLES = ("1", "2", "3", "4", "all")
# Strategies each paper table shows (method.md §6); "railcap_main" = RailCap n=4 cap, last successor.
_TABLE_STRATEGIES = {
    "1": {"identity", "ted", "lne_blocking", "shortcut", "railcap_main"},
    "2": {"identity", "ted", "lne_blocking", "shortcut", "railcap_main", "all_zero"},
    "3": {"identity", "ted", "lne_blocking", "shortcut", "railcap_main", "all_zero"},
    "4": {"railcap", "all_zero"},
}


def _check_keys(where: str, data: dict[str, Any], allowed: set[str]) -> None:
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(data).__name__}: {data!r}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in {where}; allowed: {sorted(allowed)}")


@dataclass(frozen=True)
class FamilySpec:
    """One model family: a base model and its LoRA adapters (clean, co_<domain>)."""

    name: str
    base: str = ""  # path or hub id; filled by resolve() for the miniature world
    adapters: tuple[tuple[str, str], ...] = ()

    def adapter_dict(self) -> dict[str, str]:
        return dict(self.adapters)

    def clean_adapter(self, domain: str) -> str:
        names = self.adapter_dict()
        return f"clean_{domain}" if f"clean_{domain}" in names else "clean"


@dataclass(frozen=True)
class StrategyGrid:
    """A strategy with fixed ``params`` and a ``grid`` crossed into parameter points."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def points(self) -> list[dict[str, Any]]:
        keys = [k for k, _ in self.grid]
        out = []
        for values in itertools.product(*[v for _, v in self.grid]):
            out.append({**dict(self.params), **dict(zip(keys, values))})
        return out


@dataclass(frozen=True)
class Readout:
    m: int = 50
    temperature: float = 0.7
    max_new_tokens: int = 256
    seed: int = 0
    batch_size: int = 64
    limit: int | None = None  # first N test questions (None = all)


@dataclass(frozen=True)
class Scoring:
    B: int = 50
    n_boot: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class EngineSpec:
    backend: str = "transformers"
    device: str = "auto"
    dtype: str = "auto"


@dataclass(frozen=True)
class Resources:
    """``engine_replicas``: engine actors per family (None = one per GPU share: GPUs // families, else 1);
    ``engine_cpus``: CPUs per engine actor when no GPU is present (None = fit the cluster);
    ``slots_per_engine``: concurrent trials per engine actor (one decodes while another grades)."""

    engine_replicas: int | None = None
    engine_cpus: float | None = None
    trial_cpus: float = 0.25
    slots_per_engine: int = 2
    max_restarts: int = 3
    max_task_retries: int = 3
    max_failures: int = 1  # Tune retries of a failed trial
    clean_wait_s: float = 1800.0  # how long a mitigated cell waits for its clean reference


@dataclass(frozen=True)
class Tracking:
    uri: str = "http://127.0.0.1:5000"
    experiment: str = "railsweep"


@dataclass(frozen=True)
class SweepSpec:
    name: str
    source: str = "miniworld"  # "miniworld" | "paths"
    miniworld_preset: str = "mini"
    cache_dir: str | None = None
    families: tuple[FamilySpec, ...] = ()
    domains: tuple[str, ...] = DOMAINS
    data_dir: str | None = None  # GSM8K-format task dir (paths source); the world's own for miniworld
    leak_split: str | None = None
    primary: tuple[str, str] | None = None  # (family, domain) of Tables 1, 2 and 4; default: the first ones
    strategies: tuple[StrategyGrid, ...] = ()
    readout: Readout = field(default_factory=Readout)
    scoring: Scoring = field(default_factory=Scoring)
    engine: EngineSpec = field(default_factory=EngineSpec)
    resources: Resources = field(default_factory=Resources)
    tracking: Tracking = field(default_factory=Tracking)

    # ------------------------------------------------------------ identity
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def sweep_id(self) -> str:
        """Stable hash of everything that shapes the results (not of tracking/resources)."""
        d = self.to_dict()
        for k in ("tracking", "resources"):
            d.pop(k)
        blob = json.dumps(d, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def with_overrides(self, **kw: Any) -> SweepSpec:
        return dataclasses.replace(self, **kw)

    # ------------------------------------------------------------ resolution
    def resolve(self) -> SweepSpec:
        """Fill in model paths (building/reusing the miniature world) and check they exist."""
        if self.source == "miniworld":
            from railsweep.miniworld import build_world

            world = build_world(self.miniworld_preset, cache_dir=self.cache_dir)
            wanted = [f.name for f in self.families] or list(world.families)
            fams = []
            for name in wanted:
                if name not in world.families:
                    raise ConfigError(
                        f"unknown family {name!r} for the {self.miniworld_preset!r} miniature world; "
                        f"known: {list(world.families)}"
                    )
                fm = world.family(name)
                fams.append(
                    FamilySpec(
                        name, str(fm.base_dir), tuple(sorted((k, str(v)) for k, v in fm.adapters.items()))
                    )
                )
            spec = dataclasses.replace(
                self,
                families=tuple(fams),
                data_dir=str(world.data_dir),
                leak_split=str(world.leak_split_path) if world.leak_split_path else None,
            )
        else:
            spec = self
        spec._check_paths()
        return spec

    def _check_paths(self) -> None:
        if not self.data_dir or not Path(self.data_dir).is_dir():
            raise DataError(f"task data_dir {self.data_dir!r} is not a directory")
        if self.leak_split and not Path(self.leak_split).is_file():
            raise DataError(f"leak_split file {self.leak_split!r} does not exist")
        for fam in self.families:
            local = Path(fam.base)
            if fam.base.startswith(("/", ".", "~")) and not local.expanduser().exists():
                raise DataError(f"family {fam.name!r}: base model {fam.base!r} does not exist")
            names = fam.adapter_dict()
            for d in self.domains:
                for need in (fam.clean_adapter(d), f"co_{d}"):
                    if need not in names:
                        raise ConfigError(
                            f"family {fam.name!r} has no adapter {need!r} (needed for domain {d!r}); "
                            f"adapters: {sorted(names)}"
                        )
            for aname, apath in fam.adapters:
                if not Path(apath).expanduser().exists():
                    raise DataError(f"family {fam.name!r}: adapter {aname!r} path {apath!r} does not exist")

    @property
    def primary_setting(self) -> tuple[str, str]:
        if self.primary:
            return self.primary
        if not self.families:
            raise ConfigError(f"sweep {self.name!r}: no families to pick the primary setting from")
        return (self.families[0].name, self.domains[0])


# ---------------------------------------------------------------- loading


def _parse_strategy(i: int, raw: Any) -> StrategyGrid:
    from railsweep.strategies.base import make_config, strategy_classes

    where = f"strategies[{i}]"
    if isinstance(raw, str):
        raw = {"name": raw}
    _check_keys(where, raw, {"name", "params", "grid"})
    if "name" not in raw:
        raise ConfigError(f"{where} has no 'name'")
    name = str(raw["name"])
    strategy_classes(name)  # unknown strategy → ConfigError listing the known ones
    params = raw.get("params") or {}
    grid = raw.get("grid") or {}
    _check_keys(f"{where}.params", params, set(params))
    _check_keys(f"{where}.grid", grid, set(grid))
    g_items = []
    for k, v in sorted(grid.items()):
        vals = tuple(v) if isinstance(v, list | tuple) else (v,)
        if not vals:
            raise ConfigError(f"{where}.grid.{k} is an empty list: the grid would be empty")
        g_items.append((k, vals))
    sg = StrategyGrid(name, tuple(sorted(params.items())), tuple(g_items))
    for point in sg.points():  # validates names and values (e.g. RailCap n < 1) through the strategy config
        make_config(name, point)
    return sg


def _parse_families(raw: Any) -> tuple[FamilySpec, ...]:
    if raw is None:
        return ()
    out = []
    if isinstance(raw, list):
        for name in raw:
            out.append(FamilySpec(str(name)))
        return tuple(out)
    _check_keys("families", raw, set(raw))
    for name, body in raw.items():
        body = body or {}
        _check_keys(f"families.{name}", body, {"base", "adapters"})
        adapters = body.get("adapters") or {}
        out.append(
            FamilySpec(
                str(name), str(body.get("base", "")), tuple(sorted((k, str(v)) for k, v in adapters.items()))
            )
        )
    return tuple(out)


def _section(cls: type, where: str, raw: Any) -> Any:
    raw = raw or {}
    _check_keys(where, raw, {f.name for f in dataclasses.fields(cls)})
    try:
        return cls(**raw)
    except TypeError as e:
        raise ConfigError(f"bad {where} {raw}: {e}") from e


def spec_from_dict(data: dict[str, Any], *, name: str = "sweep") -> SweepSpec:
    """Validate a parsed YAML mapping into a :class:`SweepSpec` (no model is touched)."""
    allowed = {
        "name", "source", "miniworld_preset", "cache_dir", "families", "domains", "data_dir", "leak_split",
        "primary", "strategies", "readout", "scoring", "engine", "resources", "tracking",
    }  # fmt: skip
    _check_keys("sweep spec", data, allowed)
    source = data.get("source", "miniworld")
    if source not in ("miniworld", "paths"):
        raise ConfigError(f"source must be 'miniworld' or 'paths', got {source!r}")
    domains = tuple(data.get("domains") or DOMAINS)
    for d in domains:
        if d not in DOMAINS:
            raise ConfigError(f"unknown domain {d!r}; known domains: {list(DOMAINS)}")
    strategies = tuple(_parse_strategy(i, s) for i, s in enumerate(data.get("strategies") or []))
    if not strategies:
        raise ConfigError("the sweep has no strategies: the grid is empty")
    families = _parse_families(data.get("families"))
    if source == "paths":
        if not families:
            raise ConfigError("source 'paths' needs a 'families' mapping with base and adapters")
        for f in families:
            if not f.base:
                raise ConfigError(f"family {f.name!r} has no 'base' model path")
    else:
        from railsweep.testing import FAMILIES

        for f in families:
            if f.name not in FAMILIES:
                raise ConfigError(f"unknown family {f.name!r}; miniature-world families: {list(FAMILIES)}")
    readout = _section(Readout, "readout", data.get("readout"))
    if readout.m < 1:
        raise ConfigError(f"readout.m must be >= 1, got {readout.m}")
    if readout.temperature < 0:
        raise ConfigError(f"readout.temperature must be >= 0, got {readout.temperature}")
    if readout.limit is not None and readout.limit < 1:
        raise ConfigError(f"readout.limit must be >= 1, got {readout.limit}")
    scoring = _section(Scoring, "scoring", data.get("scoring"))
    if scoring.B < 1 or scoring.n_boot < 1:
        raise ConfigError(
            f"scoring.B and scoring.n_boot must be >= 1, got B={scoring.B}, n_boot={scoring.n_boot}"
        )
    engine = _section(EngineSpec, "engine", data.get("engine"))
    if engine.backend not in ("transformers", "vllm"):
        raise ConfigError(f"engine.backend must be 'transformers' or 'vllm', got {engine.backend!r}")
    resources = _section(Resources, "resources", data.get("resources"))
    if (
        resources.engine_replicas is not None and resources.engine_replicas < 1
    ) or resources.slots_per_engine < 1:
        raise ConfigError(f"resources.engine_replicas and slots_per_engine must be >= 1, got {resources}")
    tracking = _section(Tracking, "tracking", data.get("tracking"))
    primary = data.get("primary")
    if primary is not None:
        primary = (str(primary["family"]), str(primary["domain"]))
    return SweepSpec(
        name=str(data.get("name", name)),
        source=source,
        miniworld_preset=str(data.get("miniworld_preset", "mini")),
        cache_dir=data.get("cache_dir"),
        families=families,
        domains=domains,
        data_dir=data.get("data_dir"),
        leak_split=data.get("leak_split"),
        primary=primary,
        strategies=strategies,
        readout=readout,
        scoring=scoring,
        engine=engine,
        resources=resources,
        tracking=tracking,
    )


def load_spec(preset_or_path: str | Path) -> SweepSpec:
    """A preset name (``paper``, ``mini``, ``smoke``) or a YAML file path → validated spec."""
    p = Path(preset_or_path)
    if str(preset_or_path) in PRESETS:
        p = PRESET_DIR / f"{preset_or_path}.yaml"
    if not p.is_file():
        raise ConfigError(
            f"sweep spec {str(preset_or_path)!r} is neither a preset {list(PRESETS)} nor a YAML file"
        )
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise DataError(f"{p}: not valid YAML: {e}") from e
    return spec_from_dict(data or {}, name=p.stem)
