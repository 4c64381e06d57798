"""The package's structure figures, as one JSON object: what docs/development.md quotes.

    python bench/structure.py [--root railsweep]

Steps:
  1. every module under ``--root`` (``*.py``): its lines, and per function (methods and nested functions
     included) its lines from ``def`` (decorators included) to its last line;
  2. the import graph with every import counted (function-local ones and lazy package names included), read
     between layers (a package or a top-level module of the package) by the functions that
     ``tests/test_import_layers.py`` checks, so the figures and the test cannot disagree: the floors (the
     longest chain of layers, each importing only from the floors below it), the arrows that run back up
     (the layers caught in a cycle) and the function-local railsweep imports (each names its reason, or the
     test fails).

Reads source files only; imports nothing of the package.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import test_import_layers  # noqa: E402
from test_import_layers import cycles, layer_graph, local_imports, module_graph, module_name  # noqa: E402


def functions(source: str) -> list[tuple[str, int]]:
    """``(qualified name, lines)`` for every function and method in ``source``, nested ones included."""
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    out.append((name, child.end_lineno - first + 1))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def floors(layers: dict[str, set[str]]) -> int:
    """The longest chain of layers in an acyclic layer graph, counted in layers (0 when it has a cycle)."""
    if cycles(layers):
        return 0
    depth: dict[str, int] = {}

    def level(layer: str) -> int:
        if layer not in depth:
            depth[layer] = 1 + max((level(t) for t in layers.get(layer, ()) if t in layers), default=0)
        return depth[layer]

    return max(level(layer) for layer in layers)


def structure(root: Path) -> dict:
    test_import_layers.PACKAGE = root  # the graph functions read module names and lazy tables under it
    paths = sorted(root.rglob("*.py"))
    sources = {module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py") for p in paths}
    lines = {p.relative_to(root.parent).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    funcs = [
        (f"{p.relative_to(root.parent).as_posix()}:{name}", n)
        for p in paths
        for name, n in functions(p.read_text(encoding="utf-8"))
    ]
    largest = max(lines.items(), key=lambda kv: kv[1])
    longest = max(funcs, key=lambda kv: kv[1])
    layers = layer_graph(module_graph(sources))
    local = [
        (mod, name) for mod, (src, pkg) in sources.items() for _, name, _ in local_imports(src, mod, pkg)
    ]
    return {
        "modules": len(paths),
        "lines": sum(lines.values()),
        "largest_module": {"path": largest[0], "lines": largest[1]},
        "modules_over_450_lines": sorted(p for p, n in lines.items() if n > 450),
        "modules_over_400_lines": sorted(p for p, n in lines.items() if n > 400),
        "longest_function": {"name": longest[0], "lines": longest[1]},
        "functions_over_80_lines": sorted(name for name, n in funcs if n > 80),
        "functions_over_60_lines": sorted(name for name, n in funcs if n > 60),
        "layers": len(layers),
        "floors": floors(layers),
        "layers_in_a_cycle": sorted({layer for comp in cycles(layers) for layer in comp}),
        "function_local_railsweep_imports": len(local),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=REPO / "railsweep", help="the package folder (default: this checkout's railsweep/)")
    args = p.parse_args(argv)
    print(json.dumps(structure(args.root.resolve()), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
