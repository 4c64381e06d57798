"""What the trainers share (miniature-world pretraining, LoRA contamination): the training attention.

- :mod:`~railsweep.training.attention` — block-causal attention for training small models on a CPU.
"""
