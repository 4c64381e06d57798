"""What the GPU check needs from the machine it runs on, found without importing railsweep (stdlib only).

    python bench/gpu_check_env.py [--device cuda] [--pack .gpu_check] [--site DIR]

Steps:
  1. look up every module the check's import path needs (:data:`NEEDED`, import name -> distribution);
  2. install the pack's wheels (``<pack>/wheels/*.whl``) of the missing ones into ``--site`` (pip, no index,
     no dependencies) and look again; print ``--site`` on stdout when it was used, for PYTHONPATH;
  3. with ``--device cuda``: torch sees a CUDA device;
  4. on stderr, the versions found and, if anything is still missing, what and how to carry it (exit 3).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from importlib import metadata
from pathlib import Path

# The third-party modules imported at module level by bench/gpu_check.py and the railsweep modules it loads
# (tests/test_gpu_check.py checks this against their sources), plus those the engine loads weights and
# adapters with (peft, tokenizers, safetensors); import name -> the distribution that provides it.
NEEDED = {
    "torch": "torch",
    "transformers": "transformers",
    "peft": "peft",
    "tokenizers": "tokenizers",
    "safetensors": "safetensors",
    "numpy": "numpy",
    "rapidfuzz": "rapidfuzz",  # railsweep.strategies loads TED, which imports it; often not in a torch image
    "yaml": "pyyaml",  # task files (railsweep.tasks.kinds.file_spec); a dependency of transformers
    "jinja2": "jinja2",  # task files' prompt templates; a dependency of torch
}
CARRIED = ("rapidfuzz",)  # the distributions `gpu_check.py pack` downloads wheels of


def missing_modules(needed: dict[str, str]) -> list[str]:
    """Import names in ``needed`` that cannot be found (nothing is imported)."""
    return [name for name in needed if importlib.util.find_spec(name) is None]


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def install_wheels(pack: Path, dists: list[str], site: Path) -> list[str]:
    """Install the pack's wheels of ``dists`` into ``site``; the distributions installed."""
    wheels = [w for w in sorted((pack / "wheels").glob("*.whl")) if w.name.split("-")[0].lower() in dists]
    if not wheels:
        return []
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--target", str(site), *map(str, wheels)]  # fmt: skip
    got = subprocess.run(cmd, capture_output=True, text=True)  # stdout is for the site path alone
    if got.returncode != 0:
        print(
            f"gpu_check: pip could not install {pack}/wheels: {' '.join(got.stderr.split()[-20:])}",
            file=sys.stderr,
        )
        return []
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    return [w.name.split("-")[0].lower() for w in wheels]


def cuda_problem(device: str) -> str | None:
    if not device.startswith("cuda"):
        return None
    import torch  # only here: found above, and slow to import

    if not torch.cuda.is_available():
        return f"--device {device}: torch {torch.__version__} sees no CUDA device (built for CUDA {torch.version.cuda})"
    print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}",
          file=sys.stderr)  # fmt: skip
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--pack", type=Path, default=Path(".gpu_check"))
    p.add_argument("--site", type=Path, default=Path("/tmp/gpu_check_site"))
    args = p.parse_args(argv)
    missing = missing_modules(NEEDED)
    installed = install_wheels(args.pack, [NEEDED[m] for m in missing], args.site) if missing else []
    missing = missing_modules(NEEDED) if installed else missing
    found = ", ".join(f"{NEEDED[m]} {_version(NEEDED[m])}" for m in NEEDED if m not in missing)
    print(f"gpu_check: python {sys.version.split()[0]}; {found}", file=sys.stderr)
    if installed:
        print(
            f"gpu_check: installed from {args.pack}/wheels into {args.site}: {', '.join(installed)}",
            file=sys.stderr,
        )
        print(args.site)
    if missing:
        dists = ", ".join(NEEDED[m] for m in missing)
        print(f"gpu_check: missing: {dists} (carry their wheels in <pack>/wheels: docs/benchmarks.md, 'The GPU check')",
              file=sys.stderr)  # fmt: skip
        return 3
    problem = cuda_problem(args.device)
    if problem:
        print(f"gpu_check: {problem}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
