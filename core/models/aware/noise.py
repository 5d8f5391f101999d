"""How much the annotator-aware model lets each annotator's noise differ: the empirical Bayes strength ``nu_r`` with
which :func:`core.models.aware.fit` shrinks each annotator's unreliability ``r_a`` toward 1.

When the annotators' noise varies no more than sampling explains (annotators alike), ``nu_r`` is so large that
every ``r_a`` is 1 and the model weights every score as direct assessment does; with random clickers among them it
falls to a few pseudo-scores and their scores lose most of their weight. The spread is measured on leave-one-out
residuals (:func:`loo_noise_ratio`), so that an annotator's own pull on an item's mean does not hide its noise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.aware.data import PairStats

#: Bounds of the estimated noise shrinkage ``nu_r``: at most a prior standard deviation of ``log r_a`` of 1, and
#: at least so strong that ``r_a = 1`` to within a part in 10^4 for any annotator of fewer than 100 scores.
NU_R_MIN, NU_R_MAX = 2.0, 1e6
#: Shrinkage of an annotator whose noise stands out from the pool's (:func:`noise_strengths`).
NU_R_OUTLIER = NU_R_MIN
#: One-sided level at which an annotator's noise stands out, and its normal quantile; the width (in ``log ratio``)
#: over which the shrinkage passes from the pool's to :data:`NU_R_OUTLIER` around that tail (chosen on the
#: annotator-aware study; measurements: docs/studies/code-notes.md).
OUTLIER_LEVEL, _OUTLIER_Z, OUTLIER_WIDTH = 0.1, 1.2815515655446004, 0.05


def noise_shrinkage(ratio_a: NDArray[Any], n_a: NDArray[Any]) -> float:
    """The pseudo-scores ``nu_r`` that shrink each annotator's unreliability toward 1, by empirical Bayes.

    ``ratio_a`` is each annotator's sum of squared leave-one-out residuals over its expected value were every
    ``r_a = 1`` (:func:`loo_noise_ratio`), from ``n_a`` scores. With ``r_a ~ InvGamma(nu_r / 2, nu_r / 2)`` the
    prior variance of ``log r_a`` is about ``2 / nu_r``, and the sampling variance of ``log ratio_a`` about
    ``2 / n_a`` (a scaled chi-square). The method of moments gives

        excess = Var_a(log ratio_a) - mean_a(2 / n_a),      nu_r = 2 / excess,

    clipped to [:data:`NU_R_MIN`, :data:`NU_R_MAX`]; ``excess <= 0`` (the annotators' noise varies no more than
    sampling explains) or fewer than 3 annotators with 2 scores or more give :data:`NU_R_MAX`: every ``r_a`` is 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = np.full(20, 30.0)
    >>> noise_shrinkage(rng.chisquare(30, 20) / 30, n) == NU_R_MAX  # alike: no spread beyond sampling
    True
    >>> 2 < noise_shrinkage(rng.chisquare(30, 20) / 30 * np.r_[np.ones(18), 6, 6], n) < 20  # two very noisy
    True
    """
    ok = (n_a >= 2.0) & (ratio_a > 0)
    if int(ok.sum()) < 3:
        return NU_R_MAX
    excess = float(np.var(np.log(ratio_a[ok]), ddof=1) - np.mean(2.0 / n_a[ok]))
    return float(np.clip(2.0 / excess, NU_R_MIN, NU_R_MAX)) if excess > 2.0 / NU_R_MAX else NU_R_MAX


def noise_strengths(ratio_a: NDArray[Any], n_a: NDArray[Any]) -> NDArray[Any]:
    """Per annotator, the pseudo-scores that shrink its unreliability toward 1: the pool's :func:`noise_shrinkage`,
    except for an annotator whose noise stands out from sampling on its own, who is shrunk with
    :data:`NU_R_OUTLIER` (a spike-and-slab reading of the prior: most annotators at the pool's shrinkage, those who
    stand out free to differ).

    The pool's estimate averages over annotators, so a few random clickers move it little; each clicker's own
    ratio is already in the tail of its sampling distribution. Annotator ``a`` stands out with weight

        p_a = 1 / (1 + exp(-(log ratio_a - log t_a) / OUTLIER_WIDTH)),
        t_a = (1 - 2 / (9 n_a) + z sqrt(2 / (9 n_a)))^3,

    ``t_a`` the ``1 - OUTLIER_LEVEL`` quantile of ``chi2(n_a) / n_a`` (Wilson & Hilferty 1931), and
    ``nu_a = nu_pool^(1 - p_a) NU_R_OUTLIER^p_a``: a screen smooth in the data, so that the fit's fixed point does
    not depend on where it starts. A faithful annotator who stands out by chance (one in ten) gets its own noise
    estimate, close to the pool's.

    Examples
    --------
    >>> n = np.full(100, 40.0)
    >>> nu = noise_strengths(np.r_[np.ones(99), 4.0], n)  # one clicker among 99 alike
    >>> bool(nu[0] > 1e5), bool(nu[-1] < 2.01)
    (True, True)
    """
    pool = noise_shrinkage(ratio_a, n_a)
    n = np.maximum(n_a, 1.0)
    tail = (1.0 - 2.0 / (9.0 * n) + _OUTLIER_Z * np.sqrt(2.0 / (9.0 * n))) ** 3
    ok = (n_a >= 2.0) & (ratio_a > 0)
    z = np.log(np.where(ok, ratio_a, 1.0) / tail) / OUTLIER_WIDTH
    stands_out = np.where(ok, 0.5 * (1.0 + np.tanh(0.5 * np.clip(z, -700.0, 700.0))), 0.0)
    out: NDArray[Any] = np.exp((1.0 - stands_out) * np.log(pool) + stands_out * np.log(NU_R_OUTLIER))
    return out


def loo_item_sums(P: PairStats, rows: NDArray[Any], fit: dict[str, Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Per (item, annotator) pair of ``P`` (``rows`` the item of each stored pair), ``(u^(-a) prec^(-a),
    prec^(-a))``: the precision-weighted posterior mean of the item (centred) without that annotator's scores, and
    its precision. The fit's sums minus the pair's terms, the other annotators' held at the fit's:
    ``prec^(-a) = prec_i - C_ia rho_a (s_a^2 + Var s_a) / q_i``,
    ``u^(-a) prec^(-a) = u_i prec_i - rho_a (s_a (sum y - C_ia o_a) - C_ia Cov(o_a, s_a)) / q_i``.
    ``fit`` holds ``u, prec, o, s, vs, cos, rho, q`` (the arrays of :func:`core.models.aware.fit`)."""
    a = P.count.indices
    c, sy = P.count.data, P.sum_y.data
    # per item or annotator first, then spread to the pairs: fewer passes over the pairs (the ingest target of
    # ``bench/bench_scale.py``; measurements: docs/studies/code-notes.md)
    o, s, rho, h = fit["o"][a], fit["s"][a], fit["rho"][a], (1.0 / fit["q"])[rows]
    term_p = c * rho * h * (fit["s"] * fit["s"] + fit["vs"])[a]
    term_n = rho * h * (s * (sy - c * o) - c * fit["cos"][a])
    prec: NDArray[Any] = np.maximum(fit["prec"][rows] - term_p, 1e-12)
    weighted: NDArray[Any] = (fit["u"] * fit["prec"])[rows] - term_n
    return weighted, prec


