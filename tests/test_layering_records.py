"""Import layering of the sweep's tracking side and the analysis side, checked by parsing every module.

The rules:
1. only ``railsweep/sweep/`` (the distributed sweep) and ``railsweep/commands/`` (CLI entry points that start or
   query the services) import ``ray`` or ``mlflow``; the entry scripts under ``sweeps/`` are outside the package;
2. no ``railsweep/analysis/`` module imports ``railsweep.sweep``: analysis reads plain records
   (:mod:`railsweep.results.records`) that :mod:`railsweep.sweep.reader` fills from MLflow.

Every import counts: module level, inside functions, relative, and ``importlib.import_module("...")`` /
``__import__("...")`` with a literal name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "railsweep"
SERVICES = ("ray", "mlflow")
MAY_IMPORT_SERVICES = ("railsweep/sweep/", "railsweep/commands/")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module name ``source`` (the code of ``module``) imports, wherever the import statement is."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            found.update(f"{prefix}.{alias.name}" for alias in node.names)  # `from railsweep import sweep`
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg.value)
    return found


def _imports_of_every_module() -> dict[str, set[str]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        out[rel] = imported_modules(path.read_text(), _module_name(path), path.name == "__init__.py")
    return out


def _is_within(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")


def test_the_import_parser_sees_function_local_relative_and_dynamic_imports():
    src = (
        "import os\n"
        "def f():\n    import ray.tune\n"
        "def g():\n    from .. import sweep\n"
        "def h():\n    importlib.import_module('mlflow')\n"
    )
    found = imported_modules(src, "railsweep.analysis.report")
    assert {"ray.tune", "railsweep.sweep", "mlflow"} <= found


def test_only_the_sweep_and_the_commands_import_ray_or_mlflow():
    offenders = {
        rel: sorted(n for n in names if any(_is_within(n, s) for s in SERVICES))
        for rel, names in _imports_of_every_module().items()
        if not rel.startswith(MAY_IMPORT_SERVICES)
    }
    assert {rel: names for rel, names in offenders.items() if names} == {}


def test_no_analysis_module_imports_the_sweep_package():
    offenders = {
        rel: sorted(n for n in names if _is_within(n, "railsweep.sweep"))
        for rel, names in _imports_of_every_module().items()
        if rel.startswith("railsweep/analysis/")
    }
    assert {rel: names for rel, names in offenders.items() if names} == {}


@pytest.mark.parametrize("module", ["railsweep.analysis.report", "railsweep.results.records"])
def test_the_record_consumers_load_without_ray_or_mlflow(module):
    """Transitively too: importing the analysis of a sweep's records pulls in neither service."""
    code = (
        f"import sys, {module}\n"
        "loaded = sorted(m for m in ('ray', 'mlflow') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
