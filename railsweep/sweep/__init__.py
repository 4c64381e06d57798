"""The distributed sweep: Ray Tune over cells, engine actors, MLflow streaming, Tables 1–4.

Four parts, importing one way (spec ← plan ← run; tracking ← run): ``spec`` (what a sweep is), ``plan`` (what
it will do and cost), ``run`` (the sweep on Ray), ``tracking`` (MLflow); on top, the Ray job's entry point
:mod:`~railsweep.sweep.job`, the only caller of ``ray.init``.
"""

from railsweep.sweep.spec.sweep_spec import PRESETS, SweepSpec, load_spec, spec_from_dict

__all__ = ["PRESETS", "SweepSpec", "load_spec", "spec_from_dict"]
