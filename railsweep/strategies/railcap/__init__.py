"""RailCap (method.md §3): ``strategy`` (registered), ``trajectory`` (which tokens form the rail) and
``numbers``; the spec and the math live in :mod:`railsweep.interventions.railcap`."""
