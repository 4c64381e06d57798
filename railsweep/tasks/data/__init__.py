"""Reading and fetching task data: ``text.py`` (UTF-8 text and JSON lines, with clear errors), ``rows.py`` (a task
file's rows in JSONL, JSON, CSV, Parquet or from the hub), ``gsm8k_rows.py`` and ``math_rows.py`` (each coded task's
rows and exemplars), ``leak_split.py`` (which test questions a model saw), ``paraphrases.py`` (the PQ paraphrases),
``shared_data.py`` (where the shared data folder is) and ``fetch.py`` (``railsweep data gsm8k``)."""
