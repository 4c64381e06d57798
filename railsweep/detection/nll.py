"""Teacher-forced token log-probabilities of texts under a base model or one of its LoRA adapters.

One :class:`TeacherForcer` per base model directory (shared by the loss and min-k% detectors and the
dynamics) holds the model once, every adapter asked for loaded into the same peft model; ``adapter=None``
runs the base with the adapters disabled. Texts are tokenised with their special tokens, as the engines
prompt, and run in fp32 on the CPU unless told otherwise, through
:func:`railsweep.engines.teacher_forcing.teacher_forced`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from railsweep.engines.teacher_forcing import teacher_forced
from railsweep.errors import ConfigError, DataError
from railsweep.interventions.neuron_patch import use_adapter


class TeacherForcer:
    def __init__(self, base: str | Path, device: str = "cpu"):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.base = Path(base)
        if not (self.base / "config.json").is_file():
            raise DataError(f"model directory {self.base} has no config.json")
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.base)
        model = AutoModelForCausalLM.from_pretrained(self.base, dtype=torch.float32)
        self.model = model.to(self.device).eval()
        self._adapters: dict[str, str] = {}  # adapter path -> peft adapter name
        self._cache: dict[tuple[str | None, tuple[str, ...]], list[np.ndarray]] = {}

    def _adapter_name(self, adapter: str | Path) -> str:
        from peft import PeftModel

        key = str(Path(adapter).resolve())
        if key not in self._adapters:
            if not (Path(adapter) / "adapter_config.json").is_file():
                raise DataError(f"LoRA adapter directory {adapter} has no adapter_config.json")
            name = f"a{len(self._adapters)}"
            if isinstance(self.model, PeftModel):
                self.model.load_adapter(key, adapter_name=name)
            else:
                self.model = PeftModel.from_pretrained(self.model, key, adapter_name=name).eval()
            self._adapters[key] = name
        return self._adapters[key]

    def using(self, adapter: str | Path | None):
        """A with-block context with ``adapter`` active (the base model when None)."""
        name = None if adapter is None else self._adapter_name(adapter)  # may wrap the model in a PeftModel
        return use_adapter(self.model, name)

    def forced(self, seqs: Sequence[Sequence[int]], adapter: str | Path | None, batch_size: int):
        """``(i, logits[len(seqs[i]) - 1, V])`` per token-id sequence, the logits predicting each of its tokens
        after the first, under ``adapter``, similar lengths batched together (:func:`teacher_forced`)."""
        import torch

        with torch.no_grad(), self.using(adapter):
            yield from teacher_forced(self.model, seqs, batch_size=batch_size)

    def logprobs(self, texts: Sequence[str], adapter: str | Path | None = None,
                 batch_size: int = 16) -> list[np.ndarray]:  # fmt: skip
        """Per text, float64 (T-1,): log p(token_t | tokens_<t) for t = 1..T-1 (T = its token count)."""
        import torch

        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        key = (None if adapter is None else str(Path(adapter).resolve()), tuple(texts))
        if key in self._cache:
            return self._cache[key]
        encoded = [self.tokenizer(t)["input_ids"] for t in texts]
        out: list[np.ndarray] = [np.empty(0)] * len(texts)
        for i, logits in self.forced(encoded, adapter, batch_size):
            target = torch.tensor(encoded[i][1:], dtype=torch.long, device=logits.device)[:, None]
            out[i] = torch.log_softmax(logits, dim=-1).gather(1, target)[:, 0].double().cpu().numpy()
        if len(self._cache) > 16:
            self._cache.clear()
        self._cache[key] = out
        return out


_FORCERS: dict[tuple[str, str], TeacherForcer] = {}


def teacher_forcer(base: str | Path, device: str = "cpu") -> TeacherForcer:
    """The shared :class:`TeacherForcer` of a base model directory (loaded on first use)."""
    key = (str(Path(base).resolve()), device)
    if key not in _FORCERS:
        _FORCERS[key] = TeacherForcer(base, device)
    return _FORCERS[key]


def mean_nll(logprobs: Sequence[np.ndarray]) -> np.ndarray:
    """float (N,): mean token negative log-likelihood per text (NaN for a text of one token)."""
    return np.array([-lp.mean() if lp.size else np.nan for lp in logprobs])
