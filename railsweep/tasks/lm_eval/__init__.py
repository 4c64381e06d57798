"""``--task lm_eval:NAME``: tasks that lm-evaluation-harness's own code runs. ``spec.py`` finds and checks the
harness's config, ``task.py`` builds its prompts and filters on local data, ``groups.py`` expands a harness group or
tag into its member tasks."""
