"""Configuration of the contamination simulator (method.md §5, paper §5.1): defaults are the paper's recipe;
the miniature world scales the data sizes down and keeps the optimisation recipe."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from railsweep.errors import ConfigError
from railsweep.training.attention import ATTENTIONS

DOMAINS = ("gsm8k", "pq")
PRECISIONS = ("auto", "bf16", "mixed", "fp32")


@dataclass(frozen=True)
class LoraRecipe:
    """How one LoRA adapter is trained (paper: LLaMA-Factory; here peft)."""

    r: int = 64
    alpha: int = 128
    dropout: float = 0.0
    target_modules: str | tuple[str, ...] = "all-linear"  # every linear projection except the LM head
    lr: float = 2e-4
    scheduler: str = "cosine"  # "cosine" or "constant" (both after linear warmup)
    warmup_ratio: float = 0.1
    global_batch: int = 32  # examples per optimiser step (gradient accumulation over micro batches)
    micro_batch: int = 8  # examples per forward pass
    epochs: int = 5
    max_length: int = 512  # tokens per example (longer ones are cut)
    # N > 0: each epoch's shuffled examples packed into sequences of at most N tokens, joined by the few-shot
    # separator (every item also seen after others, as in a few-shot prompt); global_batch counts sequences
    pack_length: int = 0
    # "auto": bf16 on GPU, fp32 on CPU. "bf16": base stored in bf16, matmuls under bf16 autocast (the paper's
    # GPU setting). "mixed": fp32 base (the weights the engines serve), bf16 autocast. "fp32": no autocast.
    # Adapter weights and the optimizer are fp32 in every case.
    precision: str = "auto"
    attention: str = "auto"  # railsweep.training.attention: "auto" = block-causal on a CPU, native on a GPU
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("r", "alpha", "global_batch", "micro_batch", "epochs", "max_length"):
            if getattr(self, name) < 1:
                raise ConfigError(f"LoRA {name} must be >= 1, got {name}={getattr(self, name)}")
        if self.pack_length < 0:
            raise ConfigError(f"LoRA pack_length must be >= 0 (0 = no packing), got {self.pack_length}")
        if self.global_batch % self.micro_batch:
            raise ConfigError(
                f"global_batch ({self.global_batch}) must be a multiple of micro_batch ({self.micro_batch})"
            )
        if not self.lr > 0:
            raise ConfigError(f"LoRA learning rate must be > 0, got lr={self.lr}")
        if not 0 <= self.warmup_ratio < 1:
            raise ConfigError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.scheduler not in ("cosine", "constant"):
            raise ConfigError(f"scheduler must be 'cosine' or 'constant', got {self.scheduler!r}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}; got {self.precision!r}")
        if self.attention not in ATTENTIONS:
            raise ConfigError(
                f"LoRA attention must be one of {', '.join(ATTENTIONS)}; got {self.attention!r}"
            )
        if isinstance(self.target_modules, list):
            object.__setattr__(self, "target_modules", tuple(self.target_modules))


@dataclass(frozen=True)
class ContaminationConfig:
    """What M_cl and M_co are trained on. M_cl: ``n_filler`` filler texts + ``n_train`` train-split questions.
    M_co (per domain): the same filler + ``n_leak`` leaked test questions (original wording for "gsm8k",
    paraphrase for "pq"), each ``leak_copies`` times, + ``co_replay`` of M_cl's train questions, trained further
    from M_cl."""

    n_filler: int = 1840
    n_train: int = 660
    n_leak: int = 660
    domains: tuple[str, ...] = DOMAINS
    filler: str = "openorca"  # "openorca" (Hugging Face hub) or a path to a local .txt / .jsonl file
    seed: int = 0  # leak split, filler sample and train-question sample
    recipe: LoraRecipe = field(default_factory=LoraRecipe)
    clean_recipe: LoraRecipe | None = None  # M_cl's recipe when it differs from M_co's (default: ``recipe``)
    leak_copies: int = 1  # a leak duplicated (on the web, in a crawl)
    co_replay: int = 0  # a leak diluted in data the model has seen: M_cl's train questions in every M_co mix

    def __post_init__(self) -> None:
        if self.leak_copies < 1:
            raise ConfigError(f"leak_copies must be >= 1, got {self.leak_copies}")
        for name in ("n_filler", "n_train", "n_leak", "co_replay"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if isinstance(self.domains, list | str):
            object.__setattr__(
                self, "domains", (self.domains,) if isinstance(self.domains, str) else tuple(self.domains)
            )
        bad = [d for d in self.domains if d not in DOMAINS]
        if bad or not self.domains:
            known = ", ".join(DOMAINS)
            raise ConfigError(f"unknown contamination domain(s) {bad or self.domains!r}; known: {known}")
        for name in ("recipe", "clean_recipe"):
            if isinstance(recipe := getattr(self, name), dict):
                object.__setattr__(self, name, LoraRecipe(**recipe))

    @property
    def cl_recipe(self) -> LoraRecipe:
        return self.clean_recipe or self.recipe

    def to_dict(self) -> dict:
        """The fields, the M_co mix's ``leak_copies`` and ``co_replay`` left out at their defaults (the digests
        of the worlds built before they existed stay)."""
        d = dataclasses.asdict(self)
        for name, default in (("leak_copies", 1), ("co_replay", 0)):
            if d[name] == default:
                del d[name]
        return d