def loo_noise_ratio(P: PairStats, rows: NDArray[Any], fit: dict[str, Any]) -> NDArray[Any]:
    """Each annotator's squared leave-one-out residuals over their expectation were every ``r_a = 1``.

    For the scores of annotator ``a`` on item ``i`` (a pair of the sparse statistics ``P``; ``rows`` the item of
    each stored pair), ``u_i^(-a)`` is item ``i``'s posterior mean without them (the fit's sums minus the pair's
    terms, as in :mod:`core.models.aware.diagnostics`), the residuals ``y - o_a - s_a u_i^(-a)``, and their
    expected square ``q_i + s_a^2 Var(u_i^(-a))`` per score. Leaving the pair out keeps a noisy annotator's
    residuals from being shrunk by its own pull on the item mean (with 2-3 scores an item, that pull hides a
    random clicker). ``fit`` holds the sweep's ``u, prec, o, s, vs, cos, rho, q``: the arrays of :func:`fit`.
    """
    a = P.count.indices
    c, sy, sy2 = P.count.data, P.sum_y.data, P.sum_y2.data
    o, s = fit["o"][a], fit["s"][a]
    weighted, prec = loo_item_sums(P, rows, fit)
    pred = o + s * weighted / prec
    rss = np.maximum(sy2 - 2.0 * pred * sy + c * pred * pred, 0.0)
    expected = c * (fit["q"][rows] + s * s / prec)
    na = fit["o"].size
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio: NDArray[Any] = np.bincount(a, rss, na) / np.bincount(a, expected, na)
    return ratio
