"""Reading an answer from a response and grading it, one module per rule set.

GSM8K: ``gsm8k_solution.py`` (a solution's gold answer and its chain-of-thought rendering), ``gsm8k_rules.py`` (the
``final``, ``first`` and ``lm_eval`` rules) and ``lm_eval_gsm8k.py`` (the harness's gsm8k_cot filters, with
``re``). MATH: ``math_boxed.py`` (boxed answers and their string normalisation), ``math_equiv.py`` with
``latex_sympy.py`` (equivalence, with sympy) and ``math_rules.py`` (the ``final`` and ``first`` rules). A task file's
declared rules: ``file_rule_spec.py`` (the checked records, no sympy) and ``file_rules.py`` (reading and grading
under them)."""
