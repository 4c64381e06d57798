"""The typed schema behind sweep specs: constrained field types, and pydantic errors as one ConfigError line.

The sections are frozen pydantic dataclasses (:func:`schema`), plain dataclasses to the rest of railsweep,
validated at construction: numbers are strict (``'4'``, ``2.5`` or ``true`` are not an integer, NaN is not a
number), unknown keys are errors, and the first problem is one ConfigError naming the key and the value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, ConfigDict, Field, Strict, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

from railsweep.errors import ConfigError

T = TypeVar("T")

PosInt = Annotated[int, Strict(), Field(ge=1)]
NonNegInt = Annotated[int, Strict(), Field(ge=0)]
Retries = Annotated[int, Strict(), Field(ge=-1)]  # -1 = unlimited, Ray's and Tune's convention
NonNegFloat = Annotated[float, Strict(), Field(ge=0)]
PosFloat = Annotated[float, Strict(), Field(gt=0)]
Text = Annotated[str, Strict(), Field(min_length=1)]

_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def _device(value: str) -> str:
    if not _DEVICE_RE.match(value):
        raise ValueError("must be auto, cpu, mps, cuda or cuda:N")
    return value


Device = Annotated[str, Strict(), AfterValidator(_device)]

_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False)


def schema(where: str, inputs: tuple[str, ...] | None = None) -> Callable[[type[T]], type[T]]:
    """Class decorator: a frozen pydantic dataclass whose construction raises a ConfigError naming ``where``,
    the section's path in a spec; ``inputs``: the keys its YAML mapping may use (default: the field names)."""

    def wrap(cls: type[T]) -> type[T]:
        cls = pydantic_dataclass(frozen=True, config=_CONFIG)(cls)
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as e:
                raise ConfigError(describe(e, where)) from None

        cls.__init__ = __init__  # type: ignore[method-assign]
        _SECTIONS[where] = inputs if inputs is not None else tuple(cls.__dataclass_fields__)
        return cls

    return wrap


def validate(cls: type[T], data: Any, where: str = "") -> T:
    """``data`` (a parsed YAML mapping) validated into ``cls``; the first problem → ConfigError."""
    try:
        return cls.__pydantic_validator__.validate_python(data)  # type: ignore[attr-defined]
    except ValidationError as e:
        raise ConfigError(describe(e, where)) from None


# section path (list indices dropped) → keys its mapping may use; filled by @schema
_SECTIONS: dict[str, tuple[str, ...]] = {}


def _path(parts: list[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def describe(error: ValidationError, where: str = "") -> str:
    """One line for a pydantic ValidationError: the first problem, its key path and offending value."""
    problems = error.errors(include_url=False)
    first = problems[0]
    parts = ([where] if where else []) + list(first["loc"])
    loc = _path(parts)
    kind, value = first["type"], first.get("input")
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        parent = ".".join(str(p) for p in parts[:-1] if not isinstance(p, int))
        allowed = _SECTIONS.get(parent)
        msg = f"unknown key {parts[-1]!r} in {parent or 'the sweep spec'}"
        msg += f"; allowed: {sorted(allowed)}" if allowed else ""
    elif kind in ("value_error", "assertion_error") and isinstance(first.get("ctx", {}).get("error"),
                                                                   Exception):  # fmt: skip
        text = str(first["ctx"]["error"])
        msg = f"{loc}: {text}" if loc else text
        if loc and _scalar(value) and "got " not in text:
            msg += f", got {value!r}"
    elif kind == "missing":
        msg = f"{loc} is missing"
    elif kind in ("dataclass_type", "dataclass_exact_type", "dict_type"):
        allowed = _SECTIONS.get(".".join(str(p) for p in parts if not isinstance(p, int)))
        keys = f" with keys out of {sorted(allowed)}" if allowed else ""
        msg = f"{loc or 'the sweep spec'} must be a mapping{keys}, got {value!r}"
    else:
        text = first["msg"][:1].lower() + first["msg"][1:]
        msg = f"{loc}: {text}, got {value!r}" if loc else f"{text}, got {value!r}"
    if len(problems) > 1:
        msg += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return msg


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
