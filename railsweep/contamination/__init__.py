"""Contamination simulator: the paper's LoRA recipe (method.md §5) with peft."""

from railsweep.contamination.config import DOMAINS, ContaminationConfig, LoraRecipe
from railsweep.contamination.filler import load_filler
from railsweep.contamination.leak import LeakSplit, make_leak_split, save_leak_split
from railsweep.contamination.lora import train_lora
from railsweep.contamination.simulator import contaminate_family, cot_example, training_mixes

__all__ = [
    "DOMAINS", "ContaminationConfig", "LeakSplit", "LoraRecipe", "contaminate_family", "cot_example",
    "load_filler", "make_leak_split", "save_leak_split", "train_lora", "training_mixes",
]  # fmt: skip
