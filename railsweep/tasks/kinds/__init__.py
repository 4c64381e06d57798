"""The task kinds railsweep runs itself: GSM8K and MATH (sharing ``coded.py``), and the task a task file declares
(``file_spec.py`` checks it, ``file_task.py`` reads its rows and renders prompts with ``file_templates.py``)."""
