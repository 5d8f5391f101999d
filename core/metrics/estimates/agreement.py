"""Chance-corrected agreement for two or more raters with missing ratings, under any of irrCAC's weights.

Sources: Gwet, K. L. (2014), *Handbook of Inter-Rater Reliability*, 4th ed., chapters 2-5 (multi-rater formulas
with missing ratings, weights, linearised variances); Yannakoudakis & Cummins (2015), "Evaluating the performance
of Automated Text Scoring systems", BEA, section 3; docs/design.md section 4.4.

Notation: subjects (responses) i, categories k = 1..q with values c_k (from the scale, never inferred from the
data), r_ik raters putting subject i in category k, r_i = sum_k r_ik, agreement weights w_kl (1 on the diagonal),
r*_ik = sum_l w_kl r_il, T_w = sum_kl w_kl.

- percent agreement  pa = mean over subjects with r_i >= 2 of sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))
- pi_k = mean over subjects with r_i >= 1 of r_ik / r_i
- coefficient = (pa - pe) / (1 - pe) with pe:
  Gwet AC1/AC2  T_w / (q (q - 1)) sum_k pi_k (1 - pi_k)      Brennan-Prediger  T_w / q^2
  Fleiss (multi-rater Scott's pi)  sum_kl w_kl pi_k pi_l
  Conger (multi-rater Cohen)  sum_kl w_kl (pbar_k pbar_l - s2_kl / R), p_gk the share of rater g's ratings in
  category k, pbar_k its mean over the R raters, s2_kl = (sum_g p_gk p_gl - R pbar_k pbar_l) / (R - 1)
  Krippendorff  1 - (n.. - 1) sum_kl o_kl d_kl / sum_kl n_k n_l d_kl with d = 1 - w and the coincidence matrix
  o_kl = sum_i sum_{j != j'} 1[(k, l) = (x_ij, x_ij')] / (r_i - 1) (equal to Gwet's alpha formula)
With two raters Conger's kappa is Cohen's (weighted) kappa and Fleiss' kappa is Scott's pi.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import WEIGHTS, Weights, agreement_weights, as_ratings, category_index, check_option
from easl_toolkit.core.metrics.estimates.agreement_totals import agreement_totals, finish_agreement
from easl_toolkit.core.metrics.estimates.krippendorff import finish_alpha_from_coincidence

#: Gwet's (2014) 12 subjects x 4 raters, categories 1..5, NaN for a missing rating (irrCAC ``raw_4raters``): the data
#: of the examples here and in :mod:`core.metrics.intervals.agreement_variance`.
# fmt: off
GWET_4RATERS = np.array([[1, 1, np.nan, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
                         [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [np.nan, 5, 5, 5], [np.nan, np.nan, 1, 1],
                         [np.nan, np.nan, 3, np.nan]])
# fmt: on


def _family(
    ratings: ArrayLike, categories: ArrayLike, weights: Weights, which: tuple[str, ...]
) -> dict[str, NDArray[Any]]:
    check_option("weights", weights, WEIGHTS)
    cats = np.asarray(categories, dtype=np.float64)
    idx = category_index(as_ratings(ratings), cats)
    t = agreement_totals(idx, cats.size)
    out = finish_agreement(t, cats, weights, idx.shape[1], which=which)
    if "krippendorff" in which:  # irrCAC's weighted alpha: distances d = 1 - w
        coinc = t["coinc"].reshape(cats.size, cats.size)
        out["krippendorff"] = finish_alpha_from_coincidence(coinc, 1.0 - agreement_weights(cats, weights))
    return out


def chance_corrected_agreement(
    ratings: ArrayLike, categories: ArrayLike, *, weights: Weights = "identity"
) -> dict[str, float]:
    """Every coefficient of the family at once, with percent agreement and each chance agreement.

    coefficient = (pa - pe) / (1 - pe); pa and each pe as in the module docstring (Gwet 2014, ch. 2-5).

    Parameters
    ----------
    ratings : array of shape (n_subjects, n_raters)
        Category values, NaN for missing. Subjects with no rating are ignored.
    categories : array-like of shape (q,)
        All category values of the scale, sorted (unused categories count).
    weights : {"identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"}

    Returns
    -------
    dict of float
        ``pa``, ``gwet``, ``bp``, ``fleiss``, ``conger``, ``krippendorff`` (irrCAC's weighted alpha) and the chance
        agreements ``pe_gwet``, ``pe_bp``, ``pe_fleiss``, ``pe_conger``. NaN (with an UndefinedMetricWarning) when
        no subject has two ratings or the chance agreement is 1.

    References
    ----------
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., ch. 2-5.

    Examples
    --------
    Gwet's (2014) 12 subjects x 4 raters, categories 1..5 (:data:`GWET_4RATERS`):

    >>> r = chance_corrected_agreement(GWET_4RATERS, [1, 2, 3, 4, 5])
    >>> [round(r[k], 6) for k in ("pa", "gwet", "bp", "fleiss", "conger", "krippendorff")]
    [0.818182, 0.775444, 0.772727, 0.761169, 0.762817, 0.743421]
    """
    return {
        k: float(v)
        for k, v in _family(ratings, categories, weights, ("gwet", "bp", "fleiss", "conger", "krippendorff")).items()
    }


def gwet_ac(ratings: ArrayLike, categories: ArrayLike, *, weights: Weights = "identity") -> float:
    """Gwet's AC1 (identity weights) / AC2 (other weights) for any number of raters with missing ratings.

    AC = (pa - pe) / (1 - pe),  pe = T_w / (q (q - 1)) sum_k pi_k (1 - pi_k)

    Parameters
    ----------
    ratings, categories, weights
        As :func:`chance_corrected_agreement`.

    Returns
    -------
    float in [-1, 1]; NaN when no subject has two ratings or q < 2.

    References
    ----------
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of high agreement.
    British Journal of Mathematical and Statistical Psychology 61, 29-48. Gwet (2014), eq. 4.1 and 5.1.
    Examples
    --------
    Gwet's (2014) 12 subjects x 4 raters, categories 1..5 (:data:`GWET_4RATERS`):

    >>> ratings = GWET_4RATERS
    >>> round(gwet_ac(ratings, [1, 2, 3, 4, 5]), 6), round(gwet_ac(ratings, [1, 2, 3, 4, 5], weights="quadratic"), 6)
    (0.775444, 0.914001)
    """
    return float(_family(ratings, categories, weights, ("gwet",))["gwet"])


def brennan_prediger(ratings: ArrayLike, categories: ArrayLike, *, weights: Weights = "identity") -> float:
    """Brennan-Prediger coefficient for any number of raters: (pa - pe) / (1 - pe), pe = T_w / q^2.

    Parameters
    ----------
    ratings, categories, weights
        As :func:`chance_corrected_agreement`.

    Returns
    -------
    float in [-1, 1]; NaN when no subject has two ratings.

    References
    ----------
    Brennan, R. L., & Prediger, D. J. (1981). Coefficient kappa: some uses, misuses, and alternatives.
    Educational and Psychological Measurement 41, 687-699. Gwet (2014), ch. 5.
    Examples
    --------
    Gwet's (2014) 4-rater data (:data:`GWET_4RATERS`):

    >>> round(brennan_prediger(GWET_4RATERS, [1, 2, 3, 4, 5]), 6)
    0.772727
    """
    return float(_family(ratings, categories, weights, ("bp",))["bp"])


def fleiss_kappa(ratings: ArrayLike, categories: ArrayLike, *, weights: Weights = "identity") -> float:
    """Fleiss' kappa (the multi-rater Scott's pi): (pa - pe) / (1 - pe), pe = sum_kl w_kl pi_k pi_l.

    With two raters and no missing rating this is Scott's pi (1955); the report names it ``scott_pi`` in the
    two-rater blocks and ``fleiss_kappa`` over all raters.

    Parameters
    ----------
    ratings, categories, weights
        As :func:`chance_corrected_agreement`.

    Returns
    -------
    float in [-1, 1]; NaN when no subject has two ratings or pe = 1.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological Bulletin 76, 378-382.
    Gwet (2014), ch. 5.
    Examples
    --------
    Gwet's (2014) 4-rater data (:data:`GWET_4RATERS`):

    >>> round(fleiss_kappa(GWET_4RATERS, [1, 2, 3, 4, 5]), 6)
    0.761169
    """
    return float(_family(ratings, categories, weights, ("fleiss",))["fleiss"])


#: Scott's pi is Fleiss' kappa of two raters.
scott_pi = fleiss_kappa


def conger_kappa(ratings: ArrayLike, categories: ArrayLike, *, weights: Weights = "identity") -> float:
    """Conger's kappa (the multi-rater Cohen's kappa): (pa - pe) / (1 - pe) with
    pe = sum_kl w_kl (pbar_k pbar_l - s2_kl / R), computed per rater (column), never per rating slot.

    With two raters this is Cohen's (weighted) kappa with chance term sum_kl w_kl p_1k p_2l.

    Parameters
    ----------
    ratings, categories, weights
        As :func:`chance_corrected_agreement`; one column per rater.

    Returns
    -------
    float in [-1, 1]; NaN when no subject has two ratings or fewer than 2 raters rated anything.

    References
    ----------
    Conger, A. J. (1980). Integration and generalization of kappas for multiple raters. Psychological Bulletin 88,
    322-328. Gwet (2014), ch. 5.
    Examples
    --------
    Gwet's (2014) 4-rater data (:data:`GWET_4RATERS`):

    >>> round(conger_kappa(GWET_4RATERS, [1, 2, 3, 4, 5]), 6)
    0.762817
    """
    return float(_family(ratings, categories, weights, ("conger",))["conger"])
