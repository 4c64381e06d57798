"""Resumable LoRA training: a run named by what decides its result, checkpointed as it goes, kept once finished,
so a killed world build or recipe search picks up where it stopped instead of starting over.

A run's key (:func:`run_key`) is the sha256 of the recipe, the training texts in order, the base model's weight,
config and tokenizer files, the weight files of the adapter it continues from and its arithmetic (device, SIMD
width: :func:`railsweep.contamination.lora.arithmetic`). Under ``<store>/<key>/``:

- ``checkpoint.pt``: the adapter's trainable weights, the optimiser's and scheduler's states, the torch RNG state,
  the steps done, their losses and the seconds spent, written atomically every :data:`CHECKPOINT_EVERY_S` seconds
  of training;
- ``adapter/`` and ``training.json``: the finished adapter and its training record (the checkpoint is then
  removed). A later run with the same key hard-links the adapter's files into its own folder and returns the
  record, marked ``"resumed": "finished"``, instead of training.

A resumed run takes the same steps over the same batches as an uninterrupted one, so on the same machine and thread
count its adapter is the same to the bit (tests/test_contamination_resume.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from railsweep.atomic import link_files, write_atomic, write_dir_atomic, write_text_atomic
from railsweep.provenance import file_sha256

CHECKPOINT_EVERY_S = 600.0  # a smollm2 checkpoint is ~0.4 GB (adapter + AdamW moments): seconds to write


def run_key(base_dir: Path, texts: Sequence[str], recipe, init_adapter: Path | None,
            arithmetic: Mapping[str, str | None]) -> str:  # fmt: skip
    """The digest of everything that decides a run's adapter (threads aside): the base's weights, config and
    tokenizer files, the starting adapter's weights (its config names the base's path, so not it), ``arithmetic``."""
    h = hashlib.sha256(json.dumps(dataclasses.asdict(recipe), sort_keys=True).encode())
    h.update(json.dumps(dict(arithmetic), sort_keys=True).encode())
    for text in texts:
        h.update(hashlib.sha256(text.encode()).digest())
    for folder, kinds in ((base_dir, (".safetensors", ".bin", ".json")), (init_adapter, (".safetensors", ".bin"))):
        for path in sorted(Path(folder).iterdir()) if folder is not None else ():
            if path.is_file() and path.suffix in kinds:
                h.update(f"{path.name}:{file_sha256(path)}".encode())
    return h.hexdigest()[:24]


@dataclass
class Progress:
    """Where a run stands: optimiser steps done, their losses, training seconds spent before this process."""

    step: int = 0
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


class Run:
    """One run's folder in the store; ``log`` hears what is resumed and when a checkpoint is written."""

    def __init__(self, store: str | Path, key: str, log=None):
        self.folder, self.log = Path(store) / key, log or (lambda msg: None)
        self.saved = time.time()

    def finished(self, out_dir: Path) -> dict | None:
        """The record of a finished run, its adapter's files linked into ``out_dir``; None when unfinished."""
        record = self.folder / "training.json"
        if not record.is_file():
            return None
        write_dir_atomic(out_dir, lambda tmp: link_files(self.folder / "adapter", tmp), replace=True)
        self.log(f"lora run {self.folder.name} finished earlier: its adapter reused, not trained")
        return {**json.loads(record.read_text()), "resumed": "finished"}

    def restore(self, model, opt, sched) -> Progress:
        """Load the checkpoint (if any) into the trainable weights, optimiser, scheduler and RNG."""
        import torch

        path = self.folder / "checkpoint.pt"
        if not path.is_file():
            return Progress()
        state = torch.load(path, weights_only=True)
        trainable = dict(_trainable(model))
        with torch.no_grad():
            for name, value in state["adapter"].items():
                trainable[name].copy_(value)
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        torch.set_rng_state(state["rng"])
        self.log(f"lora run {self.folder.name} resumed at step {state['step']} from its checkpoint")
        return Progress(int(state["step"]), [float(x) for x in state["losses"]], float(state["seconds"]))

    def checkpoint(self, model, opt, sched, done: Progress, every: float | None = None) -> None:
        """Write the checkpoint when ``every`` seconds (default :data:`CHECKPOINT_EVERY_S`) have passed."""
        import torch

        if time.time() - self.saved < (CHECKPOINT_EVERY_S if every is None else every):
            return
        state = {"adapter": {n: p.detach().clone() for n, p in _trainable(model)}, "opt": opt.state_dict(),
                 "sched": sched.state_dict(), "rng": torch.get_rng_state(), "step": done.step,
                 "losses": torch.tensor(done.losses, dtype=torch.float64), "seconds": done.seconds}  # fmt: skip
        write_atomic(self.folder / "checkpoint.pt", lambda tmp: torch.save(state, tmp))
        self.saved = time.time()
        self.log(f"lora run {self.folder.name}: checkpoint at step {done.step}")

    def finish(self, out_dir: Path, stats: dict) -> None:
        """Keep the finished adapter (hard links to ``out_dir``'s files) and its record; drop the checkpoint."""
        write_dir_atomic(self.folder / "adapter", lambda tmp: link_files(out_dir, tmp), replace=True)
        write_text_atomic(self.folder / "training.json", json.dumps(stats, sort_keys=True) + "\n")
        (self.folder / "checkpoint.pt").unlink(missing_ok=True)


def _trainable(model):
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]
