"""The Jinja environment task files render their prompts in, set up as lm-evaluation-harness sets up its own.

``StrictUndefined`` (a missing field fails loudly, not as an empty string) and ``keep_trailing_newline``, as
lm-eval renders. Sandboxed: a task file is data, its templates reach the row's fields and string methods only.
Filters: ``gsm8k_cot`` (:func:`~railsweep.tasks.answers.gsm8k_solution.to_cot`) and ``last_boxed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from railsweep.tasks.answers.gsm8k_solution import to_cot
from railsweep.tasks.answers.math_boxed import last_boxed

_ENV = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
_ENV.filters["gsm8k_cot"] = to_cot
_ENV.filters["last_boxed"] = last_boxed


def compile_template(source: str) -> Callable[[Mapping[str, Any]], str]:
    """``source`` as a function of one row; a syntax error raises :class:`jinja2.TemplateError`."""
    template = _ENV.from_string(source)
    return lambda row: template.render(**row)


def compile_condition(source: str) -> Callable[[Mapping[str, Any]], bool]:
    """A Jinja expression (``not empty and question.strip()``) as a predicate of one row."""
    expr = _ENV.compile_expression(source, undefined_to_none=False)
    return lambda row: bool(expr(**row))


__all__ = ["TemplateError", "compile_condition", "compile_template"]
