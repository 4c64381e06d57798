"""Methods mixed into every vLLM worker (``LLM(worker_extension_cls=...)``), called by name.

``collective_rpc("railsweep_pop_results")`` returns the worker's railsweep processors' trigger counts and
entropies as plain data (no insecure serialisation). Importable in a fresh interpreter (the engine core's).
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
        return [p for p in procs if hasattr(p, "pop_results")]

    def railsweep_pop_results(self) -> list[list]:
        """``[[key, seed, triggers, entropies], ...]`` accumulated since the last call."""
        out: list[list] = []
        for proc in self._railsweep_processors():
            triggers, ents = proc.pop_results()
            for k in triggers.keys() | ents.keys():
                out.append([k[0], k[1], triggers.get(k, 0), ents.get(k)])
        return out
