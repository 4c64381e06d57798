"""Diagnostics of a model pair's generation behaviour (the paper's Figure 1 and RailCap's premises)."""

from railsweep.diagnostics.figure1 import Figure1, Figure1Settings, figure1, rouge_l

__all__ = ["Figure1", "Figure1Settings", "figure1", "rouge_l"]
