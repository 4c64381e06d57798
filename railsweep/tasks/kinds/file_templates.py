"""The Jinja environment task files render their prompts in, set up as lm-evaluation-harness sets up its own.

``StrictUndefined`` and ``keep_trailing_newline=True``, as lm-eval renders ``doc_to_text``/``doc_to_target``:
a template that names a missing field fails loudly instead of rendering an empty string. The environment is
sandboxed (a task file is data: its templates reach the row's fields and plain string methods only) and adds
the filters ``gsm8k_cot`` (:func:`railsweep.tasks.answers.gsm8k_solution.to_cot`, the shipped GSM8K file's
gold chain) and ``last_boxed`` (a MATH solution's gold answer).
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
