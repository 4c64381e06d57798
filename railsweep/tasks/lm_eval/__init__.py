"""``--task lm_eval:NAME``: tasks lm-evaluation-harness's own code runs (config, prompts and filters, groups)."""
