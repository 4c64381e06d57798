"""Sub-commands of the ``railsweep`` CLI, one module each (listed in ``railsweep.cli.COMMANDS``): each exposes
``add_parser(subparsers)`` and ``run(args) -> int``, raises a RailsweepError for bad input and keeps heavy
imports (torch, ray, mlflow) inside ``run``.
"""
