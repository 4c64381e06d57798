"""Two per-question cells of one model, on the original wording (gsm8k) and on its paraphrase (pq)."""

from __future__ import annotations


def write_cells(tmp_path, c_orig, c_para, m=4, para_indices=None):
    """Two cells (gsm8k, pq) of one model; returns their per-question paths."""
    from railsweep.config import CellConfig
    from railsweep.engines.base import Sample
    from railsweep.results.io import write_cell
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Grade, Question

    paths = []
    for domain, cs, indices in (("gsm8k", c_orig, None), ("pq", c_para, para_indices)):
        indices = list(range(len(cs))) if indices is None else indices
        qs = [Question(i, f"q{i}", "x\n#### 1", "1", leaked=i % 2 == 0) for i in indices]
        smp, g = Sample([1], "x", "stop"), Grade(True, "1", "strict")
        outs = [QuestionOutcome(i, [smp] * m, [g] * m, c, m, int(c > 0)) for i, c in zip(indices, cs)]
        cell = CellConfig(model="m", strategy="identity", task_dir=str(tmp_path), m=m, domain=domain)
        paths.append(write_cell(tmp_path / domain, cell, outs, qs, provenance={}).questions)
    return paths
