"""The distributed sweep: Ray Tune over cells, engine actors, MLflow streaming, Tables 1–4.

Four parts, importing one way (spec ← plan ← run; tracking ← run): :mod:`~railsweep.sweep.spec` (what a sweep
is), :mod:`~railsweep.sweep.plan` (what it will do and cost, before it starts), :mod:`~railsweep.sweep.run`
(the sweep running on Ray), :mod:`~railsweep.sweep.tracking` (MLflow), and on top the Ray job's entry point
:mod:`~railsweep.sweep.job`, the only caller of ``ray.init``. The local Ray head and MLflow server live in
:mod:`railsweep.services`.
"""

from railsweep.sweep.spec.sweep_spec import PRESETS, SweepSpec, load_spec, spec_from_dict

__all__ = ["PRESETS", "SweepSpec", "load_spec", "spec_from_dict"]
