"""RailCap (method.md §3): cap the greedy trajectory's successor tokens while sampling.

``strategy`` holds the registered strategy, ``trajectory`` which tokens of the greedy
completion form the rail; the spec and the math live in :mod:`railsweep.interventions.railcap`.
"""
