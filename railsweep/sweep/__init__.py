"""The distributed sweep: Ray Tune over cells, engine actors, MLflow streaming, Tables 1–4.

Modules (one noun each; only the job entry point :mod:`~railsweep.sweep.job` calls ``ray.init``; the local
Ray head and MLflow server live in :mod:`railsweep.services`):

- :mod:`~railsweep.sweep.spec` — sweep spec YAML → validated frozen dataclasses, presets (``presets/*.yaml``,
  package data); its sections (one per YAML block) in :mod:`~railsweep.sweep.sections`;
- :mod:`~railsweep.sweep.resolve` — a spec's miniature world built or reused and its paths filled in (torch);
- :mod:`~railsweep.sweep.cells` — the grid: clean references first, stable cell ids, per-table filters;
- :mod:`~railsweep.sweep.engine_server` — engine actors (one per core or GPU, dealt out over the families);
- :mod:`~railsweep.sweep.actors` — the progress board and the names trials share with the engine actors;
- :mod:`~railsweep.sweep.trial` — the Tune trainable (one cell per trial, a thin CPU client);
- :mod:`~railsweep.sweep.tracking` — MLflow parent/child runs with retries and idempotent cells;
- :mod:`~railsweep.sweep.reader` — a sweep's runs in MLflow → typed records (:mod:`railsweep.results.records`);
- :mod:`~railsweep.sweep.publish` — finished cells in MLflow → tables and figures on the parent run;
- :mod:`~railsweep.sweep.detect_cells` — the readout cells a spec's ``detectors`` (cdd, perturb) read;
- :mod:`~railsweep.sweep.detection` — the detectors on every family × domain, truth-scored, on the parent run;
- :mod:`~railsweep.sweep.plan` — engines per family and each engine's and trial's CPUs, GPUs and threads;
- :mod:`~railsweep.sweep.driver` — :func:`run_sweep` wiring it all together, the dynamics step of a spec with
  ``temperatures`` included (:mod:`railsweep.dynamics.step`, on Ray through :mod:`railsweep.dynamics.ray_step`:
  fits, gains and predictions under ``dynamics/`` of the parent run);
- :mod:`~railsweep.sweep.waves` — the engines and the trials, in waves while a miniature world is being built;
- :mod:`~railsweep.sweep.progress` — the live progress line / bar;
- :mod:`~railsweep.sweep.options` — the options that choose and override a spec, shared by the job and
  ``railsweep sweep``;
- :mod:`~railsweep.sweep.pricing` — what a sweep costs, before it starts (``--dry-run``), from what
  :mod:`~railsweep.sweep.price_inputs` knows without a build;
- :mod:`~railsweep.sweep.job` — the Ray job's entry point (``python -m railsweep.sweep.job``; ``sweeps/table*.py``
  wrap it): ``ray.init``, :func:`~railsweep.sweep.driver.run_sweep`.
"""

from railsweep.sweep.spec import PRESETS, SweepSpec, load_spec, spec_from_dict

__all__ = ["PRESETS", "SweepSpec", "load_spec", "spec_from_dict"]
