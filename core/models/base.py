"""The interface every posterior model implements (:class:`Model`), the change of the log it is given
(:class:`Change`, :class:`LiveLog`) and the batch check the models share.

The project store (``core/store``) caches a model's state (the package docstring) and hands every change of its
live log, an ingest, a retraction or a replay, to one method, :meth:`Model.update`; the model decides inside how
the change becomes its new state (add and subtract, replay in log order, refit). The store never asks which kind
of model it holds.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.hyper import Hyper
from easl_toolkit.core.models.inputs import Chosen, ProjectInputs
from easl_toolkit.core.models.pairs import pair_schedule
from easl_toolkit.core.selection import first_iteration_hits

if TYPE_CHECKING:
    import pandas as pd

State = dict[str, NDArray[Any]]
#: Largest difference between a cached and a replayed state array (``easl verify``).
VERIFY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Scores:
    """Rows of the observation log as a model reads them, in log order.

    Attributes
    ----------
    item : ndarray of int64, item indices.
    score01 : ndarray of float64, scores on [0, 1].
    groups : the HIT-submission key of each row (any hashable values; None: every row its own submission is not
        implied, they are all one group), coded on demand by :attr:`group`.
    annotator : ndarray of int64 or None, annotator codes numbered in order of first score in the log (None: not
        read).
    """

    item: NDArray[Any]
    score01: NDArray[Any]
    groups: Any = None
    annotator: NDArray[Any] | None = None

    @cached_property
    def group(self) -> NDArray[Any]:
        """Integer codes of the submissions, in order of first appearance (zeros when no keys were given)."""
        if self.groups is None:
            return np.zeros(len(self.item), dtype=np.int64)
        if isinstance(self.groups, np.ndarray) and self.groups.dtype.kind in "iu":
            return self.groups.astype(np.int64, copy=False)
        import pandas as pd

        codes: NDArray[Any] = pd.factorize(_as_series(self.groups))[0].astype(np.int64)
        return codes


def _as_series(values: Any) -> pd.Series:
    import pandas as pd

    return values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)


@dataclass
class Change:
    """A change of the live log, as the store made it: signed steps in order (+1: scores that became live, -1:
    live scores withdrawn, superseded or retracted), or a replay (``replay``: rebuild from :meth:`LiveLog.live`
    alone, ignoring the state passed in)."""

    steps: list[tuple[int, Scores]] = field(default_factory=list)
    replay: bool = False

    @property
    def withdraws(self) -> bool:
        """Whether some live score left the log."""
        return any(sign < 0 and rows.item.size for sign, rows in self.steps)


class LiveLog(Protocol):
    """What a model may read of the live log while it takes a :class:`Change` (the store implements it,
    ``core/store/derived.py``; :class:`ArraysLog` holds one in memory).

    Attributes
    ----------
    n_items : int
        The number of items.
    verified : bool
        True when the state will be compared with a replay of the log (``easl verify``): a model whose result
        depends on where its fit starts then starts afresh where it can, so that the state is a function of the
        log alone.
    """

    n_items: int
    verified: bool

    def live(self) -> Scores:
        """Every live score, the change included, in log order, with submission keys and annotator codes."""

    def appends_submissions(self) -> bool:
        """Whether the change only appended whole new HIT submissions at the end of the log (no earlier score of
        their submissions is live)."""


class ArraysLog:
    """A live log held in memory (a :class:`LiveLog`): ``scores`` are every live score, whole submissions appended
    in log order (a simulation, or the store's replay of each iteration); not ``verified``."""

    verified = False

    def __init__(self, scores: Scores, n_items: int) -> None:
        self._scores = scores
        self.n_items = n_items

    def live(self) -> Scores:
        """The scores given."""
        return self._scores

    def appends_submissions(self) -> bool:
        """True: the change appended whole submissions."""
        return True


class Updated(NamedTuple):
    """The result of :meth:`Model.update`: the new ``state`` and whether it was ``rebuilt`` from the whole live
    log by a replay (reported by ``easl ingest`` as ``rebuilt``)."""

    state: State
    rebuilt: bool


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
    """Interface of a posterior model (see docs/ARCHITECTURE.md): the store hands it every change of the live log
    through :meth:`update`, asks it for the next HITs (:meth:`next_hits`) and for its figures; it never asks which
    kind of model it holds.

    Attributes
    ----------
    name : str
        ``Hyper.method``.
    whole_submissions : bool
        True when an update compares the scores of a whole HIT submission (pairwise outcomes): each row needs a
        ``hit_id``, each submission must come whole and in one piece of input, so the store never cuts such an
        input into chunks or slices.
    reads_live_log : bool
        True when every :meth:`update` reads the whole live log (:meth:`LiveLog.live`): the store then keeps the
        live log as arrays beside the state (``core/store/live_arrays.py``) and may start the update before its
        transaction has finished its own bookkeeping.
    bookkeeping : frozenset of str
        State arrays that record how the state was reached, not the state (``easl verify`` leaves them out).
    top_ups : bool
        True when HITs may be drawn one at a time while others are open (the Label Studio queue's top-ups); False
        for a model that draws whole iterations with a recorded design: the next starts once none is open.
    answer : {"scores", "ranking"}
        What an annotator gives for a HIT: a score for each item (the default), or the order of its items (RA, which
        uses only the pairwise order, eq 13); the front ends lay the task out by it (``label_config/layouts.py``).
    """

    name: str = ""
    answer: str = "scores"
    whole_submissions: bool = False
    reads_live_log: bool = False
    top_ups: bool = True
    bookkeeping: frozenset[str] = frozenset()

    def __init__(self, hyper: Hyper) -> None:
        self.hyper = hyper
        self.inputs: ProjectInputs | None = None

    def attach(self, inputs: ProjectInputs) -> None:
        """Give the model what it may read of its project beyond the log (the store does, for every model)."""
        self.inputs = inputs  # (core.models.inputs)

    def hits_per_iteration(self, n_items: int) -> int:
        """The HITs of an iteration after the first: ``hits_per_iteration or N // n`` (Algorithm 1)."""
        return self.hyper.hits_per_iteration or max(1, n_items // self.hyper.hit_size)

    def first_iteration(self, n_items: int, rng: np.random.Generator) -> Chosen:
        """Iteration 0 (``easl init``): every item once (:func:`core.selection.first_iteration_hits`)."""
        return Chosen(np.asarray(first_iteration_hits(n_items, self.hyper.hit_size, rng), dtype=np.int64))

    def choose(self, state: State, *, n_hits: int, rng: np.random.Generator, exclude: Any = None) -> Chosen:
        """The next HITs (:meth:`next_hits`) and the design to record with them (none, in this default)."""
        return Chosen(np.asarray(self.next_hits(state, n_hits=n_hits, rng=rng, exclude=exclude), dtype=np.int64))

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

    def update(self, state: State, change: Change, log: LiveLog) -> Updated:
        """The state after ``change`` of the live log: the single entry point of the store.

        This default replays the live log for a replay (``init_state`` then :meth:`apply` of every live score in
        log order, submissions coded in order of first appearance) and applies the signed steps in order
        otherwise; a model that cannot take a step this way overrides it (pairwise models replay after a
        withdrawal, the annotator-aware model refits).

        Parameters
        ----------
        state : dict of ndarray
            The cached state, changed in place where the model can (ignored for a replay).
        change : Change
        log : LiveLog
            The live log, read only when the model needs it.
        """
        if change.replay:
            state = self.init_state(log.n_items)
            live = log.live()
            self.apply(state, live.item, live.score01, live.group)
            return Updated(state, True)
        for sign, rows in change.steps:
            self.apply(state, rows.item, rows.score01, rows.group, sign=sign)
        return Updated(state, False)

    def replay(self, log: LiveLog) -> State:
        """The state rebuilt from the live log alone (:meth:`update` with a replay)."""
        return self.update({}, Change(replay=True), log).state  # (a replay ignores the state given)

    @abc.abstractmethod
    def summary(self, state: State) -> Posterior:
        """``estimate, mean, variance, ci_low, ci_high`` per item, on ``[0, 1]`` (95% interval)."""

    @abc.abstractmethod
    def selection_keys(self, state: State) -> tuple[NDArray[Any], NDArray[Any]]:
        """``(location M, variance)`` that drive Algorithm 1 (anchors by variance; match quality eq 23)."""

    def next_hits(
        self, state: State, *, n_hits: int, rng: np.random.Generator, exclude: NDArray[Any] | None = None
    ) -> NDArray[Any]:
        """The next ``n_hits`` HITs (item positions, shape ``(n_hits, hit_size)``; fewer rows when too few items
        are free): Algorithm 1 of Sakaguchi & Van Durme (2018) on :meth:`selection_keys` (anchors by variance,
        partners by match quality, eq 11/23; :func:`core.selection.select_hits`). ``exclude`` marks items that
        may not be chosen (those of open HITs, in streaming mode)."""
        from easl_toolkit.core.selection import HitRequest, select_hits

        location, variance = self.selection_keys(state)
        h = self.hyper
        hits = select_hits(location, variance, HitRequest(h.hit_size, n_hits, h.gamma, h.partner_pool, exclude), rng)
        return np.asarray(hits, dtype=np.int64)

    def stop_decision(self, state: State, rng: np.random.Generator) -> Any:
        """The stopping rule's verdict for ``hyper.stop_at``; None for a model without a stopping rule (this
        default) or a project without a target."""
        return None

    def design_estimates(self, state: State, systems: NDArray[Any], names: Any) -> dict[str, Any] | None:
        """Design-weighted metrics of the systems scoring every item ``systems`` (n_items, K), named ``names``
        (``easl evaluate --project``); None for a model that does not draw items with recorded probabilities."""
        return None

    def stop_figures(self, state: State, rng: np.random.Generator) -> Any:
        """The figures of the stopping rule that ``easl status`` reports; None for a model without one (default)."""
        return None

    def rank_figures(self, state: State, rng: np.random.Generator) -> Any:
        """Rank intervals from the posterior, for ``easl export``; None for a model without them (default)."""
        return None

    def diagnostics(self, state: State, item: Any, annotator: Any, score01: Any) -> Any:
        """Per-annotator diagnostics of the live log; this default raises
        :class:`core.errors.UnsupportedByModel`: the model has no annotators."""
        from easl_toolkit.core.errors import UnsupportedByModel

        raise UnsupportedByModel(self.name, "annotator diagnostics", "aware")

    def same_state(self, cached: State, replayed: State, max_abs_diff: float) -> tuple[bool, str | None]:
        """Whether a cached state equals its replay (``easl verify``), and how it was compared (None: bit for bit
        within ``VERIFY_TOLERANCE``). ``max_abs_diff`` is the largest difference over the arrays."""
        return bool(max_abs_diff <= VERIFY_TOLERANCE), None

    def slice_rows(self, rows: int, live: int) -> int:
        """The rows of one slice of a large ingest (``core/store/slices.py``) with ``live`` scores live: as asked."""
        return rows


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


class PairwiseModel(Model):
    """A model updated by the pairwise outcomes of whole HIT submissions (RA, TrueSkill): the result depends on the
    order of the observations, so appended submissions are applied incrementally and any other change (a
    withdrawal, or scores added to a submission already live) is a replay of the live log in log order."""

    whole_submissions = True
    #: True: the result depends on the order of observations (a retraction is a replay without the rows).
    order_dependent = True

    def update(self, state: State, change: Change, log: LiveLog) -> Updated:
        """:meth:`Model.update`, turning a change that is not a pure append of whole new submissions into a
        replay."""
        if not change.replay and (change.withdraws or not log.appends_submissions()):
            change = Change(replay=True)
        return super().update(state, change, log)

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
