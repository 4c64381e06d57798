"""What the trainers share (miniature-world pretraining, LoRA contamination): block-causal training attention
(:mod:`~railsweep.training.attention`) and step reports (:mod:`~railsweep.training.progress`)."""
