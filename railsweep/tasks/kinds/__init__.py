"""The task kinds railsweep runs with its own code: GSM8K (``gsm8k.py``) and MATH (``math.py``), which share
``coded.py``, and the task a task file declares (``file_spec.py`` reads and checks the file, ``file_task.py``
reads its rows and renders its prompts with ``file_templates.py``)."""
