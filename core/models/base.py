"""The interface every posterior model implements (:class:`Model`) and the batch check they share.

The project store (``core/store``) caches a model's state (the package docstring) and can rebuild it by replaying
the observation log through :meth:`Model.apply`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from core.models.hyper import Hyper
from core.models.pairs import pair_schedule

State = dict[str, NDArray[Any]]


class Posterior(NamedTuple):
    """A model's per-item summary on the unit interval [0, 1] (:meth:`Model.summary`): float64 arrays of length
    ``n_items``. A tuple, so ``estimate, mean, variance, ci_low, ci_high = model.summary(state)`` unpacks it.

    Attributes
    ----------
    estimate : the point estimate (EASL and RA: the Beta mode, eq 12; DA: the mean of the scores; TrueSkill and
        aware: the expected bounded score ``G(mu)``).
    mean : the posterior mean.
    variance : the posterior variance (EASL and RA: eq 13), the figure Algorithm 1 and ``easl status`` use.
    ci_low, ci_high : the 95% interval, which contains ``estimate``.
    """

    estimate: NDArray[Any]
    mean: NDArray[Any]
    variance: NDArray[Any]
    ci_low: NDArray[Any]
    ci_high: NDArray[Any]

    def on_scale(self, hyper: Hyper) -> Posterior:
        """The summary on the project's score range: locations through ``Hyper.from_unit`` (``u (max - min) +
        min``), the variance through ``Hyper.variance_from_unit`` (times ``(max - min)^2``)."""
        f = hyper.from_unit
        return Posterior(
            f(self.estimate), f(self.mean), hyper.variance_from_unit(self.variance), f(self.ci_low), f(self.ci_high)
        )


def check_batch(state: State, item: Any, score01: Any, group: Any) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Validate and convert a batch of observations.

    Parameters
    ----------
    state : dict of ndarray
        The model state (its ``count`` gives ``n_items``).
    item, score01, group : array_like, shape (n,)
        Item indices in ``[0, n_items)``, scores on ``[0, 1]``, HIT submission ids.

    Returns
    -------
    (item, score, group) : tuple of ndarray
        int64, float64, int64, flattened.

    Raises
    ------
    ValueError
        Lengths differ, an index is out of range, or a score is not finite within ``[0, 1]``.
    """
    item = np.asarray(item, dtype=np.int64).ravel()
    score = np.asarray(score01, dtype=np.float64).ravel()
    group = np.asarray(group, dtype=np.int64).ravel()
    if not (item.size == score.size == group.size):
        raise ValueError(f"item, score01 and group differ in length ({item.size}, {score.size}, {group.size})")
    n = state["count"].size
    if item.size and (item.min() < 0 or item.max() >= n):
        raise ValueError(f"item index out of range [0, {n})")
    if item.size and not (np.all(score >= 0.0) and np.all(score <= 1.0)):
        raise ValueError("score01 must be finite and within [0, 1]")
    return item, score, group


class Model(abc.ABC):
    """Interface of a posterior model (see docs/ARCHITECTURE.md).

    Attributes
    ----------
    name : str
        ``Hyper.method``.
    order_dependent : bool
        True when the result depends on the order of observations (RA, TrueSkill): replay in log order,
        and retraction means replaying without the retracted rows.
    needs_whole_hit : bool
        True when the update needs every score of a HIT submission (pairwise outcomes).
    """

    name: str = ""
    order_dependent: bool = False
    needs_whole_hit: bool = False

    def __init__(self, hyper: Hyper) -> None:
        self.hyper = hyper

    @abc.abstractmethod
    def init_state(self, n_items: int) -> State:
        """The prior state of ``n_items`` items (float64 arrays, including ``count``)."""

    @abc.abstractmethod
    def apply(self, state: State, item: Any, score01: Any, group: Any, sign: int = 1) -> None:
        """Update ``state`` in place with observations (rows in log order).

        Parameters
        ----------
        item : int array, item indices in ``[0, n_items)``.
        score01 : float array, scores on ``[0, 1]``.
        group : int array, id of the HIT submission each row belongs to.
        sign : +1 to add, -1 to retract (commutative models only).
        """

    @abc.abstractmethod
    def summary(self, state: State) -> Posterior:
        """``estimate, mean, variance, ci_low, ci_high`` per item, on ``[0, 1]`` (95% interval)."""

    @abc.abstractmethod
    def selection_keys(self, state: State) -> tuple[NDArray[Any], NDArray[Any]]:
        """``(location M, variance)`` that drive Algorithm 1 (anchors by variance; match quality eq 23)."""

    def _pairwise_steps(
        self, state: State, item: Any, score01: Any, group: Any, sign: int
    ) -> Iterator[tuple[NDArray[Any], NDArray[Any], NDArray[Any]]]:
        """For a pairwise model (RA, TrueSkill): validate the batch, refuse retraction, add the counts, and
        yield the steps of :func:`~core.models.pairs.pair_schedule` as ``(winner, loser, tie)`` arrays of
        item-disjoint pairs (a tie keeps the submission order)."""
        item, score, group = check_batch(state, item, score01, group)
        if sign != 1:
            raise ValueError(f"{self.name} is order dependent: observations cannot be retracted by sign=-1")
        if item.size == 0:
            return
        state["count"] += np.bincount(item, minlength=state["count"].size)
        sched = pair_schedule(item, score, group)
        first, second = sched.winner_first()
        tie = sched.outcome == 0
        b = sched.step_bounds
        for s in range(b.size - 1):
            sl = slice(b[s], b[s + 1])
            yield first[sl], second[sl], tie[sl]


class CommutativeModel(Model):
    """A model whose state is per-item sums of the scores (EASL, DA): ``sign = -1`` retracts exactly, and an item
    whose count returns to 0 is reset to the prior exactly."""

    @abc.abstractmethod
    def prior(self) -> dict[str, float]:
        """Each state field's prior value (``count`` included)."""

    @abc.abstractmethod
    def sums(self, item: NDArray[Any], score: NDArray[Any], n_items: int) -> dict[str, NDArray[Any]]:
        """Each state field's increment from a valid batch."""

    def init_state(self, n_items: int) -> State:
        return {key: np.full(n_items, value, dtype=np.float64) for key, value in self.prior().items()}

    def apply(self, state: State, item: Any, score01: Any, group: Any, sign: int = 1) -> None:
        item, score, _ = check_batch(state, item, score01, group)
        if sign not in (1, -1):
            raise ValueError("sign must be +1 or -1")
        if item.size == 0:
            return
        for key, increment in self.sums(item, score, state["count"].size).items():
            state[key] += sign * increment
        if sign < 0:
            empty = state["count"] <= 0
            for key, value in self.prior().items():
                state[key][empty] = value
