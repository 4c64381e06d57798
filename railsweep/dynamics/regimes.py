"""The three survival regimes of a fitted loss curve, with the cut that decides "E is large" explicit.

- ``decoherence`` (exponentially fast decoherence): E > ``e_cut``; P(T) ~ exp(-E T).
- ``brittle`` (brittle memorisation): E <= ``e_cut`` and alpha <= 1; P(T) ~ exp(-k T^(1-alpha)) -> 0.
- ``lock-in`` (deterministic lock-in): E <= ``e_cut`` and alpha > 1; P(T) -> exp(-A / (alpha - 1)) > 0.

The background text states the regimes for E > 0 versus E ~ 0 without a number; ``E_CUT`` = 0.02 nats
per token is this package's reading: at the miniature world's solution lengths (about 40 tokens) the
linear term alone then costs at most a factor exp(-0.8) of the survival probability.
"""

from __future__ import annotations

from railsweep.errors import ConfigError

E_CUT = 0.02


def regime(E: float, alpha: float, e_cut: float = E_CUT) -> str:
    """The regime of one (E, alpha); see the module docstring."""
    if not e_cut > 0:
        raise ConfigError(f"e_cut must be > 0 nats per token, got {e_cut!r}")
    if E > e_cut:
        return "decoherence"
    return "lock-in" if alpha > 1 else "brittle"
