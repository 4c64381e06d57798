"""Methods mixed into every vLLM worker (``LLM(worker_extension_cls=...)``), called by name.

``collective_rpc("railsweep_pop_triggers")`` reaches the railsweep logits
processor instance of the worker and returns its per-request trigger counts as
plain data (no insecure serialisation needed). Must stay importable in a fresh
interpreter: vLLM spawns the engine-core process.
"""

from __future__ import annotations


class RailsweepWorkerExtension:
    def _railsweep_processors(self) -> list:
        runner = self.model_runner
        sampler = getattr(runner, "sampler", None)
        procs = getattr(sampler, "logits_processors", None)  # Model Runner V2
        if procs is None:
            batch = getattr(runner, "input_batch", None)  # V1 runner
            procs = list(batch.logitsprocs.all) if batch is not None else []
        return [p for p in procs if hasattr(p, "pop_triggers")]

    def railsweep_pop_triggers(self) -> list[list]:
        """``[[key, seed, count], ...]`` accumulated since the last call."""
        out: list[list] = []
        for proc in self._railsweep_processors():
            out.extend([k, s, c] for (k, s), c in proc.pop_triggers().items())
        return out
