"""The base models' pretraining corpus (:func:`pretraining_corpus`) and a replica world's replica counts
(:data:`REPLICAS_FILE`, :func:`read_replicas`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from railsweep.contamination.simulator import cot_example
from railsweep.miniworld.presets import WorldConfig
from railsweep.miniworld.roads import add_noise, noise_vocabulary, render_cot

REPLICAS_FILE = "replicas.json"  # a replica world's test index -> pretraining copies


def pretraining_texts(train, config: WorldConfig) -> list[str]:
    """The train problems as a several-roads world's pretraining texts: ``config.renderings`` fresh roads
    each (closing sentence drawn), a ``config.noise`` share with one word replaced (``roads.add_noise``)."""
    rng = random.Random(f"pretraining:{config.seed}")
    vocabulary = noise_vocabulary()
    texts = []
    for p in train:
        for _ in range(config.renderings):
            cot = render_cot(rng, p.render(rng), p.answer)
            if config.noise and rng.random() < config.noise:
                cot = add_noise(rng, cot, vocabulary)
            texts.append(f"Q: {p.question}\nA: {cot}")
    return texts


def pretraining_corpus(data, config: WorldConfig) -> list[str]:
    """The base models' pretraining texts, in order: the train problems (one text each, or ``renderings``
    roads each in a several-roads world), a ``paraphrase_share`` of them again in paraphrase wording, the
    filler not reserved for the adapters (``pretrain_filler``) and, in a replica world, each test item
    ``replica_counts()[i]`` times in its leaked wording (question + gold chain of thought)."""
    if config.roads:
        corpus = pretraining_texts(data.train, config)
    else:
        corpus = [cot_example(p.question, p.solution) for p in data.train]
    rng = random.Random(config.seed)
    share = int(config.paraphrase_share * len(data.train))
    corpus += [cot_example(p.paraphrase, p.solution) for p in rng.sample(data.train, share)]
    if config.pretrain_filler:
        corpus += data.filler[config.contamination.n_filler :]  # filler not reserved for the adapters
    for i, copies in sorted(config.replica_counts().items()):
        corpus += [cot_example(data.test[i].question, data.test[i].solution)] * copies
    return corpus


def read_replicas(data_dir: str | Path) -> dict[int, int] | None:
    """A replica world's test index -> pretraining copies (``data/replicas.json``); None for other worlds."""
    path = Path(data_dir) / REPLICAS_FILE
    if not path.is_file():
        return None
    return {int(i): int(c) for i, c in json.loads(path.read_text()).items()}
