"""RailCap (method.md §3): cap the greedy trajectory's successor tokens while sampling.

``core`` holds the batched pure-torch math, ``hf_processor`` the transformers
adapter, ``strategy`` the registered strategy.
"""
