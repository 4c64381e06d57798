"""The settings of one dynamics run (validated at construction, the offending value in the message)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from railsweep.dynamics.regimes import E_CUT
from railsweep.errors import ConfigError


@dataclass(frozen=True)
class DynamicsSettings:
    """temperatures: of the observed readout (0 = greedy, always decoded for the greedy trajectory's gaps);
    m: samples per item and temperature; limit: the first N test items (None = all); domain: the one whose
    ``co_<domain>`` adapter is M_co; n_boot, n_boot_gain: item resamples for the fit and gain intervals;
    min_items: positions reached by fewer items are left out of a group's mean curve; e_cut: nats per token
    above which E counts as large (railsweep.dynamics.regimes); base: also read the base model (``base``)."""

    temperatures: tuple[float, ...] = (0.0, 0.3, 0.7, 1.0)
    m: int = 10
    limit: int | None = None
    domain: str = "gsm8k"
    max_new_tokens: int = 96
    seed: int = 0
    batch_size: int = 64
    forcing_batch: int = 8
    n_boot: int = 200
    n_boot_gain: int = 1000
    min_items: int = 5
    e_cut: float = E_CUT
    device: str = "cpu"
    base: bool = False

    def __post_init__(self) -> None:
        if not self.temperatures:
            raise ConfigError("give at least one temperature")
        for t in self.temperatures:
            if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
                raise ConfigError(f"temperatures must be finite numbers >= 0 (0 = greedy), got {t!r}")
        object.__setattr__(self, "temperatures", tuple(sorted({float(t) for t in self.temperatures})))
        ints = ("m", "max_new_tokens", "batch_size", "forcing_batch", "n_boot", "n_boot_gain", "min_items")
        for name in ints:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {v!r}")
        if self.limit is not None and (isinstance(self.limit, bool) or self.limit < 1):
            raise ConfigError(f"limit must be >= 1 items, got {self.limit!r}")
        if not (isinstance(self.e_cut, int | float) and math.isfinite(self.e_cut) and self.e_cut > 0):
            raise ConfigError(f"e_cut must be a finite number > 0 (nats per token), got {self.e_cut!r}")


def model_adapters(world, domain: str) -> dict[str, str]:
    """{"M_cl": "clean", "M_co": "co_<domain>"}; an unknown domain -> ConfigError."""
    domains = tuple(world.config.contamination.domains)
    if domain not in domains:
        raise ConfigError(f"unknown contamination domain {domain!r}; this world has {', '.join(domains)}")
    return {"M_cl": "clean", "M_co": f"co_{domain}"}
