"""Sweep specs: YAML → validated frozen dataclasses (:class:`SweepSpec`, its sections in
:mod:`railsweep.sweep.spec.sections`). Building a spec validates every type, range and cross-field rule
without touching a model; :meth:`SweepSpec.check_inputs` checks what can be checked before any service
starts, so a bad spec costs one clear error.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import field_validator, model_validator

from railsweep.argtypes import model_problem
from railsweep.errors import ConfigError, DataError
from railsweep.miniworld.presets import PRESETS as WORLD_PRESETS
from railsweep.miniworld.presets import preset_config as world_preset_config
from railsweep.strategy_registry import PAPER_TABLES, check_backend
from railsweep.sweep.spec._schema import NonNegFloat, Text, schema, validate
from railsweep.sweep.spec.sections import (
    DOMAINS,
    Detection,
    DetectorSpec,
    DynamicsSpec,
    EngineSpec,
    FamilySpec,
    Readout,
    Resources,
    Scoring,
    StrategyGrid,
    Tracking,
    names_or_mappings,
    parse_temperatures,
)
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, DEFAULT_ANSWER_TYPE
from railsweep.tasks.data.math_rows import read_math_jsonl
from railsweep.tasks.data.text import read_utf8
from railsweep.tasks.lm_eval.groups import check_member
from railsweep.tasks.task_ref import load_task_spec

PRESET_DIR = Path(__file__).resolve().parent / "presets"  # package data: installed with the wheel
PRESETS = (
    "paper", "mini", "mini_six", "mini_ablation", "mini_full", "mini_detect", "mini_dynamics", "mini_replica", "smoke",
    "smollm2_table3", "smollm2_table4", "smollm2_heavy_table3", "smollm2_heavy_table4",
    "smollm2_heavy_shortcut",
)  # fmt: skip
TABLES = (*PAPER_TABLES, "all")  # which rows each shows: the strategies' registrations (strategy_registry)


@schema("")
class SweepSpec:
    """The whole sweep; its fields are the YAML keys. ``temperatures``: sampling temperatures (``greedy`` or
    numbers >= 0) at which both M_cl and M_co are sampled, followed by the dynamics step
    (``dynamics``, :mod:`railsweep.dynamics.step`)."""

    name: Text
    source: Literal["miniworld", "paths"] = "miniworld"
    miniworld_preset: str = "mini"
    cache_dir: str | None = None
    families: tuple[FamilySpec, ...] = ()  # names, or name → {base, adapters}; () = all the world's
    domains: tuple[str, ...] = DOMAINS
    data_dir: str | None = None  # paths: task dir in readout.answer_type's format; miniworld: the world's
    leak_split: str | None = None
    primary: tuple[str, str] | None = None  # (family, domain) of Tables 1, 2 and 4; default: the first ones
    strategies: tuple[StrategyGrid, ...] = ()  # names or {name, params, grid} mappings
    readout: Readout = field(default_factory=Readout)
    scoring: Scoring = field(default_factory=Scoring)
    engine: EngineSpec = field(default_factory=EngineSpec)
    resources: Resources = field(default_factory=Resources)
    tracking: Tracking = field(default_factory=Tracking)
    detectors: tuple[DetectorSpec, ...] = ()  # names or {name, params, threshold} mappings
    detection: Detection = field(default_factory=Detection)
    temperatures: tuple[NonNegFloat, ...] = ()  # () = no temperature dimension
    dynamics: DynamicsSpec | None = None  # None (or "dynamics:" with nothing under it) = the defaults
    task_group: Text | None = None  # the harness group or tag whose member readout.task is (railsweep.sweep.spec.members)

    @field_validator("temperatures", mode="before")
    @classmethod
    def _temperatures(cls, v: Any) -> Any:
        return () if v is None or v == () else parse_temperatures(v)

    @field_validator("readout", "scoring", "engine", "resources", "tracking", "detection", mode="before")
    @classmethod
    def _empty_section(cls, v: Any) -> Any:
        return {} if v is None else v  # "readout:" with nothing under it = the defaults

    @field_validator("families", mode="before")
    @classmethod
    def _families(cls, v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, dict):
            out = []
            for name, body in v.items():
                if not isinstance(body, dict | None):
                    raise ValueError(f"family {name!r} must be a mapping {{base, adapters}}, got {body!r}")
                out.append({"name": str(name), **(body or {})})
            return tuple(out)
        if isinstance(v, list | tuple):
            if isinstance(v, list) and not v:  # YAML's []; the stored () is the default, "all"
                raise ValueError("is an empty list: the grid would be empty (leave 'families' out for all)")
            return tuple({"name": str(n)} if isinstance(n, str | int) else n for n in v)
        raise ValueError("must be a list of family names or a mapping name -> {base, adapters}")

    @field_validator("domains", mode="before")
    @classmethod
    def _domains(cls, v: Any) -> Any:
        if v is None:
            return DOMAINS
        if not isinstance(v, list | tuple):
            raise ValueError(f"must be a list of domains out of {list(DOMAINS)}")
        if not v:
            raise ValueError("is an empty list: the grid would be empty (leave 'domains' out for all)")
        for d in v:
            if d not in DOMAINS:
                raise ValueError(f"unknown domain {d!r}; known domains: {list(DOMAINS)}")
        if len(set(v)) != len(v):
            raise ValueError(f"lists a domain twice: {list(v)}")
        return tuple(v)

    @field_validator("strategies", mode="before")
    @classmethod
    def _strategies(cls, v: Any) -> Any:
        return names_or_mappings(v, "strategy names or {name, params, grid} mappings")

    @field_validator("detectors", mode="before")
    @classmethod
    def _detectors(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise ValueError("is an empty list (leave 'detectors' out for a sweep without detection)")
        return names_or_mappings(v, "detector names or {name, params, threshold} mappings")

    @field_validator("primary", mode="before")
    @classmethod
    def _primary(cls, v: Any) -> Any:
        if v is None or (isinstance(v, tuple) and len(v) == 2):
            return v
        if not isinstance(v, dict):
            raise ValueError("must be a mapping {family: F, domain: D}")
        if set(v) != {"family", "domain"}:
            raise ValueError("must have exactly the keys 'family' and 'domain', got keys "
                             f"{sorted(map(str, v))}")  # fmt: skip
        return (v["family"], v["domain"])

    @field_validator("miniworld_preset")
    @classmethod
    def _world_preset(cls, v: str) -> str:
        if v not in WORLD_PRESETS:
            raise ValueError(f"unknown miniature-world preset; known: {list(WORLD_PRESETS)}")
        return v

    @model_validator(mode="after")
    def _grid_is_runnable(self) -> SweepSpec:
        if not self.strategies and not self.detectors and not self.temperatures:
            raise ValueError("the sweep has no strategies, detectors or temperatures: the grid is empty")
        if self.dynamics is not None and not self.temperatures:
            raise ValueError("a 'dynamics' block needs a 'temperatures' list to sample at")
        for sg in self.strategies:  # a strategy its registration says this backend cannot run
            check_backend(sg.name, self.engine.backend)
        self._answer_type_is_runnable()
        if self.task_group is not None:
            check_member(self.task_group, self.readout.task)
        if self.detectors:
            if twice := _twice([d.name for d in self.detectors]):
                raise ValueError(f"detector {twice[0]!r} is listed twice (one entry per detector)")
            if self.source != "miniworld":
                raise ValueError("detectors are scored against the miniature world's leak split: they need "
                                 "source 'miniworld'")  # fmt: skip
        names = [f.name for f in self.families]
        if dupes := _twice(names):
            raise ValueError(f"family {dupes[0]!r} is listed twice")
        if self.source == "paths" and not self.families:
            raise ValueError("source 'paths' needs a 'families' mapping with base and adapters")
        world_families = list(world_preset_config(self.miniworld_preset).families)
        for f in self.families:
            if self.source == "paths" and not f.base:
                raise ValueError(f"family {f.name!r} has no 'base' model path")
            if self.source != "paths" and f.name not in world_families:
                raise ValueError(f"unknown family {f.name!r} for the {self.miniworld_preset!r} miniature "
                                 f"world; known: {world_families}")  # fmt: skip
        if self.primary is not None:
            family, domain = self.primary
            known = names or (world_families if self.source == "miniworld" else [])
            if family not in known:
                raise ValueError(f"primary family {family!r} is not one of the sweep's families {known}")
            if domain not in self.domains:
                raise ValueError(f"primary domain {domain!r} is not one of the sweep's domains "
                                 f"{list(self.domains)}")  # fmt: skip
        return self

    def _answer_type_is_runnable(self) -> None:
        """A MATH-style sweep reads its own MATH-format ``data_dir``: the miniature worlds' benchmarks and the
        detectors scored against them are GSM8K-format (numeric golds)."""
        if self.readout.answer_type == "numeric":
            return
        if self.detectors:
            raise ValueError(f"readout.answer_type {self.readout.answer_type!r} cannot be used with "
                             "'detectors': the detectors are scored on the miniature world's GSM8K-format "
                             "items (leave 'detectors' out)")  # fmt: skip
        if self.source != "paths":
            raise ValueError(f"readout.answer_type {self.readout.answer_type!r} needs source 'paths' with a "
                             "MATH-format data_dir: the miniature worlds' benchmarks have GSM8K-format "
                             "numeric answers")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def sweep_id(self) -> str:
        """Stable hash of everything that shapes the results (not of tracking/resources, nor of the engine's
        batch, which changes speed, never samples). A field added later is left out at its default, so that
        older specs keep their ids: no detection, no temperatures, no group, the default answer rule and type,
        the built-in task; a custom task file's content counts."""
        d = self.to_dict()
        drop = {"tracking", "resources"} | (set() if d["detectors"] else {"detectors", "detection"})
        drop |= set() if self.temperatures else {"temperatures", "dynamics"}
        drop |= {"task_group"} if self.task_group is None else set()
        d = {k: v for k, v in d.items() if k not in drop}
        d["engine"].pop("max_batch_size")
        defaults = {"answer_rule": DEFAULT_ANSWER_RULE, "answer_type": DEFAULT_ANSWER_TYPE, "task": None}
        for key, default in defaults.items():
            if d["readout"][key] == default:
                d["readout"].pop(key)
        if self.readout.task is not None and not (spec := load_task_spec(self.readout.task)).builtin:
            d["readout"]["task_sha256"] = spec.sha256
        blob = json.dumps(d, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def check_inputs(self) -> None:
        """Before Ray or any service starts: a paths spec's inputs exist (a miniworld spec's families were
        checked against its world preset when the spec was built)."""
        if self.source != "miniworld":
            self.check_paths()

    def check_paths(self, only: Collection[str] | None = None) -> None:
        """A resolved (or ``paths``) spec's inputs exist on this machine: the data folder (a MATH-style one
        read in full), the leak split (needed with ``temperatures``), each family's base model and adapters
        (only the families named in ``only``, when given: those a world building beside the sweep has ready)."""
        if not self.data_dir or not Path(self.data_dir).is_dir():
            raise DataError(f"task data_dir {self.data_dir!r} is not a directory")
        if self.readout.answer_type == "math":  # every row before a model loads: a GSM8K folder is refused
            read_math_jsonl(Path(self.data_dir) / "test.jsonl")
        if self.leak_split and not Path(self.leak_split).is_file():
            raise DataError(f"leak_split file {self.leak_split!r} does not exist")
        for fam in self.families:
            if only is not None and fam.name not in only:
                continue
            if why := model_problem(fam.base):
                raise DataError(f"family {fam.name!r}: base model {why}")
            names = fam.adapter_dict()
            for d in self.domains:
                for need in (fam.clean_adapter(d), f"co_{d}"):
                    if need not in names:
                        raise ConfigError(f"family {fam.name!r} has no adapter {need!r} (needed for domain "
                                          f"{d!r}); adapters: {sorted(names)}")  # fmt: skip
            for aname, apath in fam.adapters:
                if why := model_problem(apath, "adapter_config.json"):
                    raise DataError(f"family {fam.name!r}: adapter {aname!r}: {why}")
        if self.temperatures and not self.leak_split:
            raise ConfigError(f"sweep {self.name!r}: 'temperatures' needs a leak split (which test items "
                              "M_co saw): the dynamics step compares leaked and unleaked items")  # fmt: skip

    @property
    def dynamics_settings(self) -> DynamicsSpec:
        """The dynamics step's settings (the defaults when the spec has temperatures but no block)."""
        return self.dynamics if self.dynamics is not None else DynamicsSpec()

    @property
    def primary_setting(self) -> tuple[str, str]:
        if self.primary:
            return self.primary
        if not self.families:
            raise ConfigError(f"sweep {self.name!r}: no families to pick the primary setting from")
        return (self.families[0].name, self.domains[0])


def _twice(names: list[str]) -> list[str]:
    return sorted({n for n in names if names.count(n) > 1})


def spec_from_dict(data: dict[str, Any], *, name: str = "sweep") -> SweepSpec:
    """Validate a parsed YAML mapping into a :class:`SweepSpec` (no model is touched)."""
    if not isinstance(data, dict):
        raise ConfigError(f"a sweep spec must be a mapping of keys, got {type(data).__name__}: {data!r:.80}")
    return validate(SweepSpec, {"name": name, **data})


def load_spec(preset_or_path: str | Path) -> SweepSpec:
    """A preset name (``paper``, ``mini``, ``smoke``) or a YAML file path → validated spec."""
    data, name = read_spec_data(preset_or_path)
    return spec_from_dict(data, name=name)


def read_spec_data(preset_or_path: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed YAML mapping of a preset or spec file (not validated yet) and the spec's name."""
    p = Path(preset_or_path)
    if str(preset_or_path) in PRESETS:
        p = PRESET_DIR / f"{preset_or_path}.yaml"
    if not p.is_file():
        raise ConfigError(f"sweep spec {str(preset_or_path)!r} is neither a preset {list(PRESETS)} nor a "
                          "YAML file")  # fmt: skip
    try:
        data = yaml.safe_load(read_utf8(p))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        what = " ".join(str(getattr(e, "problem", None) or e).split())
        raise DataError(f"{p}{where}: not valid YAML ({what})") from e
    return ({} if data is None else data), p.stem
