"""Memorisation dynamics: per-token loss fits, survival predictions tested against observed solve rates.

The survival theory of generative contamination (``L_t = E + A t^-alpha``, ``P(T)``, three regimes,
``alpha_eff = alpha / tau``): formulas (:mod:`~railsweep.dynamics.survival`, ``regimes``), fits
(``powerlaw``, ``gain``), per-position teacher forcing (``forcing``), a family sampled (``observe``,
``collect``), the tables (``analyse``) and files (``plots``, ``output``). ``railsweep dynamics`` runs
them on a built miniature world.
"""

from railsweep.dynamics.powerlaw import fit_curve, fit_group
from railsweep.dynamics.regimes import regime
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.dynamics.survival import alpha_eff, survival, survival_at

__all__ = ["DynamicsSettings", "alpha_eff", "fit_curve", "fit_group", "regime", "survival", "survival_at"]
