"""What a sweep will do and what it costs, known before it starts (no torch, Ray or MLflow).

- :mod:`~railsweep.sweep.plan.cells` — the grid: clean references first, stable cell ids, per-table filters;
- :mod:`~railsweep.sweep.plan.detect_cells` — the readout cells a spec's ``detectors`` (cdd, perturb) read;
- :mod:`~railsweep.sweep.plan.pool` — how many engine actors per family, and which of them decodes a cell;
- :mod:`~railsweep.sweep.plan.resources` — each engine's and trial's CPUs, GPUs and threads;
- :mod:`~railsweep.sweep.plan.pricing` — what a sweep costs (``--dry-run``), from what
  :mod:`~railsweep.sweep.plan.price_inputs` knows without a build and the throughputs of
  :mod:`~railsweep.sweep.plan.throughput` (``throughput_cpu.json``, package data).
"""
