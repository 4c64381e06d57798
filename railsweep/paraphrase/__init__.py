"""``railsweep paraphrase``: the PQ domain for any GSM8K-style test set, from any OpenAI-compatible endpoint.

The paper's Appendix A prompt (:mod:`.prompt`), a standard-library client (:mod:`.client`), the checks a kept
paraphrase passes (:mod:`.checks`, :mod:`.numbers`, :mod:`.rouge`), the ask-check-retry loop (:mod:`.build`).
"""

from railsweep.paraphrase.build import Budget, Item, Outcome, paraphrase_all, pq_rows, read_items, report
from railsweep.paraphrase.checks import REASONS, Verdict, check_paraphrase
from railsweep.paraphrase.client import ChatClient, ChatSettings, normalise_endpoint
from railsweep.paraphrase.prompt import SYSTEM_PROMPT

__all__ = ["REASONS", "SYSTEM_PROMPT", "Budget", "ChatClient", "ChatSettings", "Item", "Outcome", "Verdict",
           "check_paraphrase", "normalise_endpoint", "paraphrase_all", "pq_rows", "read_items", "report"]  # fmt: skip
