"""What a sweep is, checked before anything starts.

- :mod:`~railsweep.sweep.spec.sweep_spec` — sweep spec YAML → validated frozen dataclasses (:class:`SweepSpec`),
  the presets (``presets/*.yaml``, package data);
- :mod:`~railsweep.sweep.spec.sections` — its sections, one per YAML block, over the typed schema of
  :mod:`~railsweep.sweep.spec._schema`;
- :mod:`~railsweep.sweep.spec.resolve` — a spec's miniature world built or reused and its paths filled in (torch);
- :mod:`~railsweep.sweep.spec.members` — a harness group or tag as one spec per member task;
- :mod:`~railsweep.sweep.spec.options` — the options that choose and override a spec, shared by the job and
  ``railsweep sweep``.
"""
