"""The strategy registry and its one registration per strategy (:func:`register`): the only place a strategy's
name is written down, from which its label, table rows, "switched off" setting, backends and roles derive.

This module sits below :mod:`railsweep.strategies` and imports none of it: the registry loads the built-in
strategies on first use, and they load no torch at import, so validating a spec, labelling its rows and
building its cells' configs load no torch (tests/test_import_layers.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from railsweep.errors import ConfigError
from railsweep.registry import Registry

BACKENDS = ("transformers", "vllm")  # railsweep.engines.config.EngineConfig.backend
PAPER_TABLES = ("1", "2", "3", "4")  # method.md §6
# Tables that show a strategy's main row only; the others (Table 4, the RailCap ablation) show every row.
MAIN_ROW_TABLES = frozenset({"1", "2", "3"})

STRATEGIES = Registry("strategy", "railsweep.strategies")

# What a strategy is to the rest of the code besides a row of its own (``register(..., roles=...)``)
ROLES = {
    "reference": "a row to read the others against, never the best of a column (All-Zero answers nothing)",
    "scatter": "drawn in the per-question scatter of clean against mitigated solve rates",
    "plain_samples": "its samples are the model's own, unaltered: a detector may read them (CDD)",
    "detection_readout": "the readout of M_co a sweep's detectors read (one strategy)",
}


@dataclass(frozen=True)
class NoOffSwitch:
    """A strategy config's declaration that no parameter setting switches the strategy off, and why."""

    reason: str


def _every_row(config: Any) -> bool:
    return True


@dataclass(frozen=True)
class Registration:
    """What a registered strategy tells the sweep and the tables (fields as :func:`register`'s arguments)."""

    name: str
    config_cls: type
    display: str
    label_of: Callable[[Any], str] | None
    tables: frozenset[str]
    main_row: Callable[[Any], bool]
    backends: frozenset[str]
    fallback: bool
    interventions: tuple[type, ...]
    roles: frozenset[str] = frozenset()

    @property
    def switched_off(self) -> dict[str, Any] | NoOffSwitch:
        return self.config_cls.switched_off

    def label(self, config: Any) -> str:
        return self.display if self.label_of is None else self.label_of(config)

    def shows(self, table: str, config: Any) -> bool:
        """Whether ``table`` (one of :data:`PAPER_TABLES`) has a row for this strategy at ``config``."""
        return table in self.tables and (table not in MAIN_ROW_TABLES or self.main_row(config))

    def runs_on(self, backend: str) -> bool:
        return backend in self.backends or self.fallback

    @property
    def decode(self) -> str:
        """The throughput-table rate its cells are priced at: an intervention's own ``decode``, else plain."""
        return next((iv.decode for iv in self.interventions if hasattr(iv, "decode")), "plain")


def _check(
    name: str, config_cls: type, display: str, tables: frozenset[str], backends: frozenset[str],
    roles: frozenset[str] = frozenset(),
) -> None:
    """TypeError (a programming error, raised at import) unless the registration is complete."""
    off = getattr(config_cls, "switched_off", None)
    if not isinstance(off, dict | NoOffSwitch) or (isinstance(off, NoOffSwitch) and not off.reason.strip()):
        raise TypeError(
            f"strategy {name!r}: {config_cls.__name__}.switched_off must be the parameters that switch it "
            f"off (a dict) or a NoOffSwitch with a reason, got {off!r}"
        )
    if not display.strip():
        raise TypeError(f"strategy {name!r}: display label is empty")
    if not tables <= set(PAPER_TABLES):
        raise TypeError(f"strategy {name!r}: tables {sorted(tables)} are not among {list(PAPER_TABLES)}")
    if not backends or not backends <= set(BACKENDS):
        raise TypeError(f"strategy {name!r}: backends {sorted(backends)} must be some of {list(BACKENDS)}")
    if not roles <= set(ROLES):
        raise TypeError(f"strategy {name!r}: roles {sorted(roles - set(ROLES))} are not among {list(ROLES)}")


def register(
    name: str, config_cls: type, *, display: str, label: Callable[[Any], str] | None = None,
    tables: Iterable[str] = (), main_row: Callable[[Any], bool] = _every_row,
    backends: Iterable[str] = BACKENDS, fallback: bool = False, interventions: tuple[type, ...] = (),
    roles: Iterable[str] = (),
) -> Callable[[type], type]:
    """Class decorator: one strategy's whole registration.

    ``label``: config → text, when the label shows parameters; ``main_row``: config → whether that point is the
    row Tables 1–3 show; ``interventions``: the spec types it sends to the engine, which ``backends`` apply;
    ``fallback``: elsewhere its cells run on a transformers engine over the same weights (else refused). The
    config class must declare ``switched_off``: the parameters with which the strategy reproduces Identity sample
    for sample (the conformance suite checks it), or a :class:`NoOffSwitch` saying why no setting does.
    """
    tables, backends, roles = frozenset(tables), frozenset(backends), frozenset(roles)
    _check(name, config_cls, display, tables, backends, roles)
    info = Registration(name, config_cls, display, label, tables, main_row, backends, fallback,
                        tuple(interventions), roles)  # fmt: skip
    return STRATEGIES.register(name, config_cls, info)


def registration(name: str) -> Registration:
    """The registration of a strategy; unknown name → ConfigError with a "did you mean"."""
    return STRATEGIES.info(name)


def with_role(role: str) -> tuple[Registration, ...]:
    """The registrations that declare ``role`` (one of :data:`ROLES`), in name order."""
    if role not in ROLES:
        raise ValueError(f"unknown strategy role {role!r}; roles: {list(ROLES)}")
    return tuple(STRATEGIES.info(n) for n in sorted(STRATEGIES.known()) if role in STRATEGIES.info(n).roles)


def detection_readout() -> str:
    """The one strategy whose cells are a sweep's detection readout (role ``detection_readout``)."""
    (reg,) = with_role("detection_readout")
    return reg.name


def strategy_label(name: str, params: dict[str, Any] | None = None) -> str:
    """The display label of a strategy at ``params`` (defaults filled in), e.g. ``RailCap n=4 cap``."""
    return registration(name).label(STRATEGIES.make_config(name, params))


def in_table(name: str, params: dict[str, Any] | None, table: str) -> bool:
    """Whether paper table ``table`` shows the strategy at ``params``: decided by parameters, never by label."""
    return registration(name).shows(table, STRATEGIES.make_config(name, params))


def check_backend(name: str, backend: str) -> None:
    """ConfigError naming both unless a sweep on ``backend`` can run the strategy."""
    reg = registration(name)
    if not reg.runs_on(backend):
        raise ConfigError(
            f"strategy {name!r} does not run on the {backend!r} backend; it runs on: {', '.join(sorted(reg.backends))}"
        )
