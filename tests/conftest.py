"""Shared fixtures: a real tiny model written once per test session."""

from __future__ import annotations

import pytest
import torch

from railsweep.testing import make_tiny_model

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random llama (word-level tokenizer, 2 layers, hidden 64) saved with save_pretrained."""
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "llama", family="llama", seed=0)
