"""Reading an answer from a response and grading it, one module per rule set: GSM8K (``gsm8k_*``,
``lm_eval_gsm8k``), MATH (``math_*``, ``latex_sympy``) and a task file's declared rules (``file_rule*``)."""
