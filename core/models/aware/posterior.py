"""What the annotator-aware posterior says about ranks: rank intervals, the expected Spearman correlation with
the truth, and the stopping rule.

Posterior draws are ``mu_i^(d) = m_i + sqrt(v_i) t_id`` with ``v_i`` the variance including the annotator
terms (:class:`core.models.aware.AwareState` ``var``) and ``t_id`` Student t with ``nu_q + n_i`` degrees of
freedom (the item's noise ``q_i`` is estimated from its scores), independent across items. The expected Spearman
between the estimates and the truth is the mean over draws of Spearman(estimates, draw). It is optimistic at a
few scores per item, so the rule stops only when the figure minus a safety margin ``k (1 - E[rho])`` (relative
to the distance from a perfect ranking) reaches the target and every item has at least the uniform passes'
scores (:data:`core.models.aware.alloc.UNIFORM_PASSES`), so the rule never waits for a score the allocation does
not plan to give. ``k`` = :data:`STOP_RELATIVE_MARGIN` was measured with
:func:`core.simulate.aware_study.calibrate_stopping` (measurements: docs/studies/code-notes.md; the rule and its
validation by simulation: ``docs/studies/aware.md``).

Random clickers who alone score some items (:mod:`core.models.aware.clickers`) look like signal to the fit, so
the rule draws the truth from the posterior without the likely clickers' share of each item's precision
(:func:`core.models.aware.clickers.informative_state`; the estimates whose ranks are compared stay the fit's), and
needs of every item :data:`STOP_MIN_INFORMATIVE` informative score (an expected count, rounded).

Above :data:`EAGER_MAX_ITEMS` items the expected Spearman takes its own :data:`SPEARMAN_SUBSET_DRAWS` draws, on
a random subset of :data:`SPEARMAN_MAX_ITEMS` items for larger projects (:func:`expected_spearman`), and the rank
intervals (:func:`core.models.aware.ranks.rank_intervals`) are computed only when read (export), so ``easl
status`` stays fast at 1,000,000 items. Up to :data:`EAGER_MAX_ITEMS` items the rank interval is the 2.5% and
97.5% quantiles of each item's rank over the draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.aware.fit import AwareState
from easl_toolkit.core.models.aware.ranks import pooled_draws, posterior_draws, rank_intervals

#: ``k``: the margin subtracted from the expected Spearman is ``k (1 - E[rho])`` (module docstring).
STOP_RELATIVE_MARGIN = 0.6
#: Fewest scores of every item before the rule may stop (the uniform passes).
STOP_MIN_SCORES = 2
#: Fewest informative scores of every item (scores not from likely random clickers) before the rule may stop.
STOP_MIN_INFORMATIVE = 1
#: An item's informative count (a sum of probabilities) meets a minimum when it rounds to it: is at most this much
#: below it.
INFORMATIVE_SLACK = 0.5


def _ranks(x: NDArray[Any]) -> NDArray[Any]:
    """0-based ranks along the last axis (ties broken by position; draws are continuous)."""
    r = np.empty(x.shape, dtype=np.float64)
    order = np.argsort(x, axis=-1)
    np.put_along_axis(r, order, np.broadcast_to(np.arange(x.shape[-1], dtype=np.float64), x.shape), axis=-1)
    return r


def default_draws(n_items: int) -> int:
    """Draws for rank figures: 200 for small projects, fewer for large ones (at least 20; the expected
    Spearman averages over items, so its Monte Carlo error shrinks with ``n_items``)."""
    return int(np.clip(20_000_000 // max(n_items, 1), 20, 200))


#: Above this many items the expected Spearman is computed on a random subset of this size (module docstring).
SPEARMAN_MAX_ITEMS = 20_000
#: Draws for the expected Spearman on that subset.
SPEARMAN_SUBSET_DRAWS = 50
#: Up to this many items, :func:`rank_figures` makes every figure from one set of draws at once.
EAGER_MAX_ITEMS = 2_000


def _spearman(rank: NDArray[Any], draw_ranks: NDArray[Any]) -> NDArray[Any]:
    """``rho_d = 1 - 6 sum_i (R_i - R_i^(d))^2 / (N (N^2 - 1))`` for each row ``d`` of ``draw_ranks``, with ``R``
    the ranks of the estimates and ``R^(d)`` those of draw ``d`` (Spearman without ties)."""
    n = rank.size
    out: NDArray[Any] = 1.0 - 6.0 * ((draw_ranks - rank) ** 2).sum(axis=1) / (n * (n * n - 1.0) if n > 1 else 1.0)
    return out


def expected_spearman(
    state: AwareState,
    rng: np.random.Generator,
    *,
    max_items: int = SPEARMAN_MAX_ITEMS,
    n_draws: int = SPEARMAN_SUBSET_DRAWS,
    draws_from: AwareState | None = None,
) -> float:
    """The expected Spearman correlation between the estimates and the truth, on at most ``max_items`` items.

    On a project of ``N > max_items`` items, the mean over ``n_draws`` posterior draws of the Spearman
    correlation between the estimates and the draw, both restricted to a random subset of ``max_items`` items: a
    bias of order ``1 / max_items`` and a standard deviation of about ``(1 - rho^2) / sqrt(max_items)`` (Kendall &
    Gibbons 1990, ch. 2) against the whole project's (docs/studies/code-notes.md).

    Parameters
    ----------
    state : AwareState
    rng : numpy.random.Generator
        Chooses the subset and the draws.
    max_items, n_draws : int
    draws_from : AwareState, optional
        The posterior to draw the truth from (default ``state``; the stopping rule's is
        :func:`core.models.aware.clickers.informative_state`); the estimates are always ``state.mu``.

    Returns
    -------
    float

    References
    ----------
    Spearman (1904); Kendall & Gibbons (1990), *Rank Correlation Methods*, 5th ed., chapter 2 (the sampling
    distribution of Spearman's rho).
    """
    n = state.n_items
    keep = np.sort(rng.choice(n, max_items, replace=False)) if n > max_items else np.arange(n)
    sub_draws = (state if draws_from is None else draws_from).subset(keep)
    return float(np.mean(_spearman(_ranks(state.mu[keep]), _ranks(posterior_draws(sub_draws, n_draws, rng)))))


class RankFigures:
    """Rank intervals and the expected Spearman correlation from posterior draws (:func:`rank_figures`).

    Attributes
    ----------
    rank : ndarray
        Rank of each item's estimate (0 = lowest).
    rank_low, rank_high : ndarray
        The 95% interval of its rank over the posterior (module docstring).
    expected_spearman : float
        Mean over draws of Spearman(estimates, draw), in ``[-1, 1]``.
    n_draws : int
        Draws behind the rank intervals (above :data:`EAGER_MAX_ITEMS` items, the draws of each item pooled by
        :func:`rank_intervals`, :func:`pooled_draws`).

    Above :data:`EAGER_MAX_ITEMS` items the expected Spearman is made at once (what ``easl status`` needs) and
    the ranks and rank intervals when first read (what export needs), each from its own generator spawned from
    ``rng``, so the figures do not depend on which is read first.
    """

    def __init__(
        self, state: AwareState, rng: np.random.Generator, n_draws: int, draws_from: AwareState | None = None
    ) -> None:
        self.n_draws = n_draws
        self._state = state
        self._draws_from = state if draws_from is None else draws_from
        self._rank: NDArray[Any] | None = None
        self._lazy: tuple[NDArray[Any], NDArray[Any]] | None = None  # (rank_low, rank_high)
        if state.n_items <= EAGER_MAX_ITEMS:
            self.expected_spearman, self._rank, low, high = self._draw(rng)
            self._lazy = (low, high)
        else:
            rho_rng, self._rank_rng = rng.spawn(2)
            self.expected_spearman = expected_spearman(state, rho_rng, draws_from=draws_from)
            self.n_draws = pooled_draws(state.n_items, n_draws)

    def _draw(self, rng: np.random.Generator) -> tuple[float, NDArray[Any], NDArray[Any], NDArray[Any]]:
        state, n, n_draws = self._state, self._state.n_items, self.n_draws
        est_rank = _ranks(state.mu)
        chunk = max(1, 4_000_000 // max(n, 1))
        rho: list[NDArray[Any]] = []
        lows, highs, rank_draws = [], [], []
        keep_all = n_draws * n <= 50_000_000
        for b in range(0, n_draws, chunk):
            rd = _ranks(posterior_draws(self._draws_from, min(chunk, n_draws - b), rng))
            rho.append(_spearman(est_rank, rd))
            if keep_all:
                rank_draws.append(rd)
            else:  # large projects: quantiles per chunk, averaged (an approximation, stated here)
                lows.append(np.quantile(rd, 0.025, axis=0))
                highs.append(np.quantile(rd, 0.975, axis=0))
        if keep_all:
            low, high = np.quantile(np.concatenate(rank_draws), [0.025, 0.975], axis=0)
        else:
            low, high = np.mean(lows, axis=0), np.mean(highs, axis=0)
        return float(np.mean(np.concatenate(rho))), est_rank, low, high

    def _intervals(self) -> tuple[NDArray[Any], NDArray[Any]]:
        if self._lazy is None:
            self._lazy = rank_intervals(self._draws_from, self._rank_rng, n_draws=self.n_draws)
        return self._lazy

    @property
    def rank(self) -> NDArray[Any]:
        """Rank of each item's estimate (0 = lowest)."""
        if self._rank is None:
            self._rank = _ranks(self._state.mu)
        return self._rank

    @property
    def rank_low(self) -> NDArray[Any]:
        """Low end of each item's 95% rank interval (the 2.5% quantile of its rank; class docstring)."""
        return self._intervals()[0]

    @property
    def rank_high(self) -> NDArray[Any]:
        """High end of each item's 95% rank interval (the 97.5% quantile of its rank; class docstring)."""
        return self._intervals()[1]


def rank_figures(
    state: AwareState,
    rng: np.random.Generator,
    *,
    n_draws: int | None = None,
    draws_from: AwareState | None = None,
) -> RankFigures:
    """Rank intervals and expected Spearman of a fit (module docstring; :class:`RankFigures`): ``rho_d = 1 - 6
    sum_i (R_i - R_i^(d))^2 / (N (N^2 - 1))`` (Spearman without ties), averaged over draws.

    Parameters
    ----------
    state : AwareState
    rng : numpy.random.Generator
    n_draws : int, optional
        Draws for the rank intervals; default :func:`default_draws`; drawn in chunks to bound memory. Above
        :data:`EAGER_MAX_ITEMS` items, the most draws of each item :func:`rank_intervals` pools.
    draws_from : AwareState, optional
        The posterior of the truth (default ``state``), as in :func:`expected_spearman`; ``rank`` is always that
        of ``state.mu``.

    Returns
    -------
    RankFigures

    References
    ----------
    Spearman (1904); Gelman et al. (2013), *Bayesian Data Analysis*, section 1.9 (simulation of posterior
    quantities).

    Examples
    --------
    >>> from core.models.aware.fit import Observations, fit
    >>> obs = Observations.build([0, 1, 2, 3] * 3, [0] * 4 + [1] * 4 + [2] * 4, [.1, .4, .6, .9] * 3, n_items=4)
    >>> f = rank_figures(fit(obs), np.random.default_rng(0), n_draws=100)
    >>> f.rank.tolist(), bool(f.expected_spearman > 0.9)
    ([0.0, 1.0, 2.0, 3.0], True)
    """
    n = state.n_items
    return RankFigures(state, rng, default_draws(n) if n_draws is None else int(n_draws), draws_from)


@dataclass(frozen=True)
class StopDecision:
    """The stopping rule's verdict.

    Attributes
    ----------
    stop : bool
        True when ``expected_spearman - margin >= target``, with ``margin = k (1 - expected_spearman)``, every item
        has ``min_scores`` scores and ``min_informative_scores`` informative ones.
    expected_spearman, margin, target : float
    min_count : int
        Fewest scores of any item.
    reason : str
        One sentence for a front end, naming the figures (no flags).
    min_informative : float
        Fewest informative scores of any item (:func:`core.models.aware.clickers.informative_counts`; the raw
        count when not given).
    """

    stop: bool
    expected_spearman: float
    margin: float
    target: float
    min_count: int
    reason: str
    min_informative: float = float("nan")


def stops(
    expected_spearman: Any,
    min_count: Any,
    *,
    target: float,
    relative_margin: float = STOP_RELATIVE_MARGIN,
    min_scores: int = STOP_MIN_SCORES,
    min_informative: Any = None,
    min_informative_scores: int = STOP_MIN_INFORMATIVE,
) -> NDArray[Any]:
    """The stopping rule, vectorised: ``E[rho] - k (1 - E[rho]) >= target``, ``min_count >= min_scores`` and
    (when given) ``min_informative >= min_informative_scores - INFORMATIVE_SLACK``.

    Parameters
    ----------
    expected_spearman, min_count : array_like
        Expected Spearman (:func:`rank_figures`, drawn as :meth:`core.models.aware.model.AwareModel.stop_decision`
        draws) and fewest scores of any item, per state.
    min_informative : array_like, optional
        Fewest informative scores of any item (:func:`core.models.aware.clickers.informative_counts`), per state.
    target, relative_margin, min_scores, min_informative_scores :
        As in :func:`stop_decision`.

    Returns
    -------
    ndarray of bool

    Examples
    --------
    >>> stops([0.93, 0.94, 0.95], [2, 1, 2], target=0.9).tolist()  # 0.93 - 0.6 * 0.07 = 0.888 < 0.9
    [False, False, True]
    >>> stops([0.95, 0.95], [4, 4], target=0.9, min_informative=[0.4, 0.6]).tolist()
    [False, True]
    """
    e = np.asarray(expected_spearman, dtype=np.float64)
    ok = (e - relative_margin * np.maximum(1.0 - e, 0.0) >= target) & (np.asarray(min_count) >= min_scores)
    if min_informative is not None:
        ok &= np.asarray(min_informative, dtype=np.float64) >= min_informative_scores - INFORMATIVE_SLACK
    return ok


def stop_decision(
    state: AwareState,
    expected_spearman: float,
    *,
    target: float,
    relative_margin: float = STOP_RELATIVE_MARGIN,
    min_scores: int = STOP_MIN_SCORES,
    informative: NDArray[Any] | None = None,
    min_informative_scores: int = STOP_MIN_INFORMATIVE,
) -> StopDecision:
    """Whether to stop collecting: ``E[rho] - k (1 - E[rho]) >= target``, ``min_i n_i >= min_scores`` and every
    item's informative count ``n_i^inf`` rounds to ``min_informative_scores`` or more (:data:`INFORMATIVE_SLACK`).

    Parameters
    ----------
    state : AwareState
    expected_spearman : float
        From :func:`rank_figures` (the stopping rule's draws: :meth:`core.models.aware.model.AwareModel.stop_decision`).
    target : float
        The Spearman correlation with the truth the project wants, in ``(0, 1)``.
    relative_margin, min_scores :
        ``k`` and the fewest scores per item; defaults :data:`STOP_RELATIVE_MARGIN`, :data:`STOP_MIN_SCORES`.
    informative : ndarray, optional
        Each item's expected number of scores not from a random clicker
        (:func:`core.models.aware.clickers.informative_counts`); default the raw counts.
    min_informative_scores : int
        Default :data:`STOP_MIN_INFORMATIVE`.

    Returns
    -------
    StopDecision
    """
    min_count = int(state.count.min()) if state.n_items else 0
    counts = state.count if informative is None else np.asarray(informative, dtype=np.float64)
    least = float(counts.min()) if counts.size else 0.0
    margin = relative_margin * max(1.0 - expected_spearman, 0.0)
    short = counts < min_informative_scores - INFORMATIVE_SLACK
    figure = f"expected Spearman {expected_spearman:.3f} minus the margin {margin:.3f}"
    stop = False
    if min_count < min_scores:
        reason = f"some items have {min_count} scores; at least {min_scores} each are needed before stopping"
    elif short.any():
        reason = (
            f"{int(short.sum())} items have no score from an annotator who agrees with the others beyond chance "
            f"(the fewest such scores: {least:.1f}); their ranks are unknown until they get one"
        )
    elif not stops(expected_spearman, min_count, target=target, relative_margin=relative_margin, min_scores=0):
        reason = f"{figure} is below the target {target:.3f}"
    else:
        stop, reason = True, f"{figure} reaches the target {target:.3f}, with at least {min_count} scores per item"
    return StopDecision(stop, expected_spearman, margin, target, min_count, reason, least)
