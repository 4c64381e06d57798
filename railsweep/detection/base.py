"""The Detector base, the registry, and what a detector scores: items and their inputs.

A detector turns :class:`Item` s (test, then control items) and the :class:`DetectInputs` it needs into
:class:`Scores`: one float per item, higher = more likely contaminated. Thresholds and truth scoring are
in :mod:`railsweep.detection.scoring`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from railsweep.errors import ConfigError
from railsweep.registry import Registry
from railsweep.tasks import to_cot

Group = Literal["test", "control"]


@dataclass(frozen=True)
class Item:
    """One question with its gold solution (GSM8K format, ending ``#### N``)."""

    item_id: int  # test: the question's index in the test split; control: its index in the control file
    group: Group
    question: str
    solution: str
    leaked: bool | None = None  # the truth, where known (test items of the miniature world)
    prompt: str | None = None  # the prompt a task file renders (``detect --task``); None: the GSM8K 8-shot prompt

    def text(self, fields: str = "question+solution") -> str:
        """The item as the corpus side reads it: the question, or question + solution."""
        if fields == "question":
            return self.question
        if fields == "question+solution":
            return f"{self.question}\n{self.solution}"
        raise ConfigError(f"fields must be 'question' or 'question+solution', got {fields!r}")

    def training_text(self) -> str:
        """The item as a model is trained and prompted on it: ``"Q: <question>\\nA: <CoT solution>"``."""
        return f"Q: {self.question}\nA: {to_cot(self.solution)}"


@dataclass(frozen=True)
class DetectInputs:
    """What the detectors read; each detector checks that its own inputs are present.

    corpus, text_field: the training corpus (ngram). model, adapter, reference_adapter: the base model
    directory, the evaluated LoRA adapter (None = the base) and the reference (None = the base) (loss,
    mink, cdd). responses: a cell's responses Parquet with greedy rows (cdd without decoding). fewshot: the
    exemplar JSON of the prompts cdd decodes. stop: the stop sequences of the task whose prompts the items
    carry (``Item.prompt``); None: GSM8K's. original, paraphrased: per-question Parquet files of one model
    and strategy on the original wording and on its paraphrase (perturb).
    """

    corpus: tuple[Path, ...] = ()
    text_field: str | None = None
    model: Path | None = None
    adapter: Path | None = None
    reference_adapter: Path | None = None
    responses: Path | None = None
    fewshot: Path | None = None
    stop: tuple[str, ...] | None = None
    original: Path | None = None
    paraphrased: Path | None = None
    batch_size: int = 16
    device: str = "cpu"

    def require(self, detector: str, *names: str) -> None:
        missing = [n for n in names if not getattr(self, n)]
        if missing:
            flags = ", ".join("--" + n.replace("_", "-") for n in missing)
            raise ConfigError(f"detector {detector!r} needs {flags}")


@dataclass
class Scores:
    """One score per item (float (N,), higher = more likely contaminated; NaN = undefined)."""

    setting: str  # e.g. "n=13,fields=question"; names the variant in tables
    score: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)  # more per-item columns


class Detector:
    """The base of every detector: ``name`` set by ``@register``, ``config`` by default the registered
    config class's defaults."""

    name: ClassVar[str]
    bounded: ClassVar[bool] = False  # scores lie in [0, 1], so a given threshold must too

    def __init__(self, config: Any = None):
        self.config = config or DETECTORS.make_config(self.name)

    def score(self, items: Sequence[Item], inputs: DetectInputs) -> list[Scores]:
        raise NotImplementedError


DETECTORS = Registry("detector", "railsweep.detection.builtins")
register = DETECTORS.register  # class decorator: ``@register("ngram", NgramConfig)``


# the registry's own methods under the names the package exports
known_detectors = DETECTORS.known
detector_classes = DETECTORS.classes  # (detector class, config class); unknown name -> ConfigError
make_config = DETECTORS.make_config  # ``params`` checked against the detector's config dataclass
build_detector = DETECTORS.build
