"""One instruction set for a world's training, so that a world config builds the same weights on x86-64 CPUs of
other SIMD widths.

ATen picks its vectorised kernels for the CPU it runs on (AVX2, AVX-512) and MKL its code path for matrix
products; each rounds floats its own way, so the same seed and recipe train other weights on an AVX-512
machine than on an AVX2-only one. A world's build therefore trains in spawned processes whose environment
pins both to AVX2, which every x86-64 CPU railsweep targets has:

- ``ATEN_CPU_CAPABILITY=avx2`` (ATen's kernels; read when torch loads);
- ``MKL_CBWR=AVX2`` (MKL's conditional numerical reproducibility; read when MKL starts).

Measured on a 2-core Intel AVX-512 machine: with the pin the smoke world, the ``mini`` llama and gemma bases and
the ``smollm2`` world's three adapters have the weights of the documented AVX2 builds byte for byte (without it,
others); the ``mini`` neox base does not (docs/miniworld.md), so some kernel it uses is not covered yet. A
variable the user set is left as set (the manifest records what the build used); other machines (aarch64) and
bf16 worlds (built where the CPU has native bf16, AVX512-BF16 or AMX) are not pinned.

MKL honours a ``MKL_CBWR`` branch other than ``COMPATIBLE`` on Intel CPUs only: on an AMD CPU it runs its own
path (``MKL_VERBOSE`` reports ``CNR:AUTO``). On the AVX2-only AMD EPYCs where the documented builds were made
that path computes as the pinned AVX2 branch does; on an AMD CPU with AVX-512 it does not (measured: the smoke
world's weights differ there with both pins set, and capping oneDNN's ISA changes nothing).
:func:`mkl_branch` asks MKL which branch it runs, and :func:`builds_documented_weights` says whether this
machine can build the documented weights; the build warns before it trains when it cannot.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
_X86 = ("x86_64", "amd64", "i686", "i386")


def pinned_env() -> dict[str, str]:
    """The pinned variables this machine's build sets: :data:`PINNED` on x86, nothing elsewhere."""
    return dict(PINNED) if platform.machine().lower() in _X86 else {}


@contextlib.contextmanager
def pinned_arithmetic(enabled: bool = True) -> Iterator[dict[str, str | None]]:
    """Within the block, ``os.environ`` holds the pinned variables the user has not set (processes spawned
    in it inherit them); yields what the build's processes see of each. The environment is restored after.
    ``enabled`` False (a bf16 world: it needs the CPU's native bf16 kernels) pins nothing."""
    added = {k: v for k, v in pinned_env().items() if k not in os.environ} if enabled else {}
    os.environ.update(added)
    try:
        yield {k: os.environ.get(k) for k in PINNED}
    finally:
        for k in added:
            os.environ.pop(k, None)



_PROBE = "import torch; torch.ones(64, 64) @ torch.ones(64, 64)"


def mkl_branch(env: Mapping[str, str] | None = None) -> str | None:
    """The reproducibility branch MKL runs in a fresh process with this environment plus ``env``: the
    ``CNR:`` field ``MKL_VERBOSE`` prints for one matrix product (``AVX2``, ``AUTO``, ...), or None where
    torch computes without MKL (aarch64) or the probe fails."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE],
            env={**os.environ, **(env or {}), "MKL_VERBOSE": "1"},
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"CNR:([A-Z0-9_]+)", out.stdout)
    return found.group(1) if found else None


def cpu_has_avx512(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU has AVX-512 (``avx512f``); False where ``cpuinfo`` cannot be read."""
    try:
        return bool(re.search(r"\bavx512f\b", Path(cpuinfo).read_text()))
    except OSError:
        return False


def build_arithmetic(pinned: Mapping[str, str | None]) -> dict:
    """The manifest's record of a pinned build: the ``pinned`` environment, the branch MKL ran under it
    (``mkl_branch``) and whether the CPU has AVX-512 (``avx512``)."""
    return {**pinned, "mkl_branch": mkl_branch(), "avx512": cpu_has_avx512()}


def builds_documented_weights(arithmetic: Mapping) -> bool:
    """Whether a pinned fp32 build with this record (:func:`build_arithmetic`) computes as the documented
    builds did: MKL ran the pinned branch, or the CPU has no AVX-512 (MKL's own path is its AVX2 one there).
    A record without ``mkl_branch`` (a build before it was recorded) is taken to."""
    if "mkl_branch" not in arithmetic:
        return True
    return arithmetic["mkl_branch"] == arithmetic.get("MKL_CBWR") or not arithmetic.get("avx512")


def mkl_refusal(arithmetic: Mapping[str, str | None]) -> str:
    """Why a build with ``arithmetic`` cannot have the documented weights (one clause)."""
    return (
        f"this CPU's MKL ran its {arithmetic.get('mkl_branch')} branch, not the pinned "
        f"MKL_CBWR={arithmetic.get('MKL_CBWR')} (MKL honours that branch on Intel CPUs only; builds on an AMD CPU "
        "with AVX-512 were measured to train other weights)"
    )
