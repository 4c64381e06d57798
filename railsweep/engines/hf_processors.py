"""The transformers engine's adapters over the intervention math, for its hand-written decode loop.

:data:`PROCESSORS` is the one table from intervention spec type to adapter (a logits-editing intervention
also needs one entry in ``railsweep.engines.vllm_adapters.ADAPTERS``). A processor is called once per step as
``processor(logits[B, V], generated[B, S], step) -> (logits, triggered[B] | None)``; ``generated[:, :step]``
holds every row's tokens so far. ``None`` means "nothing changed", decided on the host so that the common
step costs almost nothing: unlike the core, these adapters may sync (the loop reads tokens back anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch

from railsweep.interventions.ban_top import BanTopSpec, ban_top
from railsweep.interventions.force_runner_up import ForceRunnerUpSpec, force_runner_up
from railsweep.interventions.railcap import RailCapSpec, cap_or_ban, departures, pack_specs
from railsweep.interventions.railcap_runs import advance_runs_, run_table, run_targets, start_runs

Result = tuple[torch.Tensor, torch.Tensor | None]  # (logits, triggered[B] or None)


class StepProcessor(Protocol):
    def __call__(self, logits: torch.Tensor, generated: torch.Tensor, step: int) -> Result: ...


class RailCapProcessor:
    """A batch's packed trajectories (``None`` spec = off) and their match runs
    (:mod:`~railsweep.interventions.railcap_runs`); a call at an earlier step than the last one (a new decode)
    restarts them. Steps of a call:
      1. feed the tokens generated since the last call to the runs; with ``stop_after_departure`` rows, mark
         the rows whose last capped step sampled none of its targets (:func:`departures`);
      2. stop when no window of any row still capping matches (the common step: one ``amax`` and a sync);
      3. only for the rows with a match, find the targets and cap or ban their logits.
    """

    def __init__(self, specs: Sequence[RailCapSpec | None], device: torch.device | str = "cpu"):
        self.batch = pack_specs(specs, device)
        self.table = run_table(self.batch)
        self._restart()

    def _restart(self) -> None:
        self._runs = start_runs(self.table)
        self._seen = 0  # tokens of each row fed to the runs
        self.departed = torch.zeros(self.batch.n.shape[0], dtype=torch.bool, device=self.batch.n.device)
        self._armed: tuple[int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def _settle(self, generated: torch.Tensor, step: int) -> None:
        """Step 1's departure check: the last capped step's sampled token against its targets."""
        if self._armed is None or self._armed[0] >= step:
            return
        at, rows, index, keep, trig = self._armed
        self.departed[rows] |= departures(index, keep, trig, generated[rows, at]) & self.batch.stop[rows]
        self._armed = None

    def __call__(self, logits: torch.Tensor, generated: torch.Tensor, step: int) -> Result:
        b = self.batch
        if b.min_n == 0:  # no row has RailCap
            return logits, None
        if step < self._seen:
            self._restart()
        for t in range(self._seen, step):
            advance_runs_(self._runs, self.table, generated[:, t])
        self._seen = step
        if b.stop is not None:
            self._settle(generated, step)
        if step < b.min_n or self._runs.amax().item() < 0:  # no row can match / none does
            return logits, None
        # only rows with a target pay for the logits update, which reads the whole vocabulary
        live = self._runs.amax(0) >= 0
        if b.stop is not None:
            live &= ~self.departed
        rows = live.nonzero().flatten()
        if rows.numel() == 0:
            return logits, None
        index, keep = run_targets(self._runs, self.table, rows)
        if rows.numel() == logits.shape[0]:
            logits, triggered = cap_or_ban(logits, index, keep, b.mode)
            trig = triggered
        else:
            sub, trig = cap_or_ban(logits[rows], index, keep, b.mode[rows])
            logits[rows] = sub
            triggered = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
            triggered[rows] = trig
        if b.stop is not None:
            self._armed = (step, rows, index, keep, trig)
        return logits, triggered


class BanTopProcessor:
    """``positions`` per row (``None`` spec = off)."""

    def __init__(self, specs: Sequence[BanTopSpec | None], device: torch.device | str = "cpu"):
        pos = [s.positions if s is not None else 0 for s in specs]
        self.max_positions = max(pos, default=0)
        self.positions = torch.tensor(pos, dtype=torch.long, device=device)
        self._gen_len = torch.zeros(len(specs), dtype=torch.long, device=device)

    def __call__(self, logits: torch.Tensor, generated: torch.Tensor, step: int) -> Result:
        if step >= self.max_positions:
            return logits, None
        self._gen_len.fill_(step)
        return ban_top(logits, self.positions, self._gen_len)


class ForceRunnerUpProcessor:
    """Each row's forced steps (``None`` spec = none); only those steps touch the logits."""

    def __init__(self, specs: Sequence[ForceRunnerUpSpec | None], device: torch.device | str = "cpu"):
        self.rows_at: dict[int, list[int]] = {}  # step -> rows forced at that step
        for r, s in enumerate(specs):
            for t in s.steps if s is not None else ():
                self.rows_at.setdefault(t, []).append(r)

    def __call__(self, logits: torch.Tensor, generated: torch.Tensor, step: int) -> Result:
        rows = self.rows_at.get(step)
        if not rows:
            return logits, None
        active = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
        active[rows] = True
        return force_runner_up(logits, active)


PROCESSORS: dict[type, type] = {RailCapSpec: RailCapProcessor, BanTopSpec: BanTopProcessor,
                                ForceRunnerUpSpec: ForceRunnerUpProcessor}  # fmt: skip


def make_processor(specs: Sequence[object | None],
                   device: torch.device | str = "cpu") -> StepProcessor | None:  # fmt: skip
    """The processor for a batch whose rows share one intervention kind (or have none)."""
    kinds = {type(s) for s in specs if s is not None}
    if not kinds:
        return None
    if len(kinds) > 1:
        names = sorted(k.__name__ for k in kinds)
        raise TypeError(f"one processor serves one intervention kind, got {names}")
    kind = kinds.pop()
    if kind not in PROCESSORS:
        raise TypeError(f"no logits processor for {kind.__name__}")
    return PROCESSORS[kind](specs, device)
