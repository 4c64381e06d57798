"""The package's layers import only what their rule allows, function-local imports included.

Every ``import`` / ``from ... import`` of every module under ``railsweep/`` is
read with ``ast`` (top-level, inside functions and under ``TYPE_CHECKING``
alike) and checked against :data:`RULES`, a table of one row per rule:

- ``interventions`` (specs and their batched math) is the floor: it imports
  neither ``engines`` nor ``strategies``; both of those may import it.
- ``engines`` never import ``strategies``.
- ``strategies`` use the engines only through their public protocol,
  ``railsweep.engines.base`` (Request / SamplingSpec / Sample / Completion /
  Engine); never an engine's internals.
- ``metrics`` import numpy, the standard library, ``railsweep.metrics`` and
  ``railsweep.errors`` only (``import railsweep.metrics`` pulls in no torch, no pandas).
- only ``sweep/`` (the distributed sweep), ``commands/`` (CLI entry points that start or query the
  services) and the named Ray-facing modules of other layers (:data:`RAY_FACING`: the n-gram scan as a Ray
  Data job, the dynamics step's Ray tasks) import ``ray`` or ``mlflow``; the entry scripts under ``sweeps/`` are outside the package.
- ``services`` (the local Ray head, MLflow server and Ray's token) import the standard library,
  ``railsweep.errors`` and themselves only: they drive Ray and MLflow through their command lines and HTTP.
- ``ray.init`` is called by entry points only: the ``railsweep`` commands and the sweep job's entry module
  (:data:`RAY_INIT_CALLERS`); the library joins the Ray its caller started.
- ``detection`` and ``dynamics`` (their Ray-facing modules included) never import ``sweep``, ``services`` or
  ``commands``: the sweep calls them, never the other way round.
- ``analysis`` never imports ``sweep``: it reads plain records (:mod:`railsweep.results.records`) that
  :mod:`railsweep.sweep.reader` fills from MLflow.

``importlib.import_module("...")`` / ``__import__("...")`` with a literal name count as imports.

A new rule is one more row of :data:`RULES`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "railsweep"


@dataclass(frozen=True)
class Rule:
    """Modules under ``layer`` may not import anything under ``forbid`` except what is under ``allow``;
    with ``only`` set, they may import nothing but the standard library and what is under ``only``."""

    name: str
    layer: str
    forbid: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    exempt: tuple[str, ...] = ()  # sub-layers of ``layer`` the rule does not apply to

    def violations(self, imported: str) -> bool:
        if self.only is not None:
            top = imported.split(".")[0]
            return not (top in sys.stdlib_module_names or _under(imported, self.only))
        return _under(imported, self.forbid) and not _under(imported, self.allow)


# Modules outside sweep/ and commands/ that run on Ray: each the one Ray-facing module of its layer.
RAY_FACING = ("railsweep.detection.ngram_ray", "railsweep.dynamics.ray_step")
# The entry points that may start or join Ray (``sweeps/*.py`` are outside the package).
RAY_INIT_CALLERS = ("railsweep.commands", "railsweep.sweep.job")

RULES = (
    Rule(
        "interventions import neither engines nor strategies",
        "railsweep.interventions",
        forbid=("railsweep.engines", "railsweep.strategies"),
    ),
    Rule("engines never import strategies", "railsweep.engines", forbid=("railsweep.strategies",)),
    Rule(
        "strategies use only the public engine protocol",
        "railsweep.strategies",
        forbid=("railsweep.engines",),
        allow=("railsweep.engines.base",),
    ),
    Rule(
        "metrics import numpy only",
        "railsweep.metrics",
        only=("numpy", "railsweep.metrics", "railsweep.errors"),
    ),
    Rule(
        "only the sweep, the commands and the Ray-facing modules import ray or mlflow",
        "railsweep",
        forbid=("ray", "mlflow"),
        exempt=("railsweep.sweep", "railsweep.commands", *RAY_FACING),
    ),
    Rule(
        "services import the standard library and errors only",
        "railsweep.services",
        only=("railsweep.services", "railsweep.errors"),
    ),
    Rule(
        "detection never imports the sweep, the services or the commands",
        "railsweep.detection",
        forbid=("railsweep.sweep", "railsweep.services", "railsweep.commands"),
    ),
    Rule(
        "dynamics never imports the sweep, the services or the commands",
        "railsweep.dynamics",
        forbid=("railsweep.sweep", "railsweep.services", "railsweep.commands"),
    ),
    Rule("analysis never imports the sweep", "railsweep.analysis", forbid=("railsweep.sweep",)),
)


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, imported name)`` for every import anywhere in ``source``; ``from a import b`` gives
    both ``a`` and ``a.b`` (b may be a submodule); relative imports are resolved against ``module``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module.split(".")
                pkg = pkg if is_package else pkg[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Call):  # importlib.import_module("x") / __import__("x")
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            arg = node.args[0] if node.args else None
            if (
                name in ("import_module", "__import__")
                and isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
            ):
                out.append((node.lineno, arg.value))
    return out


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_module_imports_only_what_its_layer_rule_allows(rule):
    checked, broken = 0, []
    for path in _modules():
        mod = module_name(path)
        if not _under(mod, (rule.layer,)) or _under(mod, rule.exempt):
            continue
        checked += 1
        for line, name in imports(path.read_text(), mod, path.name == "__init__.py"):
            if rule.violations(name):
                broken.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    assert checked, f"no module under {rule.layer}: the rule checks nothing"
    assert not broken, f"{rule.name}:\n" + "\n".join(broken)


def test_function_local_and_relative_imports_are_seen():
    src = (
        "from __future__ import annotations\n"
        "def f():\n"
        "    from railsweep.strategies.railcap import strategy\n"
        "    from ..strategies import base\n"
        "    import railsweep.engines._hf_decode\n"
        "def g():\n    importlib.import_module('mlflow')\n"
    )
    names = {n for _, n in imports(src, "railsweep.engines.foo")}
    assert {
        "railsweep.strategies.railcap.strategy",
        "railsweep.strategies.base",
        "railsweep.engines._hf_decode",
        "mlflow",
    } <= names
    engines_rule, strategies_rule = RULES[1], RULES[2]
    assert engines_rule.violations("railsweep.strategies.railcap.strategy")
    assert strategies_rule.violations("railsweep.engines._hf_decode")
    assert not strategies_rule.violations("railsweep.engines.base.Request")
    assert RULES[3].violations("torch") and not RULES[3].violations("numpy.typing")


def ray_init_calls(source: str) -> list[int]:
    """Lines of ``ray.init(...)`` calls in ``source``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "init"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ray"
    ]


def test_only_entry_points_call_ray_init():
    callers, broken = set(), []
    for path in _modules():
        mod = module_name(path)
        for line in ray_init_calls(path.read_text()):
            callers.add(mod)
            if not _under(mod, RAY_INIT_CALLERS):
                broken.append(f"{path.relative_to(PACKAGE.parent)}:{line} calls ray.init")
    assert "railsweep.sweep.job" in callers, "the sweep job no longer starts Ray: the rule checks nothing"
    assert not broken, "the library calls ray.init:\n" + "\n".join(broken)


def test_a_ray_init_call_is_seen_in_a_function():
    assert ray_init_calls("def f():\n    import ray\n    ray.init(address='local')\n") == [3]
    assert ray_init_calls("def f(x):\n    x.init()\n") == []


@pytest.mark.parametrize("module", ["railsweep.analysis.report", "railsweep.results.records"])
def test_the_record_consumers_load_without_ray_or_mlflow(module):
    """Transitively too: importing the analysis of a sweep's records pulls in neither service."""
    code = (
        f"import sys, {module}\n"
        "loaded = sorted(m for m in ('ray', 'mlflow') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
