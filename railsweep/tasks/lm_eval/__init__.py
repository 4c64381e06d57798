"""``--task lm_eval:NAME``: tasks that lm-evaluation-harness's own code runs (``spec.py``: the checked config,
``task.py``: prompts and filters on local data, ``groups.py``: a group or tag's member tasks)."""
