"""The distributed sweep: Ray Tune over cells, engine actors, MLflow streaming, Tables 1–4.

Four parts, importing one way (spec ← plan ← run; tracking ← run), and the job on top. Only the job entry point
:mod:`~railsweep.sweep.job` calls ``ray.init``; the local Ray head and MLflow server live in
:mod:`railsweep.services`.

- :mod:`~railsweep.sweep.spec` — what a sweep is: the spec YAML as validated frozen dataclasses, the presets
  (package data), a spec's paths resolved, a harness group's member specs, the command line's overrides;
- :mod:`~railsweep.sweep.plan` — what a sweep will do and cost before it starts: the grid of cells, the
  detectors' readout cells, the engine pool, the resource plan, the price and the throughputs it reads;
- :mod:`~railsweep.sweep.run` — the sweep running on Ray: the driver, the waves of engine actors and Tune
  trials, the steps after the trials (dynamics, detection, publishing), the progress line, the fault hook;
- :mod:`~railsweep.sweep.tracking` — MLflow: the parent and cell runs, how they open in the UI, reading them
  back as records, and the tables and figures published on the parent run;
- :mod:`~railsweep.sweep.job` — the Ray job's entry point (``python -m railsweep.sweep.job``; ``sweeps/*.py``
  wrap it): ``ray.init``, :func:`~railsweep.sweep.run.driver.run_sweep`.
"""

from railsweep.sweep.spec.sweep_spec import PRESETS, SweepSpec, load_spec, spec_from_dict

__all__ = ["PRESETS", "SweepSpec", "load_spec", "spec_from_dict"]
