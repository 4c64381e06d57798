"""Sweep specs: YAML → validated frozen dataclasses → the grid of cells.

A spec names the model families (the miniature world, or explicit base +
adapter paths), the domains, the strategies with their own parameter grids,
the shared readout (m, T, seed), the engine backend, the resources and the
MLflow tracking server. The classes below are the one typed schema of a spec
(frozen pydantic dataclasses, see :mod:`railsweep.sweep._schema`): building
one, from YAML in :func:`spec_from_dict` or in Python (``dataclasses.replace``),
validates every type, range and cross-field rule (unknown keys, strategy or
parameter names, RailCap n outside [1, MAX_N], a strategy on a backend its
registration does not run on, empty grids, a primary setting outside the
grid, a MATH-style ``readout.answer_type`` with the lm_eval rule, detectors or
the miniature world) without touching a model. :meth:`SweepSpec.resolve` then resolves model paths
(building or reusing the miniature world) and checks the families exist. Both
run in the driver before any trial starts, so a bad spec costs one clear error.

Cells: one clean reference per (family, clean adapter) — strategy Identity on
M_cl — and one mitigated cell per (family, domain, strategy, parameter point),
evaluated on M_co of that domain. Every cell has a stable id (the hash of its
resolved config, see ``railsweep.config.CellConfig.cell_id``).

Detection: ``detectors`` (names or ``{name, params, threshold}``, checked against
:mod:`railsweep.detection`'s registry) makes the sweep also score those detectors
for every family x domain of the miniature world against its leak split
(:mod:`railsweep.sweep.detection`); cdd and perturb add the readout cells they
read (:mod:`railsweep.sweep.detect_cells`). With detectors, ``strategies`` may be
empty: a detection-only sweep.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, Strict, field_validator, model_validator

from railsweep.argtypes import model_problem
from railsweep.dynamics.regimes import E_CUT
from railsweep.errors import ConfigError, DataError
from railsweep.strategy_registry import PAPER_TABLES, STRATEGIES, check_backend
from railsweep.sweep._schema import (
    Device,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    Retries,
    Text,
    schema,
    validate,
)
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, DEFAULT_ANSWER_TYPE, AnswerRule, AnswerType
from railsweep.tasks.grading import check_answer_type
from railsweep.tasks.math_data import read_math_jsonl
from railsweep.tasks.task_file import TaskSpec
from railsweep.tasks.task_ref import load_task_spec

PRESET_DIR = Path(__file__).resolve().parent / "presets"  # package data: installed with the wheel
PRESETS = (
    "paper", "mini", "mini_six", "mini_ablation", "mini_full", "mini_detect", "mini_dynamics", "mini_replica", "smoke",
    "smollm2_table3", "smollm2_table4",
)  # fmt: skip
DOMAINS = ("gsm8k", "pq")
TABLES = (*PAPER_TABLES, "all")  # which rows each shows: the strategies' registrations (strategy_registry)


@schema("families", inputs=("base", "adapters"))
class FamilySpec:
    """One model family: a base model and its LoRA adapters (clean, co_<domain>)."""

    name: Text
    base: str = ""  # path or hub id; filled by resolve() for the miniature world
    adapters: tuple[tuple[Text, Text], ...] = ()

    @field_validator("adapters", mode="before")
    @classmethod
    def _adapters(cls, v: Any) -> Any:
        if isinstance(v, dict):  # YAML: {name: path}
            return tuple(sorted(v.items()))
        return () if v is None else v

    def adapter_dict(self) -> dict[str, str]:
        return dict(self.adapters)

    def clean_adapter(self, domain: str) -> str:
        names = self.adapter_dict()
        return f"clean_{domain}" if f"clean_{domain}" in names else "clean"


@schema("strategies", inputs=("name", "params", "grid"))
class StrategyGrid:
    """A strategy with fixed ``params`` and a ``grid`` crossed into parameter points.

    Every point is checked through the strategy's own config (unknown names, RailCap n outside [1, MAX_N], ...).
    """

    name: Text
    params: tuple[tuple[str, Any], ...] = ()
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, dict):  # YAML: {param: value}
            return tuple(sorted(v.items()))
        return v

    @field_validator("grid", mode="before")
    @classmethod
    def _grid(cls, v: Any) -> Any:
        if v is None:
            return ()
        if not isinstance(v, dict):  # YAML: {param: [values]} (a single value is a one-point axis)
            return v
        items = []
        for k, vals in sorted(v.items()):
            vals = tuple(vals) if isinstance(vals, list | tuple) else (vals,)
            if not vals:
                raise ValueError(f"grid.{k} is an empty list: the grid would be empty")
            items.append((k, vals))
        return tuple(items)

    @model_validator(mode="after")
    def _points_are_valid_configs(self) -> StrategyGrid:
        STRATEGIES.classes(self.name)  # unknown strategy → ConfigError listing the known ones
        for point in self.points():
            STRATEGIES.make_config(self.name, point)  # RailCap n outside [1, MAX_N], ...
        return self

    def points(self) -> list[dict[str, Any]]:
        keys = [k for k, _ in self.grid]
        out = []
        for values in itertools.product(*[v for _, v in self.grid]):
            out.append({**dict(self.params), **dict(zip(keys, values))})
        return out


@schema("detectors", inputs=("name", "params", "threshold"))
class DetectorSpec:
    """A detector of :mod:`railsweep.detection` with its ``params`` (its config fields) and an optional
    fixed ``threshold`` (None: calibrated on the control items, else the detector's own default).

    The name, the params and the threshold are checked through the detector's own config and
    :func:`railsweep.detection.run.check_threshold` (unknown names get a "did you mean").
    """

    name: Text
    params: tuple[tuple[str, Any], ...] = ()
    threshold: Annotated[float, Strict()] | None = None

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, dict):  # YAML: {param: value}
            return tuple(sorted((k, tuple(x) if isinstance(x, list) else x) for k, x in v.items()))
        return v

    @model_validator(mode="after")
    def _is_a_known_detector(self) -> DetectorSpec:
        from railsweep.detection.run import Thresholding, check_threshold

        check_threshold(self.build(), Thresholding(self.threshold))
        return self

    def build(self) -> Any:
        """The detector object (its config validated)."""
        from railsweep.detection import build_detector

        return build_detector(self.name, dict(self.params))


@schema("detection")
class Detection:
    """How the ``detectors`` are scored: ``control_rate``, the highest flag rate on the control items when a
    threshold is calibrated on them; ``n_control``, fresh control problems (None = as many as test items);
    ``batch_size``, texts per forward pass of the model-side detectors."""

    control_rate: Annotated[float, Strict(), Field(ge=0, le=1)] = 0.01
    n_control: PosInt | None = None
    batch_size: PosInt = 16


# Fields take the constrained types of railsweep.sweep._schema (PosInt, NonNegFloat, ...): a plain ``int``
# would accept '4' and 0.


@schema("readout")
class Readout:
    """``answer_rule``: how every cell's responses are graded (railsweep.tasks.grading): ``final`` (the
    last "The answer is N", else the last number), ``first`` (the first one, else the last number) or
    ``lm_eval`` (lm-evaluation-harness gsm8k_cot's filters and comparison). ``answer_type``: what a gold
    answer is, ``numeric`` (GSM8K-format data) or ``math`` (MATH-format data, LaTeX in ``\\boxed{}``, graded by
    railsweep.tasks.math_grading under ``final`` or ``first`` only). ``task``: a task file or a shipped task's
    name (railsweep.tasks.task_file; ``data_dir`` is its ``{task_dir}``), None = the built-in task; a file's path
    is made absolute when the spec loads, since the trials run in directories of their own."""

    m: PosInt = 50
    temperature: NonNegFloat = 0.7  # finite: NaN and infinities are rejected
    max_new_tokens: PosInt = 256
    seed: NonNegInt = 0
    batch_size: PosInt = 64  # prompts per engine call (m rows each); engine.max_batch_size: rows
    limit: PosInt | None = None  # first N test questions (None = all)
    answer_rule: AnswerRule = DEFAULT_ANSWER_RULE
    answer_type: AnswerType = DEFAULT_ANSWER_TYPE
    task: Text | None = None

    @model_validator(mode="after")
    def _rule_reads_the_type(self) -> Readout:
        if self.task is not None:
            spec = load_task_spec(self.task)  # checked completely now, before any cell is built
            if isinstance(spec, TaskSpec) and not spec.builtin:  # a trial runs in its own directory
                object.__setattr__(self, "task", str(spec.source.resolve()))
        else:
            check_answer_type(self.answer_type, self.answer_rule)  # lm_eval is GSM8K's harness rule
        return self


@schema("scoring")
class Scoring:
    B: PosInt = 50
    n_boot: PosInt = 1000
    seed: NonNegInt = 0


@schema("engine")
class EngineSpec:
    backend: Literal["transformers", "vllm"] = "transformers"
    device: Device = "auto"  # auto, cpu, mps, cuda, cuda:N
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    # Most rows (sequences) one engine decodes together: the transformers engine's batch, vLLM's max_num_seqs.
    # None = the backend's own default, which fills the machine (see railsweep.engines.config.EngineConfig).
    # Independent of readout.batch_size (prompts per engine call); samples do not depend on it.
    max_batch_size: PosInt | None = None


@schema("resources")
class Resources:
    """``engine_replicas``: engine actors per family (None = the cores, or GPUs, dealt out over the families,
    at least one each: :func:`railsweep.sweep.pool.engine_layout`);
    ``engine_cpus``: CPUs per engine actor when no GPU is present (None = fit the cluster);
    ``slots_per_engine``: concurrent trials per engine actor (one decodes while another grades);
    ``max_restarts``, ``max_task_retries``, ``max_failures``: -1 means unlimited (Ray's convention)."""

    engine_replicas: PosInt | None = None
    engine_cpus: PosFloat | None = None
    trial_cpus: PosFloat = 0.25
    slots_per_engine: PosInt = 2
    max_restarts: Retries = 3
    max_task_retries: Retries = 3
    max_failures: Retries = 1  # Tune retries of a failed trial
    clean_wait_s: PosFloat = 1800.0  # how long a mitigated cell waits for its clean reference
    # torch/OpenMP threads per engine actor (None = the CPUs it holds, rounded down, at least 1) and the
    # OpenMP wait policy of its threads (PASSIVE: idle threads sleep instead of spinning on shared cores)
    engine_threads: PosInt | None = None
    omp_wait_policy: Literal["PASSIVE", "ACTIVE"] = "PASSIVE"


@schema("tracking")
class Tracking:
    uri: Text = "http://127.0.0.1:5000"
    experiment: Text = "railsweep"


@schema("dynamics")
class DynamicsSpec:
    """The dynamics step of a sweep with ``temperatures`` (railsweep.dynamics.settings.DynamicsSettings):
    ``n_boot``: item resamples for the fit CIs; ``n_boot_gain``: for the gain CIs; ``min_items``: positions
    reached by fewer items are left out of a group's mean NLL curve; ``e_cut``: nats per token above which
    E is decoherence; ``forcing_batch``: sequences per teacher-forcing forward pass; ``device``: where the
    teacher forcing runs; ``seed``: the bootstrap RNG; ``base``: also sample and teacher-force each family's base
    model without an adapter, as model ``base`` (the model a pretraining-replica world's duplicates went into)."""

    n_boot: PosInt = 200
    n_boot_gain: PosInt = 1000
    min_items: PosInt = 5
    e_cut: PosFloat = E_CUT
    forcing_batch: PosInt = 8
    device: Device = "cpu"
    seed: NonNegInt = 0
    base: Annotated[bool, Strict()] = False


def parse_temperatures(v: Any) -> tuple[float, ...]:
    """``temperatures:`` of a spec → sorted floats (``greedy`` = 0.0); a bad or repeated value → ValueError
    naming it."""
    if not isinstance(v, list | tuple):
        raise ValueError(f"must be a list of temperatures ('greedy' or numbers >= 0), got {v!r}")
    if not v:
        raise ValueError("is an empty list (leave 'temperatures' out for no temperature dimension)")
    out: list[float] = []
    for t in v:
        if isinstance(t, str) and t.strip().lower() == "greedy":
            t = 0.0
        elif isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
            raise ValueError(
                f"bad temperature {t!r}: each must be 'greedy' or a finite number >= 0 (0 = greedy)"
            )
        if float(t) in out:
            shown = "greedy (0)" if float(t) == 0 else repr(t)
            raise ValueError(f"lists the temperature {shown} twice: {list(v)}")
        out.append(float(t))
    return tuple(sorted(out))


@schema("")
class SweepSpec:
    """The whole sweep; its fields are the YAML keys. ``families``: a list of miniature-world family names
    or a mapping name → {base, adapters}; ``strategies``: names or {name, params, grid} mappings;
    ``primary``: {family, domain}; ``detectors``: names or {name, params, threshold} mappings (scored in
    the same sweep, see the module docstring); ``detection``: their scoring settings; ``temperatures``: a
    sweep dimension of sampling temperatures (``greedy`` or numbers >= 0) at which both M_cl and M_co are
    sampled, followed by the dynamics step (``dynamics``, see :mod:`railsweep.dynamics.step`)."""

    name: Text
    source: Literal["miniworld", "paths"] = "miniworld"
    miniworld_preset: str = "mini"
    cache_dir: str | None = None
    families: tuple[FamilySpec, ...] = ()  # () = every family of the miniature world
    domains: tuple[str, ...] = DOMAINS
    data_dir: str | None = None  # paths: task dir in readout.answer_type's format; miniworld: the world's
    leak_split: str | None = None
    primary: tuple[str, str] | None = None  # (family, domain) of Tables 1, 2 and 4; default: the first ones
    strategies: tuple[StrategyGrid, ...] = ()
    readout: Readout = field(default_factory=Readout)
    scoring: Scoring = field(default_factory=Scoring)
    engine: EngineSpec = field(default_factory=EngineSpec)
    resources: Resources = field(default_factory=Resources)
    tracking: Tracking = field(default_factory=Tracking)
    detectors: tuple[DetectorSpec, ...] = ()
    detection: Detection = field(default_factory=Detection)
    temperatures: tuple[NonNegFloat, ...] = ()  # () = no temperature dimension
    dynamics: DynamicsSpec | None = None  # None (or "dynamics:" with nothing under it) = the defaults

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
        """A list of miniature-world family names, or a mapping name → {base, adapters}; absent = all."""
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
        """A list of strategy names or mappings {name, params, grid}."""
        return _names_or_mappings(v, "strategy names or {name, params, grid} mappings")

    @field_validator("detectors", mode="before")
    @classmethod
    def _detectors(cls, v: Any) -> Any:
        """A list of detector names or mappings {name, params, threshold}."""
        if isinstance(v, list) and not v:
            raise ValueError("is an empty list (leave 'detectors' out for a sweep without detection)")
        return _names_or_mappings(v, "detector names or {name, params, threshold} mappings")

    @field_validator("primary", mode="before")
    @classmethod
    def _primary(cls, v: Any) -> Any:
        """``{family: F, domain: D}``."""
        if v is None or (isinstance(v, tuple) and len(v) == 2):
            return v
        if not isinstance(v, dict):
            raise ValueError("must be a mapping {family: F, domain: D}")
        if set(v) != {"family", "domain"}:
            raise ValueError(
                f"must have exactly the keys 'family' and 'domain', got keys {sorted(map(str, v))}"
            )
        return (v["family"], v["domain"])

    @field_validator("miniworld_preset")
    @classmethod
    def _world_preset(cls, v: str) -> str:
        from railsweep.miniworld.presets import PRESETS as WORLD_PRESETS

        if v not in WORLD_PRESETS:
            raise ValueError(f"unknown miniature-world preset; known: {list(WORLD_PRESETS)}")
        return v

    @model_validator(mode="after")
    def _grid_is_runnable(self) -> SweepSpec:
        from railsweep.miniworld.presets import preset_config as world_preset_config  # imports torch (~2 s)

        if not self.strategies and not self.detectors and not self.temperatures:
            raise ValueError("the sweep has no strategies, detectors or temperatures: the grid is empty")
        if self.dynamics is not None and not self.temperatures:
            raise ValueError("a 'dynamics' block needs a 'temperatures' list to sample at")
        for sg in self.strategies:  # a strategy its registration says this backend cannot run
            check_backend(sg.name, self.engine.backend)
        self._answer_type_is_runnable()
        if self.detectors:
            det_names = [d.name for d in self.detectors]
            twice = sorted({n for n in det_names if det_names.count(n) > 1})
            if twice:
                raise ValueError(f"detector {twice[0]!r} is listed twice (one entry per detector)")
            if self.source != "miniworld":
                raise ValueError(
                    "detectors are scored against the miniature world's leak split: they need source 'miniworld'"
                )
        names = [f.name for f in self.families]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"family {dupes[0]!r} is listed twice")
        if self.source == "paths":
            if not self.families:
                raise ValueError("source 'paths' needs a 'families' mapping with base and adapters")
            for f in self.families:
                if not f.base:
                    raise ValueError(f"family {f.name!r} has no 'base' model path")
        world_families = list(world_preset_config(self.miniworld_preset).families)
        if self.source != "paths":
            for f in self.families:
                if f.name not in world_families:
                    raise ValueError(
                        f"unknown family {f.name!r} for the {self.miniworld_preset!r} miniature world; "
                        f"known: {world_families}"
                    )
        if self.primary is not None:
            family, domain = self.primary
            known = names or (world_families if self.source == "miniworld" else [])
            if family not in known:
                raise ValueError(f"primary family {family!r} is not one of the sweep's families {known}")
            if domain not in self.domains:
                raise ValueError(
                    f"primary domain {domain!r} is not one of the sweep's domains {list(self.domains)}"
                )
        return self

    def _answer_type_is_runnable(self) -> None:
        """A MATH-style sweep reads its own MATH-format ``data_dir``: the miniature worlds' benchmarks and the
        detectors scored against them are GSM8K-format (numeric golds)."""
        if self.readout.answer_type == "numeric":
            return
        if self.detectors:
            raise ValueError(
                f"readout.answer_type {self.readout.answer_type!r} cannot be used with 'detectors': the detectors "
                "are scored on the miniature world's GSM8K-format items (leave 'detectors' out)"
            )
        if self.source != "paths":
            raise ValueError(
                f"readout.answer_type {self.readout.answer_type!r} needs source 'paths' with a MATH-format "
                "data_dir: the miniature worlds' benchmarks have GSM8K-format numeric answers"
            )

    # ------------------------------------------------------------ identity
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def sweep_id(self) -> str:
        """Stable hash of everything that shapes the results (not of tracking/resources)."""
        d = self.to_dict()
        for k in ("tracking", "resources"):
            d.pop(k)
        if not d["detectors"]:  # a sweep without detection keeps the id it had before detection existed
            d.pop("detectors")
            d.pop("detection")
        d["engine"].pop("max_batch_size")  # the engine's batch changes speed, never samples
        if not self.temperatures:  # specs without the temperature dimension keep their ids
            d.pop("temperatures")
            d.pop("dynamics")
        if d["readout"]["answer_rule"] == DEFAULT_ANSWER_RULE:  # so do specs graded by the default rule
            d["readout"].pop("answer_rule")
        if d["readout"]["answer_type"] == DEFAULT_ANSWER_TYPE:  # and numeric (GSM8K) specs
            d["readout"].pop("answer_type")
        if self.readout.task is None:  # and specs on the built-in task
            d["readout"].pop("task")
        elif not (spec := load_task_spec(self.readout.task)).builtin:  # a custom file: its content counts
            d["readout"]["task_sha256"] = spec.sha256
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
        if spec.temperatures and not spec.leak_split:
            raise ConfigError(
                f"sweep {spec.name!r}: 'temperatures' needs a leak split (which test items M_co saw): "
                "the dynamics step compares leaked and unleaked items"
            )
        return spec

    def check_inputs(self) -> None:
        """The cheap part of :meth:`resolve`, run before Ray or any service starts: a miniworld spec's
        families must be in its world preset's configuration (known without building the world); a paths
        spec's base models, adapters, data folder and leak split must exist on this machine."""
        if self.source == "miniworld":
            from railsweep.miniworld.presets import preset_config

            known = preset_config(self.miniworld_preset).families
            for f in self.families:
                if f.name not in known:
                    raise ConfigError(
                        f"unknown family {f.name!r} for the {self.miniworld_preset!r} miniature world; "
                        f"known: {list(known)}"
                    )
            return
        self._check_paths()
        if self.temperatures and not self.leak_split:
            raise ConfigError(
                f"sweep {self.name!r}: 'temperatures' needs a leak split (which test items M_co saw): "
                "the dynamics step compares leaked and unleaked items"
            )

    @property
    def dynamics_settings(self) -> DynamicsSpec:
        """The dynamics step's settings (the defaults when the spec has temperatures but no block)."""
        return self.dynamics if self.dynamics is not None else DynamicsSpec()

    def _check_paths(self) -> None:
        if not self.data_dir or not Path(self.data_dir).is_dir():
            raise DataError(f"task data_dir {self.data_dir!r} is not a directory")
        if self.readout.answer_type == "math":  # every row before a model loads: a GSM8K folder is refused
            read_math_jsonl(Path(self.data_dir) / "test.jsonl")
        if self.leak_split and not Path(self.leak_split).is_file():
            raise DataError(f"leak_split file {self.leak_split!r} does not exist")
        for fam in self.families:
            why = model_problem(fam.base)
            if why:
                raise DataError(f"family {fam.name!r}: base model {why}")
            names = fam.adapter_dict()
            for d in self.domains:
                for need in (fam.clean_adapter(d), f"co_{d}"):
                    if need not in names:
                        raise ConfigError(
                            f"family {fam.name!r} has no adapter {need!r} (needed for domain {d!r}); "
                            f"adapters: {sorted(names)}"
                        )
            for aname, apath in fam.adapters:
                why = model_problem(apath, "adapter_config.json")
                if why:
                    raise DataError(f"family {fam.name!r}: adapter {aname!r}: {why}")

    @property
    def primary_setting(self) -> tuple[str, str]:
        if self.primary:
            return self.primary
        if not self.families:
            raise ConfigError(f"sweep {self.name!r}: no families to pick the primary setting from")
        return (self.families[0].name, self.domains[0])


# ---------------------------------------------------------------- loading


def spec_from_dict(data: dict[str, Any], *, name: str = "sweep") -> SweepSpec:
    """Validate a parsed YAML mapping into a :class:`SweepSpec` (no model is touched)."""
    if not isinstance(data, dict):
        raise ConfigError(f"a sweep spec must be a mapping of keys, got {type(data).__name__}: {data!r:.80}")
    return validate(SweepSpec, {"name": name, **data})


def load_spec(preset_or_path: str | Path) -> SweepSpec:
    """A preset name (``paper``, ``mini``, ``smoke``) or a YAML file path → validated spec."""
    p = Path(preset_or_path)
    if str(preset_or_path) in PRESETS:
        p = PRESET_DIR / f"{preset_or_path}.yaml"
    if not p.is_file():
        raise ConfigError(
            f"sweep spec {str(preset_or_path)!r} is neither a preset {list(PRESETS)} nor a YAML file"
        )
    from railsweep.tasks.text import read_utf8

    try:
        data = yaml.safe_load(read_utf8(p))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        what = " ".join(str(getattr(e, "problem", None) or e).split())
        raise DataError(f"{p}{where}: not valid YAML ({what})") from e
    return spec_from_dict({} if data is None else data, name=p.stem)


def _names_or_mappings(v: Any, what: str) -> Any:
    """A YAML list of names or mappings, each name as ``{"name": name}``; None is the empty tuple."""
    if v is None:
        return ()
    if not isinstance(v, list | tuple):
        raise ValueError(f"must be a list of {what}")
    return tuple({"name": x} if isinstance(x, str) else x for x in v)
