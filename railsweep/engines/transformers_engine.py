"""TransformersEngine: the Engine protocol on a transformers model plus named peft LoRA adapters.

Generation is hand-written (:mod:`railsweep.engines._hf_decode`), not ``model.generate``, so that every
request carries its own adapter, seed, temperature, stop strings and intervention, and samples are
batch-invariant (:mod:`railsweep.engines._sampling`). Requests are grouped by (adapter, intervention kind).
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from railsweep.engines._cascade import CascadeStepper, common_prefix_len
from railsweep.engines._hf_decode import Forward, PaddedStepper, Row, StopTable, decode_batch
from railsweep.engines.base import Completion, Request, Sample
from railsweep.engines.devices import resolve_device
from railsweep.engines.hf_compat import lm_step
from railsweep.engines.hf_processors import PROCESSORS, make_processor
from railsweep.engines.model_support import SUPPORTED_TYPES, cascade_supported
from railsweep.engines.neuron_patch import NeuronPatch, make_patched_forward
from railsweep.errors import ConfigError, DataError
from railsweep.interventions import NeuronPatchSpec
from railsweep.interventions.neuron_patch import use_adapter

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# The default batch. CPU: 320 rows, where the miniature world's models stop gaining (64-row batches ran at
# 0.68x of 320-row ones). GPU: up to 1024 rows within half the free memory's worth of KV cache.
CPU_BATCH_ROWS = 320
GPU_BATCH_ROWS = 1024
GPU_KV_FRACTION = 0.5
# Shortcut's patched decoding holds two KV caches (target, reference; on the padded path each row holds its whole
# prompt): on a CPU its batches are capped at this fraction of the memory available at load (padded, 320 SmolLM2
# rows of a 645-token prompt take 2 x 11.9 GB).
CPU_PATCHED_KV_FRACTION = 0.25


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """No transformers progress bar (carriage returns in every job log), no peft ``is_gradient_checkpointing``
    FutureWarning; every other warning passes."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*", category=FutureWarning)
            yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def _check_weights(path: Path, what: str, safetensors_name: str = "*.safetensors") -> None:
    """DataError unless ``path`` is a directory holding safetensors weights (pickle .bin is refused)."""
    if not path.is_dir():
        raise DataError(f"{what} directory not found: {path}")
    if not any(path.glob(safetensors_name)):
        if any(path.glob("*.bin")):
            raise DataError(f"{what} at {path} has only pickle .bin weights; railsweep loads safetensors only "
                            "(re-save it with save_pretrained(..., safe_serialization=True))")  # fmt: skip
        raise DataError(f"{what} at {path} has no {safetensors_name} weights")


