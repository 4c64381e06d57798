"""The sweep running on Ray: engine actors, one Ray Tune trial per cell, and the steps after the trials.

- :mod:`~railsweep.sweep.run.driver` — :func:`run_sweep` wiring it all together;
- :mod:`~railsweep.sweep.run.waves` — the engines and the trials, in waves while a miniature world is being
  built (:mod:`~railsweep.sweep.run.staged`);
- :mod:`~railsweep.sweep.run.engine_server` — engine actors (one per core or GPU, dealt out over the families),
  a cell's decoding jobs shared with idle engines (:mod:`~railsweep.sweep.run.sharing`);
- :mod:`~railsweep.sweep.run.actors` — the progress board and the names trials share with the engine actors;
- :mod:`~railsweep.sweep.run.trial` — the Tune trainable (one cell per trial, a thin CPU client);
- :mod:`~railsweep.sweep.run.finish` — the steps after the trials, sharing the driver's
  :class:`~railsweep.sweep.run.sweep_run.SweepRun`: the dynamics step (:mod:`railsweep.dynamics.step`), the
  detection step (:mod:`~railsweep.sweep.run.detection`), publishing, the parent run closed;
- :mod:`~railsweep.sweep.run.progress` — the live progress line / bar;
- :mod:`~railsweep.sweep.run.faults` — the fault-injection hook of the tests.
"""
