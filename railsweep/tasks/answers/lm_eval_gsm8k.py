"""lm-evaluation-harness ``gsm8k_cot``'s answer filters and its comparison, re-implemented with ``re``.

The harness (``gsm8k-cot.yaml``, task version 3.0) cuts a response at each of its ``until`` strings in turn,
then reads it through two independent filter chains and scores each with ``exact_match``:

1. **strict-match**: :data:`STRICT`'s FIRST match (case-sensitive; its final ``.`` is any character, so "The
   answer is 18" at the very end reads "1");
2. **flexible-extract**: :data:`FLEXIBLE`'s LAST match, its first non-empty group;
3. either chain gives the fallback ``"[invalid]"`` when its regex finds nothing;
4. **exact_match** against ``answer.split('####')[-1].strip()``: delete :data:`_IGNORE` in order from both,
   lower-case, compare as strings ("18.00" is not "18").

railsweep's ``lm_eval`` rule takes strict-match, else flexible-extract; the harness's two scores are counted
per cell too. These functions reproduce the harness's outputs in ``tests/fixtures/lm_eval_gsm8k_cot.jsonl``.
"""

from __future__ import annotations

import re

from railsweep.tasks.base import Grade

FALLBACK = "[invalid]"
UNTIL = ("Q:", "</s>", "<|im_end|>")  # gsm8k_cot's generation_kwargs.until
STRICT = re.compile(r"The answer is (\-?[0-9\.\,]+).")
FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
# exact_match's regexes_to_ignore, applied in this order to prediction and target alike
_IGNORE = tuple(re.compile(p) for p in (",", r"\$", r"(?s).*#### ", r"\.$"))


def regex_filter(pattern: re.Pattern[str], response: str, group_select: int) -> str | None:
    """The harness's ``regex`` filter on one response: the selected match's only group, or its first non-empty
    group of several, or the whole match, stripped; None when nothing matched."""
    found = pattern.findall(response)
    if not found:
        return None
    hit = found[group_select]
    if isinstance(hit, tuple):  # several groups: the first that matched
        hit = next((g for g in hit if g), None)
    return hit.strip() if hit is not None else None


def cut_until(response: str) -> str:
    """The response as the harness's ``generate_until`` returns it: split at each ``until`` string in turn."""
    for term in UNTIL:
        response = response.split(term)[0]
    return response


def strict_match(response: str) -> str:
    """The strict-match filter's output: the first "The answer is N?" number, or ``"[invalid]"``."""
    return regex_filter(STRICT, response, 0) or FALLBACK


def flexible_extract(response: str) -> str:
    """The flexible-extract filter's output: the last number-like run, or ``"[invalid]"``."""
    return regex_filter(FLEXIBLE, response, -1) or FALLBACK


def _canonical(text: str, regexes_to_ignore: tuple[re.Pattern[str], ...], ignore_case: bool) -> str:
    for pattern in regexes_to_ignore:
        text = pattern.sub("", text)
    return text.lower() if ignore_case else text


def exact_match(prediction: str, target: str, regexes_to_ignore: tuple[re.Pattern[str], ...] = _IGNORE,
                ignore_case: bool = True) -> bool:  # fmt: skip
    """lm-eval's ``exact_match``, by default with gsm8k_cot's settings (punctuation and digits kept)."""
    return _canonical(prediction, regexes_to_ignore, ignore_case) == _canonical(target, regexes_to_ignore, ignore_case)


def strict_match_correct(response: str, target: str) -> bool:
    """The harness's ``exact_match,strict-match`` for one response (cut at ``until`` first)."""
    return exact_match(strict_match(cut_until(response)), target)


def flexible_extract_correct(response: str, target: str) -> bool:
    """The harness's ``exact_match,flexible-extract`` for one response (cut at ``until`` first)."""
    return exact_match(flexible_extract(cut_until(response)), target)


def grade_lm_eval(response: str, target: str) -> Grade:
    """railsweep's ``lm_eval`` rule: strict-match, else flexible-extract, after the ``until`` cut; ``pred`` is
    the filter output as the harness logs it (not normalised), None when both filters give ``"[invalid]"``."""
    response = cut_until(response)
    pred = strict_match(response)
    rule = "strict"
    if pred == FALLBACK:
        pred, rule = flexible_extract(response), "flexible"
    if pred == FALLBACK:
        return Grade(correct=False, pred=None, rule="none")
    return Grade(correct=exact_match(pred, target), pred=pred, rule=rule)  # type: ignore[arg-type]
