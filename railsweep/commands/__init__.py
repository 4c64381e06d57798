"""Sub-commands of the ``railsweep`` CLI, one module each (listed in ``railsweep.cli.COMMANDS``).

A command module exposes ``add_parser(subparsers)``, which adds its parser
(``subparsers.add_parser("<name>", ...)``), and ``run(args) -> int``, which the
CLI calls with the parsed arguments; raise a RailsweepError for bad input. Keep heavy imports (torch, ray, mlflow) inside ``run``.
"""
