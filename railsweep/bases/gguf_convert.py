"""Converting a GGUF file once into a plain transformers model folder (config + safetensors + tokenizer).

Loading a GGUF through transformers on every use would cost the dequantisation each time and tie every engine
(vLLM included) to the GGUF path, so it is done once, here:

1. load tokenizer and model with ``from_pretrained(folder, gguf_file=name)``, every weight dequantised
   (``GgufConfig(dequantize=True)``);
2. drop the quantizer record (``save_pretrained`` refuses a model that still carries a GGUF quantizer, and a
   saved ``quantization_config`` would send every later load back through the GGUF path);
3. cast to the wanted dtype and ``save_pretrained`` model and tokenizer as safetensors.

The ``gguf`` package is an optional dependency (``pip install 'railsweep[real]'``).
"""

from __future__ import annotations

import time
from importlib import metadata
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

from railsweep.errors import DataError, MissingDependencyError
from railsweep.provenance import package_versions

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
CONVERSION_PACKAGES = ("transformers", "gguf", "torch", "safetensors", "tokenizers")


def require_gguf() -> None:
    try:
        metadata.version("gguf")
    except metadata.PackageNotFoundError:
        raise MissingDependencyError("gguf", extra="real", purpose="reading GGUF model files") from None


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, dtype: str = "float32") -> dict:
    """Write the model in ``gguf_path`` to ``out_dir`` as a transformers folder (steps in the module
    docstring); returns what the conversion was: architecture, parameter count, seconds, package versions."""
    require_gguf()
    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    if not gguf_path.is_file():
        raise DataError(f"GGUF file not found: {gguf_path}")
    t0, c0 = time.time(), time.process_time()
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, quantization_config=GgufConfig(dequantize=True)
    )
    _drop_quantizer(model)
    model = model.to(_DTYPES[dtype]).eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return {
        "architecture": type(model).__name__,
        "model_type": model.config.model_type,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "dtype": dtype,
        "seconds": round(time.time() - t0, 2),
        "cpu_seconds": round(time.process_time() - c0, 2),
        "packages": package_versions(CONVERSION_PACKAGES),
    }


def _drop_quantizer(model) -> None:
    """Forget that ``model`` came from a GGUF: its weights are dense tensors already (step 2)."""
    model.hf_quantizer = None
    model.is_quantized = False
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
