"""Annotator diagnostics of the annotator-aware model (issue 10, item 3).

Per annotator: scores given, offset ``o_a``, slope ``s_a``, noise ``r_a`` (unreliability, geometric mean 1),
the weight of one of their scores relative to the pool's (``(s_a^2 / r_a) / mean_b(s_b^2 / r_b)``), and the
leave-one-out agreement with the consensus: the Pearson correlation of their scores with each item's posterior
mean computed without that score (``u_i^(-k) = (N_i - w_k (s_a (y_k - o_a) - Cov_a)) / (P_i - w_k (s_a^2 +
Var s_a))``, the fit's own sums minus the score's term; exact leave-one-annotator-out when an annotator scores
an item once).

Flags (with ``min_scores`` scores or more; thresholds checked by simulation in ``tests/test_aware.py``):

* ``collapsed``: the spread (standard deviation) of their scores is below ``COLLAPSE_RATIO`` of the median
  annotator's: they use a narrow band of the scale;
* ``random``: noise ``r_a`` above ``RANDOM_NOISE`` times the median annotator's, or agreement below
  ``RANDOM_AGREEMENT``: their scores do not follow the consensus. (With the slope prior's width estimated from
  a pool of mostly faithful annotators, a random clicker's slope stays near 1 and the model reads them as very
  noisy instead: ``r_a`` separates them best. On simulated pools, 30 scores: clickers 1.7-4, others <= 1.5.)

Flagged annotators stay in the fit; the model down-weights them through ``s_a`` and ``r_a`` (a random clicker's
noise is high, so the weight of their scores, ``s_a^2 / r_a``, is a fraction of the others'). Nothing is
deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.models.aware import CENTER, AwareState, Observations

#: Leave-one-out agreement below which an annotator is flagged as likely clicking at random.
RANDOM_AGREEMENT = 0.2
#: Noise ``r_a``, relative to the median annotator's, above which an annotator is flagged as likely random.
RANDOM_NOISE = 1.6
#: Spread of an annotator's scores, relative to the median annotator's, below which the scale is collapsed.
COLLAPSE_RATIO = 0.35
#: Fewest scores before an annotator can be flagged.
FLAG_MIN_SCORES = 10


@dataclass(frozen=True)
class AnnotatorDiagnostics:
    """Per-annotator figures (arrays of length ``n_annotators``; ``flag`` is ``""``, ``"random"`` or
    ``"collapsed"`` and ``reason`` a sentence, empty when not flagged)."""

    n_scores: NDArray[Any]
    offset: NDArray[Any]
    slope: NDArray[Any]
    noise: NDArray[Any]
    weight: NDArray[Any]
    agreement: NDArray[Any]
    spread: NDArray[Any]
    flag: NDArray[Any]
    reason: NDArray[Any]

    def to_frame(self) -> Any:
        """The table as a ``pandas.DataFrame`` (one row per annotator index)."""
        import pandas as pd

        return pd.DataFrame({k: getattr(self, k) for k in self.__dataclass_fields__})


def _weighted_corr(group: NDArray[Any], a: NDArray[Any], b: NDArray[Any], k: int) -> NDArray[Any]:
    """Pearson correlation of ``a`` and ``b`` within each group (NaN with fewer than 3 rows or no spread)."""
    n = np.bincount(group, minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = np.bincount(group, a, k) / n
        mb = np.bincount(group, b, k) / n
        da, db = a - ma[group], b - mb[group]
        cov = np.bincount(group, da * db, k)
        va = np.bincount(group, da * da, k)
        vb = np.bincount(group, db * db, k)
        r = cov / np.sqrt(va * vb)
    return np.where((n >= 3) & (va > 0) & (vb > 0), r, np.nan)


def annotator_diagnostics(
    state: AwareState,
    obs: Observations,
    *,
    min_scores: int = FLAG_MIN_SCORES,
    random_agreement: float = RANDOM_AGREEMENT,
    random_noise: float = RANDOM_NOISE,
    collapse_ratio: float = COLLAPSE_RATIO,
) -> AnnotatorDiagnostics:
    """Diagnostics and flags of every annotator (module docstring).

    Parameters
    ----------
    state : AwareState
        A fit of ``obs``.
    obs : Observations
        The scores the fit used.
    min_scores, random_agreement, random_noise, collapse_ratio :
        Flag thresholds (defaults :data:`FLAG_MIN_SCORES`, :data:`RANDOM_AGREEMENT`, :data:`RANDOM_NOISE`,
        :data:`COLLAPSE_RATIO`).

    Returns
    -------
    AnnotatorDiagnostics

    References
    ----------
    Issue 10 of this repository (annotator diagnostics); Hovy et al. (2013), "Learning whom to trust with
    MACE", NAACL (spotting spammers from agreement with the consensus).

    Examples
    --------
    Ten faithful annotators and one who clicks at random (60 items, 4 scores each):

    >>> from core.models.aware import Observations, fit
    >>> rng = np.random.default_rng(1)
    >>> truth = rng.random(60)
    >>> item, ann = np.repeat(np.arange(60), 4), rng.integers(11, size=240)
    >>> x = np.clip(truth[item] + rng.normal(0, 0.1, 240), 0, 1)
    >>> x[ann == 10] = rng.random(int((ann == 10).sum()))
    >>> obs = Observations.build(item, ann, x, n_items=60)
    >>> d = annotator_diagnostics(fit(obs), obs)
    >>> d.flag.tolist().index("random"), int((d.flag != "").sum())
    (10, 1)
    """
    na, n = state.n_annotators, state.n_items
    item_ix, A, x = obs.item, obs.annotator, obs.score
    y = x - CENTER
    s, o, vs, cos, r = state.slope, state.offset, state.var_slope, state.cov_os, state.noise
    w = 1.0 / (r[A] * state.q[item_ix])
    tm2, m0 = state.tau_mu2, state.m0 - CENTER
    term_p = w * (s[A] ** 2 + vs[A])
    term_n = w * (s[A] * (y - o[A]) - cos[A])
    prec = 1.0 / tm2 + np.bincount(item_ix, term_p, n)
    num = m0 / tm2 + np.bincount(item_ix, term_n, n)
    loo = (num[item_ix] - term_n) / (prec[item_ix] - term_p)
    agreement = _weighted_corr(A, x, loo, na)
    n_a = np.bincount(A, minlength=na).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = np.bincount(A, x, na) / n_a
        spread = np.sqrt(np.bincount(A, (x - mean_a[A]) ** 2, na) / np.maximum(n_a - 1, 1))
    spread = np.where(n_a >= 2, spread, np.nan)
    info = s**2 / r
    seen = n_a > 0
    weight = info / (info[seen].mean() if seen.any() else 1.0)
    eligible = n_a >= min_scores
    med = float(np.nanmedian(spread[eligible])) if eligible.any() else np.nan
    collapsed = eligible & (spread < collapse_ratio * med)
    r_med = float(np.median(r[eligible])) if eligible.any() else 1.0
    random = eligible & ~collapsed & ((r > random_noise * r_med) | ~(agreement >= random_agreement))
    flag = np.where(collapsed, "collapsed", np.where(random, "random", ""))
    reason = np.array(
        [
            f"scores spread {sp:.3f}, below {collapse_ratio:.2f} of the median annotator's {med:.3f}"
            if f == "collapsed"
            else f"noise {nz / r_med:.2f} times the median annotator's, agreement with the consensus {ag:.2f}"
            if f == "random"
            else ""
            for f, sp, ag, nz in zip(flag[eligible], spread[eligible], agreement[eligible], r[eligible], strict=True)
        ],
        dtype=object,
    )
    reasons = np.full(na, "", dtype=object)
    reasons[eligible] = reason
    return AnnotatorDiagnostics(n_a, o.copy(), s.copy(), r.copy(), weight, agreement, spread, flag, reasons)
