"""Teacher-forced token log-probabilities of texts under a base model or one of its LoRA adapters.

The loss and min-k% detectors share this. One :class:`TeacherForcer` per base
model directory holds the model once, with every adapter it has been asked
for loaded into the same peft model. ``adapter=None`` runs the base with the
adapters disabled. Texts are tokenised with the model's tokenizer (its
special tokens included, as the engines prompt it) and run in fp32 on the CPU
unless told otherwise, through the one teacher forcing of
:func:`railsweep.engines.teacher_forcing.teacher_forced`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from railsweep.engines.teacher_forcing import teacher_forced
from railsweep.errors import ConfigError, DataError


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

    @contextlib.contextmanager
    def using(self, adapter: str | Path | None):
        """The model with ``adapter`` active (the base model when None), for a with-block."""
        if adapter is None:
            if hasattr(self.model, "disable_adapter"):
                with self.model.disable_adapter():
                    yield
            else:
                yield
        else:
            name = self._adapter_name(adapter)  # may wrap the model in a PeftModel first
            self.model.set_adapter(name)
            yield

    def forced(self, seqs: Sequence[Sequence[int]], adapter: str | Path | None, batch_size: int):
        """``(i, logits[len(seqs[i]) - 1, V])`` per token-id sequence, the logits predicting each of its tokens
        after the first, under ``adapter``, similar lengths batched together (:func:`teacher_forced`)."""
        import torch

        with torch.no_grad(), self.using(adapter):
            yield from teacher_forced(self.model, seqs, batch_size=batch_size)

    def logprobs(
        self, texts: Sequence[str], adapter: str | Path | None = None, batch_size: int = 16
    ) -> list[np.ndarray]:
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
