"""The Engine protocol: what every decoding backend (transformers, vLLM) offers.

A backend returns one :class:`Completion` per :class:`Request`, in order. A request carries everything that
can differ per request: prompt, LoRA adapter, sampling settings, seed and an optional intervention (a spec of
:mod:`railsweep.interventions`), which each backend maps onto its own adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from railsweep.errors import ConfigError
from railsweep.interventions import Intervention


@dataclass(frozen=True)
class SamplingSpec:
    """How to decode one request. ``temperature == 0`` means greedy (then ``n`` must be 1). ``seed`` makes
    the ``n`` samples reproducible whatever else shares the batch."""

    n: int = 1
    temperature: float = 0.0
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    return_entropy: bool = False  # per-step full-vocabulary entropy (nats) of the processed logits

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"number of samples must be >= 1, got n={self.n}")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got T={self.temperature}")
        if self.max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature == 0 and self.n != 1:
            raise ConfigError(f"greedy decoding (T=0) yields one sample, got n={self.n}")


@dataclass(frozen=True)
class Request:
    prompt: str
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    adapter: str | None = None  # LoRA adapter name; None = base model
    intervention: Intervention | None = None


@dataclass
class Sample:
    token_ids: list[int]  # generated ids, cut after the stop string's last token; EOS kept if emitted
    text: str  # decoded generated text, cut before the stop string
    finish_reason: str  # "stop" (stop string or EOS) or "length"
    entropies: list[float] | None = None  # per generated step, when SamplingSpec.return_entropy
    triggers: int = 0  # how many steps the intervention changed the logits (RailCap/BanTop)


@dataclass
class Completion:
    samples: list[Sample]


@runtime_checkable
class Engine(Protocol):
    """A decoding backend. Implementations: ``TransformersEngine``, ``VLLMEngine``."""

    name: str

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Decode every request; returns one Completion per request, in order."""

    def adapters(self) -> list[str]:
        """Names of the LoRA adapters this engine can serve."""

    def supports(self, intervention: type) -> bool:
        """Whether this engine implements the given intervention spec type."""

    def close(self) -> None: ...
