"""One instruction set for a world's training, so that a world config builds the same weights on x86-64 CPUs
of other SIMD widths.

ATen picks its vectorised kernels for the CPU it runs on (AVX2, AVX-512) and MKL its code path for matrix
products; each rounds floats its own way. A world's build therefore trains in spawned processes whose
environment pins all three (:data:`PINNED`) to AVX2, which every x86-64 CPU railsweep targets has: ATen's
kernels, MKL's conditional numerical reproducibility and oneDNN's dispatch (which ATen's does not reach:
GPT-NeoX's GELU runs as a oneDNN primitive in training).

Measured on 2-core AVX-512 machines: with the first two, the smoke world, the ``mini`` llama and gemma bases
and the ``smollm2`` adapters have the documented AVX2 builds' weights byte for byte; the ``mini`` neox base
needs the third. An Intel CPU with AVX512-FP16 and AMX builds other weights under the same pin
(docs/miniworld.md): the manifest and ``railsweep miniworld check`` say whether a build is the documented
one. A variable the user set is left as set; aarch64 machines and bf16 worlds are not pinned.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator

PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
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

