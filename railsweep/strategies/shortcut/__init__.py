"""Shortcut-neuron patching (Zhu et al., ACL 2025): localise shortcut neurons once, patch them at evaluation.

``localisation`` scores every MLP neuron of layers 0..L−2 and caches the ranking; ``strategy`` evaluates
M_co with its top-K neurons overwritten by a reference model's live activations (``engines.neuron_patch``).
"""