def default_batch_limits(device: torch.device, kv_bytes_per_token: int,
                         free_bytes: int | None = None) -> tuple[int, int | None]:  # fmt: skip
    """(max rows, max row-tokens or None) of a batch when the caller gives none (see ``CPU_BATCH_ROWS``)."""
    if device.type != "cuda":
        return CPU_BATCH_ROWS, None
    if free_bytes is None:
        free_bytes = torch.cuda.mem_get_info(device)[0]
    return GPU_BATCH_ROWS, max(1, int(GPU_KV_FRACTION * free_bytes) // max(kv_bytes_per_token, 1))


def available_memory() -> int | None:
    """Bytes of memory available to a new process now (Linux ``MemAvailable``), or None where unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def patched_token_budget(device: torch.device, kv_bytes: int, max_batch_tokens: int | None,
                         available: int | None = None) -> int | None:  # fmt: skip
    """Row-tokens one batch of patched decoding may hold (both caches counted), or None for no cap."""
    if max_batch_tokens is not None:
        return max(1, max_batch_tokens // 2)
    if device.type == "cuda":
        return None
    available = available_memory() if available is None else available
    return None if available is None else max(1, int(CPU_PATCHED_KV_FRACTION * available) // (2 * max(kv_bytes, 1)))


def kv_bytes_per_token(config: Any, dtype: torch.dtype) -> int:
    """Bytes of keys and values one token takes in the KV cache of a model with this ``config``."""
    config = getattr(config, "text_config", None) or config
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return 2 * config.num_hidden_layers * kv_heads * head_dim * torch.finfo(dtype).bits // 8


def _resolve_dtype(dtype: str | torch.dtype, device: torch.device) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    if dtype not in _DTYPES:
        raise ConfigError(f"dtype must be 'auto' or one of {sorted(_DTYPES)}, got {dtype!r}")
    return _DTYPES[dtype]


def _check_options(attention: str, max_batch_size: int | None, max_batch_tokens: int | None) -> None:
    if attention not in ("auto", "cascade", "padded"):
        raise ConfigError(f"attention must be 'auto', 'cascade' or 'padded', got {attention!r}")
    if max_batch_size is not None and max_batch_size < 1:
        raise ConfigError(f"max_batch_size must be >= 1, got {max_batch_size}")
    if max_batch_tokens is not None and max_batch_tokens < 1:
        raise ConfigError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")


def _load_model(model_path: Path, adapter_paths: dict[str, Path], dtype: torch.dtype, trust_remote_code: bool):
    """The model (safetensors only) with every named LoRA adapter in one peft model, on the CPU."""
    from transformers import AutoModelForCausalLM

    with quiet_loading():
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype, use_safetensors=True,
                                                     trust_remote_code=trust_remote_code)  # fmt: skip
        if adapter_paths:
            from peft import PeftModel

            names = list(adapter_paths)
            model = PeftModel.from_pretrained(model, str(adapter_paths[names[0]]), adapter_name=names[0])
            for name in names[1:]:
                model.load_adapter(str(adapter_paths[name]), adapter_name=name)
    return model


def _eos_and_pad(tokenizer: Any, model: Any) -> tuple[list[int], int]:
    """``(eos_ids, pad_id)``: every id that ends a sample (the tokenizer's EOS, else the model config's, and
    the generation config's), sorted; the padding id (the tokenizer's, else the first EOS, else 0)."""
    eos = model.config.eos_token_id if tokenizer.eos_token_id is None else tokenizer.eos_token_id
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    eos_ids = sorted({e for x in (eos, gen_eos) for e in (x if isinstance(x, list) else [x]) if e is not None})
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (eos_ids or [0])[0]
    return eos_ids, int(pad)


class TransformersEngine:
    """``adapters``: name -> peft adapter directory (``Request.adapter=None`` runs the base model). A batch
    holds at most ``max_batch_size`` rows (one per sample) and at most ``max_batch_tokens`` of rows x
    (longest prompt + max_new_tokens); None for either is :func:`default_batch_limits`. A call's rows
    are split into equal batches (1,000 rows at most 320 a batch: 4 x 250, not 3 x 320 + 40).
    ``dedupe_prefill`` prefills each distinct prompt of a batch once. ``attention="auto"`` decodes the
    supported families with the shared-prefix cache of :mod:`railsweep.engines._cascade`, others padded;
    ``"cascade"`` insists on the former (ConfigError for an unsupported model), ``"padded"`` on the latter.
    """

    name = "transformers"

    def __init__(
        self, model_path: str | Path, adapters: dict[str, str | Path] | None = None, device: str = "auto",
        dtype: str | torch.dtype = "auto", trust_remote_code: bool = False, max_batch_size: int | None = None,
        max_batch_tokens: int | None = None, dedupe_prefill: bool = True, attention: str = "auto",
    ):  # fmt: skip
        from transformers import AutoTokenizer

        _check_options(attention, max_batch_size, max_batch_tokens)
        self.model_path = Path(model_path)
        _check_weights(self.model_path, "model")
        adapter_paths = {str(k): Path(v) for k, v in (adapters or {}).items()}
        for name, path in adapter_paths.items():
            if not name:
                raise ConfigError("adapter names must be non-empty strings")
            _check_weights(path, f"LoRA adapter {name!r}", "adapter_model.safetensors")
        self.device = resolve_device(device)
        self.dtype = _resolve_dtype(dtype, self.device)
        self.max_batch_size, self.max_batch_tokens = max_batch_size, max_batch_tokens
        self.dedupe_prefill, self.attention = dedupe_prefill, attention

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path, trust_remote_code=trust_remote_code)
        model = _load_model(self.model_path, adapter_paths, self.dtype, trust_remote_code)
        self.model = model.to(self.device).eval()
        kv_bytes = kv_bytes_per_token(self.model.config, self.dtype)
        if max_batch_size is None or (max_batch_tokens is None and self.device.type == "cuda"):
            rows, tokens = default_batch_limits(self.device, kv_bytes)
            self.max_batch_size = max_batch_size or rows
            self.max_batch_tokens = max_batch_tokens or tokens
        self.patched_batch_tokens = patched_token_budget(self.device, kv_bytes, self.max_batch_tokens)
        self._adapters = list(adapter_paths)
        if attention == "cascade" and not cascade_supported(self.model, 0):
            raise ConfigError(f"attention='cascade' does not support model type {self.model.config.model_type!r} "
                              f"(supported: {sorted(SUPPORTED_TYPES)}); use attention='auto' or 'padded'")  # fmt: skip

        self.eos_ids, self.pad_id = _eos_and_pad(self.tokenizer, self.model)
        vocab = self.model.get_output_embeddings().weight.shape[0]
        self._stops = StopTable(self.tokenizer, vocab, self.device)

    def adapters(self) -> list[str]:
        return list(self._adapters)

    def supports(self, intervention: type) -> bool:
        return intervention in PROCESSORS or intervention is NeuronPatchSpec  # the latter: a model patch

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """One Completion per request, in order (``sampling.n`` rows each)."""
        if self.model is None:
            raise ConfigError("TransformersEngine.generate called after close()")
        if not requests:
            return []
        for req in requests:
            self._validate(req)
        prompt_ids = self.tokenizer([r.prompt for r in requests], add_special_tokens=True)["input_ids"]
        for req, p in zip(requests, prompt_ids):
            if not p:
                raise ConfigError(
                    f"prompt {req.prompt!r} tokenizes to no tokens; give the model some context"
                )
        groups: dict[tuple[Any, ...], list[tuple[int, Row, Any]]] = {}
        for i, req in enumerate(requests):
            sp = req.sampling
            seed = sp.seed if sp.seed is not None else secrets.randbits(63)
            iv = req.intervention
            key = (req.adapter, iv if isinstance(iv, NeuronPatchSpec) else type(iv))
            for j in range(sp.n):
                ids = list(prompt_ids[i])
                row = Row(ids, seed, j, sp.temperature, sp.max_new_tokens, sp.stop, sp.return_entropy)
                groups.setdefault(key, []).append((i, row, iv))
        out: list[list[Sample | None]] = [[None] * r.sampling.n for r in requests]
        with torch.inference_mode():
            for (adapter, kind), members in groups.items():
                limit = self.patched_batch_tokens if isinstance(kind, NeuronPatchSpec) else self.max_batch_tokens
                for batch in self._batches(members, limit, 0 if limit is None else self._shared_prefix(members)):
                    samples = self._decode(adapter, kind, batch)
                    for (i, row, _), smp in zip(batch, samples):
                        out[i][row.sample_idx] = smp
        return [Completion(samples=list(s)) for s in out]  # type: ignore[arg-type]

    def _validate(self, req: Request) -> None:
        if req.adapter is not None and req.adapter not in self._adapters:
            raise ConfigError(
                f"unknown adapter {req.adapter!r}; this engine serves {self._adapters or 'none'}"
            )
        iv = req.intervention
        if iv is not None and not self.supports(type(iv)):
            raise ConfigError(f"intervention {type(iv).__name__} is not supported by the transformers engine")
        if isinstance(iv, NeuronPatchSpec) and iv.reference_adapter not in (None, *self._adapters):
            raise ConfigError(f"unknown reference adapter {iv.reference_adapter!r} in NeuronPatchSpec")

    def _batches(self, members: list, max_tokens: int | None, shared: int = 0) -> Iterator[list]:
        """Consecutive chunks of near-equal size within ``max_batch_size`` rows, split further where
        ``max_tokens`` tokens of cache require (``shared``: prefix tokens every batch holds once)."""
        n = len(members)
        k = -(-n // self.max_batch_size)  # fewest batches within max_batch_size rows
        lo = 0
        for i in range(k):
            hi = lo + n // k + (i < n % k)
            yield from self._within_tokens(members[lo:hi], max_tokens, shared)
            lo = hi

    def _shared_prefix(self, members: list) -> int:
        """Prompt tokens the cascade path holds once for any batch of ``members`` (their common prefix, which
        a subset's only lengthens), or 0 where they decode padded and each row holds its whole prompt."""
        rows = [row for _, row, _ in members]
        longest = max(len(r.prompt_ids) + r.max_new_tokens for r in rows)
        if self.attention == "padded" or not cascade_supported(self.model, longest):
            return 0
        shared = common_prefix_len(list({tuple(r.prompt_ids) for r in rows}))  # each prompt once, not per sample
        return shared if shared >= CascadeStepper.MIN_PREFIX else 0

    @staticmethod
    def _within_tokens(members: list, max_tokens: int | None, shared: int = 0) -> Iterator[list]:
        """Cut where a batch's cache would pass ``max_tokens``: the shared prefix once, plus each row's
        longest remainder of prompt and new tokens."""
        batch: list = []
        width = 0
        for m in members:
            w = len(m[1].prompt_ids) + m[1].max_new_tokens - shared
            grown = max(width, w)
            over = max_tokens is not None and shared + (len(batch) + 1) * grown > max_tokens
            if batch and over:
                yield batch
                batch, grown = [], w
            batch.append(m)
            width = grown
        if batch:
            yield batch

    def _decode(self, adapter: str | None, kind: Any, batch: list) -> list[Sample]:
        rows = [row for _, row, _ in batch]
        common = dict(tokenizer=self.tokenizer, stop_table=self._stops, eos_ids=self.eos_ids)
        common.update(pad_id=self.pad_id, device=self.device)
        if isinstance(kind, NeuronPatchSpec):  # the patch switches adapters itself
            return decode_batch(rows, self._stepper(rows, NeuronPatch(self.model, kind, adapter)), None, **common)
        processor = make_processor([iv for _, _, iv in batch], self.device)
        with use_adapter(self.model, adapter):
            return decode_batch(rows, self._stepper(rows), processor, **common)

    def _stepper(self, rows: list[Row], patch: NeuronPatch | None = None):
        """The cascade stepper where the model and the batch's length allow it (``attention``), else the
        padded one; ``patch``: each step is its pair of forwards."""
        S = max(r.max_new_tokens for r in rows)
        longest = max(len(r.prompt_ids) for r in rows) + S
        if self.attention != "padded" and cascade_supported(self.model, longest):
            twin = None if patch is None else patch.run
            return CascadeStepper(self.model, self.device, self.pad_id, S, dedupe=self.dedupe_prefill, twin=twin)
        if patch is None:
            forward: Forward = functools.partial(lm_step, self.model)
        else:
            forward = make_patched_forward(patch)
        return PaddedStepper(forward, self.pad_id, self.device, self.dedupe_prefill)
