"""A name → (class, config dataclass) registry with validated configs: the shape strategies and detectors share.

``@registry.register(name, ConfigCls)`` fills it (importing ``builtins`` registers them all); an unknown name or
parameter is one :class:`~railsweep.errors.ConfigError` naming it (with a "did you mean"). An entry may carry an
``info`` record (a strategy's :class:`railsweep.strategy_registry.Registration`), read with :meth:`Registry.info`.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
from collections.abc import Callable
from typing import Any

from railsweep.errors import ConfigError


class Registry:
    def __init__(self, kind: str, builtins: str):
        self.kind = kind  # "strategy", "detector": used in error messages
        self.builtins = builtins  # the module whose import registers every built-in entry
        self._entries: dict[str, tuple[type, type]] = {}
        self._info: dict[str, Any] = {}

    def register(self, name: str, config_cls: type, info: Any = None) -> Callable[[type], type]:
        """Class decorator: ``@registry.register("railcap", RailCapConfig)``; ``info``: the entry's record."""

        def deco(cls: type) -> type:
            if name in self._entries and self._entries[name][0] is not cls:
                raise ConfigError(f"{self.kind} {name!r} registered twice")
            cls.name = name
            self._entries[name] = (cls, config_cls)
            self._info[name] = info
            return cls

        return deco

    def _loaded(self) -> dict[str, tuple[type, type]]:
        importlib.import_module(self.builtins)
        return self._entries

    def known(self) -> list[str]:
        return sorted(self._loaded())

    def classes(self, name: str) -> tuple[type, type]:
        """(class, config class) for a registered name; unknown name → ConfigError."""
        entries = self._loaded()
        if name not in entries:
            hint = difflib.get_close_matches(name, entries, n=1)
            did = f" (did you mean {hint[0]!r}?)" if hint else ""
            plural = "strategies" if self.kind == "strategy" else f"{self.kind}s"
            raise ConfigError(f"unknown {self.kind} {name!r}{did}; known {plural}: {', '.join(sorted(entries))}")
        return entries[name]

    def info(self, name: str) -> Any:
        """The record registered with ``name`` (None if it has none); unknown name → ConfigError."""
        self.classes(name)
        return self._info[name]

    def make_config(self, name: str, params: dict[str, Any] | None = None) -> Any:
        """Validate ``params`` against the config dataclass of ``name`` and build it."""
        _, config_cls = self.classes(name)
        params = dict(params or {})
        fields = {f.name for f in dataclasses.fields(config_cls)}
        unknown = sorted(set(params) - fields)
        if unknown:
            raise ConfigError(
                f"unknown parameter(s) {unknown} for {self.kind} {name!r}; allowed: {sorted(fields) or 'none'}"
            )
        try:
            return config_cls(**params)
        except TypeError as e:  # wrong types surface here
            raise ConfigError(f"bad parameters {params} for {self.kind} {name!r}: {e}") from e

    def build(self, name: str, params: dict[str, Any] | None = None, *, config: Any = None) -> Any:
        """The entry ``name`` over its config: ``config`` when given (built and checked by :meth:`make_config`
        already, e.g. a cell's), else one made from ``params``."""
        cls, _ = self.classes(name)
        return cls(self.make_config(name, params) if config is None else config)
