"""The metric calls the simulations make, all delegated to :mod:`core.metrics` (one implementation of each metric).

This module only names the calls the experiments need and fixes their conventions (which argument is the
human/reference score, which scale, which weights, which sign). Undefined-value and sample-size warnings are
silenced with :func:`core.metrics.notes.quiet` because a simulation sweeps through degenerate corners on purpose
(e.g. PRMSE on 100 double-scored responses); NaN results are kept and reported as "n/a".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from easl_toolkit.core import metrics
from easl_toolkit.core.metrics.notes import quiet

WEIGHTS = ("identity", "linear", "quadratic")


def pearson(reference: ArrayLike, system: ArrayLike) -> float:
    """Pearson's r (:func:`core.metrics.pearson_r`)."""
    return float(quiet(metrics.pearson_r, reference, system))


def spearman(reference: ArrayLike, system: ArrayLike) -> float:
    """Spearman's rho (:func:`core.metrics.spearman_rho`)."""
    return float(quiet(metrics.spearman_rho, reference, system))


def qwk(reference: ArrayLike, system: ArrayLike) -> float:
    """Continuous quadratic weighted kappa, RSMTool's ``wtkappa`` (:func:`core.metrics.quadratic_weighted_kappa`;
    Haberman 2019)."""
    return float(quiet(metrics.quadratic_weighted_kappa, reference, system))


def r2(reference: ArrayLike, system: ArrayLike) -> float:
    """R2 with ``reference`` as the observed values (:func:`core.metrics.r2_score`), as RSMTool's
    ``metrics_helper(human, system)``."""
    return float(quiet(metrics.r2_score, reference, system))


def paper_degradation(r_human_human: float, r_reference_system: float) -> float:
    """Degradation as Loukina et al. (2020, section 4.1) define it: r(h1, h2) - r(reference, system).

    This is the negative of RSMTool's degradation table (human-system minus human-human,
    :func:`core.metrics.degradation`), which is what is called here; the paper's sign makes a system that agrees
    with the reference better than the humans agree with each other negative (-0.05 to -0.30 in the paper).
    """
    return -float(metrics.degradation({"corr": r_reference_system}, {"corr": r_human_human})["corr"])


def prmse(system: ArrayLike, ratings: ArrayLike) -> float:
    """PRMSE of ``system`` against the responses x raters matrix ``ratings`` (NaN = missing)
    (:func:`core.metrics.prmse`; Loukina et al. 2020, Appendix B eq. 8; RSMTool ``prmse_true``)."""
    return float(quiet(metrics.prmse, system, ratings))


#: Our name of each coefficient (Cohen's kappa, Scott's pi, Gwet's AC, Brennan-Prediger, Krippendorff's alpha) and
#: its key in :func:`core.metrics.chance_corrected_agreement`.
_FAMILY_KEYS = {"cohen": "conger", "scott": "fleiss", "gwet": "gwet", "bp": "bp", "krippendorff": "krippendorff"}


def coefficient_names() -> list[str]:
    """Column names of :func:`agreement_suite`'s coefficients: ``<coefficient>_<weights>``, then ordinal alpha."""
    return [f"{c}_{w}" for c in _FAMILY_KEYS for w in WEIGHTS] + ["krippendorff_ordinal"]


def agreement_suite(gold: ArrayLike, system: ArrayLike, lo: int, hi: int) -> dict[str, float]:
    """Every chance-corrected agreement coefficient of :mod:`core.metrics` for two raters (gold and system) on the
    integer scale ``lo..hi``, with identity, linear and quadratic weights
    (:func:`core.metrics.chance_corrected_agreement`), ordinal Krippendorff's alpha
    (:func:`core.metrics.krippendorff_alpha`), percent agreement ``pa`` (identity weights) and ``mae``.

    With two raters Conger's kappa is Cohen's kappa and Fleiss' kappa is Scott's pi (Gwet 2014, ch. 5), so they
    are reported under those names. Identity-weight Krippendorff is nominal alpha, quadratic-weight is interval
    alpha (on equally spaced categories).
    """
    ratings = np.column_stack([np.asarray(gold, dtype=float), np.asarray(system, dtype=float)])
    cats = np.arange(lo, hi + 1, dtype=float)
    out: dict[str, float] = {}
    for w in WEIGHTS:
        fam = quiet(metrics.chance_corrected_agreement, ratings, cats, weights=w)
        for name, key in _FAMILY_KEYS.items():
            out[f"{name}_{w}"] = fam[key]
        if w == "identity":
            out["pa"] = fam["pa"]
    out["krippendorff_ordinal"] = quiet(metrics.krippendorff_alpha, ratings, level="ordinal")
    out["mae"] = float(np.mean(np.abs(ratings[:, 0] - ratings[:, 1])))
    return out
