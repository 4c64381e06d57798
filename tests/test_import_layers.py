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
  :mod:`railsweep.sweep.tracking.reader` fills from MLflow.

``importlib.import_module("...")`` / ``__import__("...")`` with a literal name count as imports, and so
does a name a package resolves lazily (a module-level ``{"Name": "railsweep.module"}`` table read by the
package's ``__getattr__``, as in ``railsweep.bases``).

A new rule is one more row of :data:`RULES`. Two checks hold for the whole package:

- no arrow runs back up: the import graph, function-local imports included, has no cycle, neither
  between modules nor between the layers (``railsweep.<package>`` and the top-level modules);
- a function-local import of a railsweep module says why it is function-local: a comment on its lines,
  or right above the run of imports it belongs to, names an optional dependency it keeps out
  (:data:`REASONS`: ray, mlflow, vllm, matplotlib, scipy) or the heavy package whose import time it
  keeps off a light path (torch, transformers, pandas, pyarrow: ``railsweep --help``, a command's
  refusal of bad input, the analysis). An import moved inside a function to dodge a cycle names none.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
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


# ------------------------------------------------------------------ the module graph


def _lazy_names(paths: list[Path]) -> dict[str, str]:
    """``{"railsweep.pkg.Name": "railsweep.pkg.module"}`` from each package's lazy-name table."""
    out = {}
    for path in paths:
        if path.name != "__init__.py":
            continue
        pkg = module_name(path)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                for key, value in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                        if str(value.value).startswith("railsweep."):
                            out[f"{pkg}.{key.value}"] = value.value
    return out


def module_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """``{module: modules it imports}`` from ``{module: (source, is_package)}``, every import counted.

    An import resolves to the most specific module it names (``from a import b`` is ``a.b`` when that
    is a module, else ``a``), through the packages' lazy-name tables; importing ``a.b.c`` also runs the
    packages ``a.b`` above it, except the importer's own (already running) packages.
    """
    paths = [
        PACKAGE.parent / (m.replace(".", "/") + ("/__init__.py" if pkg else ".py"))
        for m, (_, pkg) in sources.items()
    ]
    lazy = _lazy_names([p for p in paths if p.exists()])

    def resolve(name: str) -> str | None:
        parts = lazy.get(name, name).split(".")
        while parts and ".".join(parts) not in sources:
            parts.pop()
        return ".".join(parts) or None

    graph: dict[str, set[str]] = {}
    for mod, (source, is_package) in sources.items():
        targets = set()
        for _, name in imports(source, mod, is_package):
            hit = resolve(name)
            if hit is None:
                continue
            parts = hit.split(".")
            for i in range(2, len(parts) + 1):  # the module and the packages it runs on the way
                up = ".".join(parts[:i])
                if up in sources and not _under(mod, (up,)):
                    targets.add(up)
        graph[mod] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph read between layers: ``railsweep.<package>`` or a top-level module."""

    def layer(mod: str) -> str:
        return ".".join(mod.split(".")[:2])

    out: dict[str, set[str]] = {}
    for mod, targets in graph.items():
        if mod == "railsweep":
            continue
        out.setdefault(layer(mod), set()).update(
            layer(t) for t in targets if t != "railsweep" and layer(t) != layer(mod)
        )
    return out


def _package_sources() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(), p.name == "__init__.py") for p in _modules()}


def _describe(comps: list[list[str]], graph: dict[str, set[str]]) -> str:
    return "\n".join(
        "; ".join(f"{a} -> {', '.join(sorted(graph[a] & set(comp)))}" for a in comp) for comp in comps
    )


def test_no_two_modules_import_each_other_through_any_path():
    graph = module_graph(_package_sources())
    assert len(graph) > 100, "the package was not read"
    found = cycles(graph)
    assert not found, "import cycles between modules:\n" + _describe(found, graph)


def test_no_layer_imports_back_up_to_a_layer_that_imports_it():
    """engines -> config -> strategies -> engines was such a loop, hidden in function-local imports."""
    layers = layer_graph(module_graph(_package_sources()))
    found = cycles(layers)
    assert not found, "layers that import each other (an arrow runs back up):\n" + _describe(found, layers)


def test_a_cycle_hidden_in_a_function_local_import_is_found():
    sources = {
        "railsweep.engines": ("", True),
        "railsweep.engines.factory": ("from railsweep.config import EngineConfig\n", False),
        "railsweep.config": ("def f():\n    from railsweep.strategies.base import make_config\n", False),
        "railsweep.strategies": ("", True),
        "railsweep.strategies.base": ("from railsweep.engines.base import Request\n", False),
        "railsweep.engines.base": ("", False),
    }
    graph = module_graph(sources)
    assert not cycles(graph)  # no module loop ...
    assert cycles(layer_graph(graph)) == [["railsweep.config", "railsweep.engines", "railsweep.strategies"]]
    sources["railsweep.engines.base"] = (
        "def g():\n    from railsweep import engines\n    from .factory import build_engine\n",
        False,
    )
    assert cycles(module_graph(sources)) == [
        [
            "railsweep.config",
            "railsweep.engines.base",
            "railsweep.engines.factory",
            "railsweep.strategies.base",
        ]
    ]  # its own package (``from railsweep import engines``) is no arrow


# ------------------------------------------------------------------ function-local imports and their reasons

REASONS = ("ray", "mlflow", "vllm", "matplotlib", "scipy", "torch", "transformers", "pandas", "pyarrow")
_REASON_RE = re.compile(r"\b(" + "|".join(REASONS) + r")\b")

def _comments(source: str) -> dict[int, str]:
    """``{line: comment text}`` for every comment in ``source``."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string
    return out


def local_imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str, str]]:
    """``(line, imported railsweep name, reason comment or "")`` for every railsweep import inside a function.

    The reason is a comment on the import's own lines, else the comment lines right above the run of
    imports (blank lines between isort's groups included) that the import belongs to.
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    comments = _comments(source)
    import_lines = {
        n for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
        for n in range(node.lineno, node.end_lineno + 1)
    }  # fmt: skip
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = [n for _, n in imports(ast.unparse(node), module, is_package)]
            ours = [n for n in names if _under(n, ("railsweep",))]
            if not ours:
                continue
            own = " ".join(comments.get(n, "") for n in range(node.lineno, node.end_lineno + 1))
            above, i = [], node.lineno - 1
            while i >= 1 and (i in import_lines or not lines[i - 1].strip()):
                i -= 1
            while i >= 1 and lines[i - 1].strip().startswith("#"):
                above.insert(0, lines[i - 1].strip())
                i -= 1
            reason = own.strip() or " ".join(above)
            out.append((node.lineno, min(ours, key=len), reason))
    return sorted(set(out))


def _offenders() -> set[str]:
    found = set()
    for path in _modules():
        mod, rel = module_name(path), path.relative_to(PACKAGE.parent).as_posix()
        for _, name, reason in local_imports(path.read_text(), mod, path.name == "__init__.py"):
            if not _REASON_RE.search(reason):
                found.add(f"{rel}: {name}")
    return found


def test_every_function_local_import_of_railsweep_names_its_reason():
    new = sorted(_offenders())
    assert not new, (
        "function-local railsweep imports without a reason (move them to the top of the module, or name "
        f"the optional dependency / the heavy import they keep off a light path, one of {REASONS}):\n"
        + "\n".join(new)
    )


def test_a_function_local_import_without_a_reason_is_caught():
    src = (
        "import os\n"
        "def a():\n"
        "    from railsweep.strategies.base import make_config\n"
        "def b():\n"
        "    # torch: the strategies load it\n"
        "    import numpy as np\n"
        "\n"
        "    from railsweep.strategies.base import make_config\n"
        "    from ..engines import base\n"
        "def c():\n"
        "    from railsweep.engines.vllm_engine import VLLMEngine  # vllm is optional\n"
        "    x = 1  # torch\n"
        "    from railsweep.engines import factory\n"
        "def d():\n"
        "    import json  # the standard library is no railsweep import\n"
    )
    found = {
        (line, name): bool(_REASON_RE.search(why)) for line, name, why in local_imports(src, "railsweep.x.y")
    }
    assert found == {
        (3, "railsweep.strategies.base"): False,
        (8, "railsweep.strategies.base"): True,
        (9, "railsweep.engines"): True,
        (11, "railsweep.engines.vllm_engine"): True,
        (13, "railsweep.engines"): False,  # a reason two statements up does not carry over
    }


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


def test_a_validated_priced_spec_and_its_cell_records_load_no_torch_or_services():
    """The configuration layer: validating and pricing every preset, labelling its rows and building a cell config
    of every strategy, in a fresh interpreter, loads neither torch nor transformers, Ray or MLflow."""
    code = (
        "import sys\n"
        "import railsweep.config, railsweep.results.io, railsweep.results.schema\n"
        "from railsweep.config import CellConfig\n"
        "from railsweep.strategy_registry import STRATEGIES, in_table, strategy_label\n"
        "from railsweep.sweep.spec.sweep_spec import PRESETS, load_spec\n"
        "specs = [load_spec(p) for p in PRESETS]\n"
        "from railsweep.sweep.plan.pricing import price_sweep\n"
        "from railsweep.sweep.plan.throughput import load_throughput\n"
        "for spec in specs:\n"
        "    price_sweep(spec, 'all', load_throughput(), [2])\n"
        "for name in STRATEGIES.known():\n"
        "    strategy_label(name), in_table(name, None, '3')\n"
        "    CellConfig(model='m', strategy=name, task_dir='d').cell_id\n"
        "loaded = sorted(m for m in ('torch', 'transformers', 'ray', 'mlflow') if m in sys.modules)\n"
        "assert len(specs) == len(PRESETS) and not loaded, loaded\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
