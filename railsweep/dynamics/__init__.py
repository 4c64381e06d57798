"""Memorisation dynamics: per-token loss fits, survival predictions tested against observed solve rates.

The survival theory of generative contamination (``L_t = E + A t^-alpha``,
``P(T)``, three regimes, ``alpha_eff = alpha / tau``) in small modules:
:mod:`~railsweep.dynamics.survival` and :mod:`~railsweep.dynamics.regimes` (formulas),
:mod:`~railsweep.dynamics.powerlaw` (fits with item-bootstrap CIs),
:mod:`~railsweep.dynamics.gain` (contamination gain versus tau),
:mod:`~railsweep.dynamics.forcing` (per-position teacher forcing),
:mod:`~railsweep.dynamics.observe` and :mod:`~railsweep.dynamics.collect` (a world's family, sampled),
:mod:`~railsweep.dynamics.analyse` (the tables), :mod:`~railsweep.dynamics.plots` and
:mod:`~railsweep.dynamics.output` (files). ``railsweep dynamics`` runs them on a built miniature world.
"""

from railsweep.dynamics.powerlaw import fit_curve, fit_group
from railsweep.dynamics.regimes import regime
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.dynamics.survival import alpha_eff, survival, survival_at

__all__ = ["DynamicsSettings", "alpha_eff", "fit_curve", "fit_group", "regime", "survival", "survival_at"]
