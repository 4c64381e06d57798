"""Shortcut-neuron patching (Zhu et al., ACL 2025): localise shortcut neurons once (``localisation``), patch
them at evaluation (``strategy``)."""
