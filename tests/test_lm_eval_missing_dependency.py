"""A harness task whose own code needs a package lm_eval made optional: one error naming the package and the
harness extra that brings it (railsweep.tasks.lm_eval.spec.missing_task_dependency), before any model loads."""

from __future__ import annotations

from railsweep.errors import MissingDependencyError
from railsweep.tasks.lm_eval.spec import missing_task_dependency

REQUIRES = [
    "accelerate>=0.26.0",
    'langdetect; extra == "ifeval"',
    'immutabledict; extra == "ifeval"',
    'sympy>=1.12; extra == "math"',
    'antlr4-python3-runtime==4.11; extra == "math"',
]


def test_a_missing_module_is_named_with_the_extra_that_declares_it():
    e = missing_task_dependency("lm_eval:ifeval", ModuleNotFoundError("No module named 'langdetect'", name="langdetect"),
                                REQUIRES)  # fmt: skip
    assert isinstance(e, MissingDependencyError)
    assert "'langdetect' is not installed" in str(e) and "lm_eval:ifeval" in str(e)
    assert e.install_command == "pip install 'lm_eval[ifeval]'"


def test_a_submodule_is_matched_by_its_top_level_distribution():
    e = missing_task_dependency("lm_eval:minerva_math_algebra", ModuleNotFoundError("no", name="antlr4.tree"), REQUIRES)
    assert e.install_command == "pip install 'lm_eval[math]'" and "'antlr4'" in str(e)


def test_the_harness_naming_its_extra_itself_is_taken_at_its_word():
    said = ModuleNotFoundError("`sympy`, `math_verify` and `antlr4-python3-runtime==4.11` are required for generating "
                               "translation task prompt templates. Please install the required packages via pip "
                               "install lm-eval[math] or pip install -e .[math]")  # fmt: skip
    e = missing_task_dependency("lm_eval:minerva_math_algebra", said, [])
    assert e.install_command == "pip install 'lm_eval[math]'"
    assert "sympy, math_verify, antlr4-python3-runtime==4.11" in str(e)


def test_a_module_no_extra_declares_gets_its_own_pip_line():
    e = missing_task_dependency("lm_eval:x", ModuleNotFoundError("no", name="nltk"), REQUIRES)
    assert e.install_command == "pip install nltk" and "'nltk' is not installed" in str(e)
