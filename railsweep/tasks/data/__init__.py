"""Reading and fetching task data: text and rows, each coded task's rows and exemplars, leak splits, the PQ
paraphrases, the shared data folder and ``railsweep data gsm8k``."""
