"""Annotator diagnostics of the annotator-aware model: per annotator the fit's terms, the agreement with the
consensus, a test against random clicking, and flags a project manager can act on.

Per annotator: scores given, offset ``o_a``, slope ``s_a``, noise ``r_a`` (unreliability, geometric mean 1),
the weight of one of their scores relative to the pool's (``(s_a^2 / r_a) / mean_b(s_b^2 / r_b)``), and the
leave-one-out agreement with the consensus: the Pearson correlation ``rho_a`` of their scores with each item's
posterior mean computed without that score, ``u_i^(-k)`` (:func:`leave_one_out_consensus`; leave-one-annotator-out
when an annotator scores an item once).

``p_random`` tests the random-clicker null, "their scores are independent of the items": the one-sided p-value
of ``rho_a > 0``, ``P(T >= rho_a sqrt((n_a - 2) / (1 - rho_a^2)))`` with ``T ~ t(n_a - 2)`` (the exact test of
Pearson's correlation under independence, normal scores). A small ``p_random`` means the annotator follows the
consensus beyond chance; a large one that their scores are indistinguishable from clicking at random. It is NaN
(never evidence of randomness) when the agreement is undefined: fewer than 3 scores, or no spread in their
scores or in the consensus over their items (every annotator giving the same score). The consensus leaves the
score out of its item's sums and of the item's ambiguity ``q_i`` (:func:`leave_one_out_consensus`), so that it
ties a clicker's scores to it very little.

``scatter``: the mean squared residual of their scores about that consensus, ``(y_k - o_a - s_a (u_i^(-k) -
c))^2 / q_i``, relative to the median annotator's and shrunk toward 1 with ``SCATTER_PSEUDO_SCORES`` pseudo-scores
(so that a handful of scores cannot make anyone noisy): the noise the scores show, read from the residuals rather
than from the fit's shrunk ``r_a``.

Flags (with ``min_scores`` scores or more):

* ``collapsed``: the spread (standard deviation) of their scores is below ``COLLAPSE_RATIO`` of the median
  annotator's: they use a narrow band of the scale;
* ``random``: at least ``RANDOM_MIN_SCORES`` scores, ``p_random >= RANDOM_P`` (no agreement with the consensus
  at the one-sided 2.5% level, the tail of a two-sided 5% test) and ``scatter`` above ``RANDOM_SCATTER``;
* ``noisy``: ``scatter`` above ``NOISY_RATIO``, not ``random``: their agreement is beyond chance, or there are
  too few scores to tell it from chance (the reason says which). A soft flag.

The thresholds were chosen on the shipped AGH TV lab study and on simulated random clickers, so that no trusted
rater is flagged ``random`` (measurements: docs/studies/code-notes.md). Flagged annotators stay in the fit, which
weights their scores by ``s_a^2 / r_a`` (``weight``); nothing is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from easl_toolkit.core.models.aware.clickers import RANDOM_MIN_SCORES
from easl_toolkit.core.models.aware.fit import CENTER, AwareState, Observations

#: ``p_random`` at or above which an annotator's agreement with the consensus is indistinguishable from chance.
RANDOM_P = 0.025
#: ``scatter`` (relative to the median annotator's) above which an annotator with no agreement beyond chance is
#: ``random``.
RANDOM_SCATTER = 1.5
#: ``scatter`` (relative to the median annotator's) above which an annotator is ``noisy``.
NOISY_RATIO = 2.0
#: Pseudo-scores at the median that shrink each annotator's ``scatter`` (a few scores cannot make anyone noisy).
SCATTER_PSEUDO_SCORES = 8.0
#: Spread of an annotator's scores, relative to the median annotator's, below which the scale is collapsed.
COLLAPSE_RATIO = 0.35
#: Fewest scores before an annotator can be flagged at all.
FLAG_MIN_SCORES = 10
#: The flags, most serious first (``""``: not flagged).
FLAGS = ("random", "collapsed", "noisy")


@dataclass(frozen=True)
class AnnotatorDiagnostics:
    """Per-annotator figures (arrays of length ``n_annotators``; ``flag`` is ``""`` or one of :data:`FLAGS`,
    ``reason`` a sentence, empty when not flagged)."""

    n_scores: NDArray[Any]
    offset: NDArray[Any]
    slope: NDArray[Any]
    noise: NDArray[Any]
    weight: NDArray[Any]
    agreement: NDArray[Any]
    p_random: NDArray[Any]
    scatter: NDArray[Any]
    spread: NDArray[Any]
    flag: NDArray[Any]
    reason: NDArray[Any]

    def to_frame(self) -> Any:
        """The table as a ``pandas.DataFrame`` (one row per annotator index)."""
        import pandas as pd

        return pd.DataFrame({k: getattr(self, k) for k in self.__dataclass_fields__})


def group_corr(group: NDArray[Any], a: NDArray[Any], b: NDArray[Any], k: int) -> NDArray[Any]:
    """Pearson correlation of ``a`` and ``b`` within each of ``k`` groups (NaN with fewer than 3 rows or no spread).

    Examples
    --------
    >>> group_corr(np.array([0, 0, 0, 1, 1, 1]), np.arange(6.0), np.array([1.0, 2, 3, 3, 2, 1]), 2).tolist()
    [1.0, -1.0]
    """
    n = np.bincount(group, minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = np.bincount(group, a, k) / n
        mb = np.bincount(group, b, k) / n
        da, db = a - ma[group], b - mb[group]
        cov = np.bincount(group, da * db, k)
        va = np.bincount(group, da * da, k)
        vb = np.bincount(group, db * db, k)
        r = cov / np.sqrt(va * vb)
    # a spread below rounding error (every score equal, summed in another order) is no spread
    tiny_a = va <= 1e-12 * np.maximum(np.bincount(group, a * a, k), 1e-300)
    tiny_b = vb <= 1e-12 * np.maximum(np.bincount(group, b * b, k), 1e-300)
    return np.where((n >= 3) & ~tiny_a & ~tiny_b, np.clip(r, -1.0, 1.0), np.nan)


def leave_one_out_consensus(state: AwareState, obs: Observations, *, sweeps: int = 3) -> NDArray[Any]:
    """Per observation, the posterior mean of its item's ``mu_i`` without that score, on the unit scale.

    The score's terms leave the item's sums (``a_k = (s_a (y_k - o_a) - Cov_a) / r_a``, ``b_k = (s_a^2 +
    Var s_a) / r_a``, ``c_k = ((y_k - o_a)^2 + Var o_a) / r_a``) and its ambiguity, ``q_i^(-k) = (nu_q q0 +
    C' - 2 u' A' + (u'^2 + v') B') / (nu_q + n_i - 1)`` with ``u' = (m0 / tau_mu^2 + A' / q') / (1 / tau_mu^2 + B'
    / q')`` and ``v' = 1 / (1 / tau_mu^2 + B' / q')``, from ``q_i`` in ``sweeps`` fixed-point steps (primes: the
    item's sums without the score). A score far from the others raises ``q_i``, which shrinks the item's mean
    toward ``m0``: left in, it would tie a random clicker's scores to the consensus."""
    n, item_ix, A = state.n_items, obs.item, obs.annotator
    s, o, vo, vs, cos, r = state.slope, state.offset, state.var_offset, state.var_slope, state.cov_os, state.noise
    z = obs.score - CENTER - o[A]
    terms = np.column_stack([(s[A] * z - cos[A]) / r[A], (s[A] ** 2 + vs[A]) / r[A], (z * z + vo[A]) / r[A]])
    sums = np.column_stack([np.bincount(item_ix, t, n) for t in terms.T])[item_ix] - terms
    a, b, c = sums.T
    tm2, m0, nu_q, q0 = state.tau_mu2, state.m0 - CENTER, state.nu_q, state.q0
    n_loo = state.count[item_ix] - 1.0
    q = state.q[item_ix]
    u = np.zeros_like(q)
    for _ in range(max(sweeps, 1)):
        prec = 1.0 / tm2 + b / q
        u = (m0 / tm2 + a / q) / prec
        q = np.maximum((nu_q * q0 + np.maximum(c - 2.0 * u * a + (u * u + 1.0 / prec) * b, 0.0)) / (nu_q + n_loo), 1e-4)
    out: NDArray[Any] = CENTER + (m0 / tm2 + a / q) / (1.0 / tm2 + b / q)
    return out


def p_random(agreement: NDArray[Any], n_scores: NDArray[Any]) -> NDArray[Any]:
    """One-sided p-value of ``agreement > 0`` over ``n_scores`` pairs (module docstring); NaN where the agreement
    is NaN.

    Examples
    --------
    >>> p_random(np.array([0.0, 0.5, 0.5, np.nan]), np.array([30, 12, 40, 30])).round(4).tolist()
    [0.5, 0.0489, 0.0005, nan]
    """
    r = np.asarray(agreement, dtype=np.float64)
    df = np.asarray(n_scores, dtype=np.float64) - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        t = r * np.sqrt(df / np.maximum(1.0 - r * r, 1e-300))
        p = special.stdtr(np.maximum(df, 1.0), -t)
    out: NDArray[Any] = np.where(np.isfinite(r) & (df >= 1), p, np.nan)
    return out


def scatter(state: AwareState, obs: Observations, consensus: NDArray[Any], eligible: NDArray[Any]) -> NDArray[Any]:
    """Each annotator's mean squared residual about the leave-one-out ``consensus``, ``(y_k - o_a - s_a
    (u_i^(-k) - c))^2 / q_i``, relative to the median of the ``eligible`` annotators' and shrunk toward 1 with
    :data:`SCATTER_PSEUDO_SCORES` (module docstring); NaN without scores or when nobody scatters at all."""
    A, item_ix = obs.annotator, obs.item
    na = state.n_annotators
    resid = obs.score - CENTER - state.offset[A] - state.slope[A] * (consensus - CENTER)
    n_a = np.bincount(A, minlength=na).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.bincount(A, resid**2 / state.q[item_ix], na) / n_a
    pool = raw[eligible] if eligible.any() else raw[n_a > 0]
    med = float(np.median(pool)) if pool.size else np.nan
    if not med > 1e-12:  # no residual anywhere (every score the same): nobody scatters more than anyone
        return np.full(na, np.nan)
    out: NDArray[Any] = np.where(
        n_a > 0, (SCATTER_PSEUDO_SCORES + n_a * raw / med) / (SCATTER_PSEUDO_SCORES + n_a), np.nan
    )
    return out


def _reason(flag: str, n: float, sp: float, ag: float, p: float, nz: float, med: float, cfg: dict[str, Any]) -> str:
    """The sentence beside a flag."""
    ag_txt = "n/a" if ag != ag else f"{ag:.2f}"
    p_txt = "n/a" if p != p else "<0.001" if p < 0.001 else f"{p:.2g}"
    if flag == "collapsed":
        return f"scores spread {sp:.3f}, below {cfg['collapse_ratio']:.2f} of the median annotator's {med:.3f}"
    if flag == "random":
        return (
            f"agreement with the consensus {ag_txt} over {n:.0f} scores, no better than chance "
            f"(p_random {p_txt}); scatter about the consensus {nz:.1f} times the median annotator's"
        )
    if flag == "noisy":
        if p < cfg["random_p"]:
            tail = f"agreement with the consensus {ag_txt} beyond chance (p_random {p_txt})"
        elif p != p:
            tail = "agreement with the consensus undefined (no spread in their scores or the consensus)"
        else:
            tail = (
                f"agreement {ag_txt} not yet beyond chance (p_random {p_txt}) over {n:.0f} scores; "
                f"`random` needs {cfg['random_min_scores']}"
            )
        return f"scatter about the consensus {nz:.1f} times the median annotator's; " + tail
    return ""


def annotator_diagnostics(
    state: AwareState,
    obs: Observations,
    *,
    min_scores: int = FLAG_MIN_SCORES,
    random_p: float = RANDOM_P,
    random_min_scores: int = RANDOM_MIN_SCORES,
    random_scatter: float = RANDOM_SCATTER,
    noisy_ratio: float = NOISY_RATIO,
    collapse_ratio: float = COLLAPSE_RATIO,
) -> AnnotatorDiagnostics:
    """Diagnostics and flags of every annotator (module docstring).

    Parameters
    ----------
    state : AwareState
        A fit of ``obs``.
    obs : Observations
        The scores the fit used.
    min_scores, random_p, random_min_scores, random_scatter, noisy_ratio, collapse_ratio :
        Flag thresholds (defaults :data:`FLAG_MIN_SCORES`, :data:`RANDOM_P`, :data:`RANDOM_MIN_SCORES`,
        :data:`RANDOM_SCATTER`, :data:`NOISY_RATIO`, :data:`COLLAPSE_RATIO`).

    Returns
    -------
    AnnotatorDiagnostics

    References
    ----------
    Fisher (1915), "Frequency distribution of the values of the correlation coefficient in samples from an
    indefinitely large population", Biometrika 10 (the t test of a correlation); Hovy et al. (2013), "Learning
    whom to trust with MACE", NAACL (spotting spammers from agreement with the consensus).

    Examples
    --------
    Ten faithful annotators and one who clicks at random (150 items, 4 scores each):

    >>> from core.models.aware.fit import Observations, fit
    >>> rng = np.random.default_rng(1)
    >>> truth = rng.random(150)
    >>> item, ann = np.repeat(np.arange(150), 4), rng.integers(11, size=600)
    >>> x = np.clip(truth[item] + rng.normal(0, 0.1, 600), 0, 1)
    >>> x[ann == 10] = rng.random(int((ann == 10).sum()))
    >>> obs = Observations.build(item, ann, x, n_items=150)
    >>> d = annotator_diagnostics(fit(obs), obs)
    >>> d.flag.tolist().index("random"), int((d.flag != "").sum()), bool(d.p_random[:10].max() < 1e-6)
    (10, 1, True)
    """
    na, A, x = state.n_annotators, obs.annotator, obs.score
    consensus = leave_one_out_consensus(state, obs)
    agreement = group_corr(A, x, consensus, na)
    n_a = np.bincount(A, minlength=na).astype(np.float64)
    p_rand = p_random(agreement, n_a)
    eligible = n_a >= min_scores
    scat = scatter(state, obs, consensus, eligible)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = np.bincount(A, x, na) / n_a
        spread = np.sqrt(np.bincount(A, (x - mean_a[A]) ** 2, na) / np.maximum(n_a - 1, 1))
    spread = np.where(n_a >= 2, spread, np.nan)
    s, r = state.slope, state.noise
    info = s**2 / r
    seen = n_a > 0
    weight = info / (info[seen].mean() if seen.any() else 1.0)
    med = float(np.nanmedian(spread[eligible])) if eligible.any() else np.nan
    collapsed = eligible & (spread < collapse_ratio * med)
    random = eligible & ~collapsed & (n_a >= random_min_scores) & (p_rand >= random_p) & (scat > random_scatter)
    noisy = eligible & ~collapsed & ~random & (scat > noisy_ratio)
    flag = np.where(collapsed, "collapsed", np.where(random, "random", np.where(noisy, "noisy", "")))
    cfg = {"collapse_ratio": collapse_ratio, "random_p": random_p, "random_min_scores": random_min_scores}
    reasons = np.array(
        [_reason(str(f), n_a[k], spread[k], agreement[k], p_rand[k], scat[k], med, cfg) for k, f in enumerate(flag)],
        dtype=object,
    )
    return AnnotatorDiagnostics(
        n_a, state.offset.copy(), s.copy(), r.copy(), weight, agreement, p_rand, scat, spread, flag, reasons
    )
