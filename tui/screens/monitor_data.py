"""What the Monitor shows, computed off the UI thread from a project file that another process may be writing.

``MonitorSource.poll()`` opens the project read-only (SQLite WAL: readers never block the writer), reads the status
and the cached model state (the items' ids and texts are read once: they never change), and returns a
:class:`MonitorSnapshot`, or None when the file has not changed since the last
poll (its size and modification time, and those of its ``-wal`` file, are the change signal: every commit writes
one of them).

Convergence history: the estimates at the end of iteration ``t`` come from the store's state at the end of that
iteration (``Project.iteration_states``: the live ratings of HITs of iterations ``<= t``, in log order). Rank
stability between successive iterations is Spearman's rho of those estimates (``core.metrics.spearman_rho``: ties
get average ranks; rho is undefined, NaN, when either vector is constant). Completed iterations are read once and
cached; the current iteration's point uses the live estimates, ranked incrementally (:class:`LiveRanks`).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import rankdata

from easl_toolkit.core.models.base import Posterior
from easl_toolkit.tui.widgets.item_table import ItemColumns
from easl_toolkit.tui.widgets.ordering import average_ranks, stable_order, update_stable_order

if TYPE_CHECKING:
    import pandas as pd

    from easl_toolkit.core.store import ProjectStatus

#: Number of bins of the estimates histogram.
HIST_BINS = 20


def centred_ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their ranks) minus their mean; non-finite entries get NaN."""
    a = np.asarray(a, dtype=np.float64)
    out = np.full(a.shape, np.nan)
    ok = np.isfinite(a)
    if ok.any():
        r = rankdata(a[ok])
        out[ok] = r - r.mean()
    return out


class LiveRanks:
    """Centred average ranks of the live estimates, kept from poll to poll: the stable order of the previous
    estimates is updated for the items that changed (:func:`~tui.widgets.ordering.update_stable_order`), then
    the ranks follow in O(N); equal to :func:`centred_ranks` of the estimates."""

    def __init__(self) -> None:
        self._values: np.ndarray | None = None
        self._order: np.ndarray | None = None

    def ranks(self, values: np.ndarray) -> np.ndarray:
        """``centred_ranks(values)``."""
        values = np.array(values, dtype=np.float64)
        if self._values is None or self._order is None or self._values.shape != values.shape:
            order = stable_order(values)
        else:
            order = update_stable_order(self._order, self._values, values)
        self._values, self._order = values, order
        r = average_ranks(values, order)
        ok = np.isfinite(r)
        if ok.any():
            r[ok] -= r[ok].mean()
        return r


def spearman_rho(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of the pairs where both values are finite (``core.metrics.spearman_rho``, Spearman 1904);
    NaN, without a warning, when fewer than two pairs remain or either vector is constant (no ranking)."""
    from easl_toolkit.core.metrics.estimates.association import spearman_rho as rho

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(rho(a[ok], b[ok]))


def spearman_from_ranks(ra: np.ndarray, rb: np.ndarray) -> float:
    """Spearman's rho from two rank vectors of :func:`centred_ranks` or :class:`LiveRanks` (NaN for a non-finite
    value), equal to :func:`spearman_rho` of the values on the pairs where both are finite.

    With every value finite it is Pearson's r of the average ranks (``core.metrics.pearson_r``; the definition of
    Spearman's rho), in O(N) since the ranks are kept from poll to poll; otherwise the pairs with a NaN are dropped
    and :func:`spearman_rho` re-ranks the rest (ranks are monotone in the values)."""
    from easl_toolkit.core.metrics.estimates.observed import pearson_r

    ok = np.isfinite(ra) & np.isfinite(rb)
    if not ok.all():
        return spearman_rho(ra, rb)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(pearson_r(ra, rb))


@dataclass
class ConvergenceHistory:
    """Per-iteration convergence figures (one entry per iteration, the last one live).

    Attributes
    ----------
    iterations : int array
    mean_var, max_var : float arrays
        Mean and maximum posterior variance on the unit scale (the figures of ``easl status``).
    rho : float array
        Spearman's rho between the estimates at the end of this iteration and of the previous one (NaN for the
        first iteration).
    """

    iterations: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    mean_var: np.ndarray = field(default_factory=lambda: np.empty(0))
    max_var: np.ndarray = field(default_factory=lambda: np.empty(0))
    rho: np.ndarray = field(default_factory=lambda: np.empty(0))


@dataclass(frozen=True)
class AwarePanel:
    """The aware figures of the Monitor (:func:`aware_panel`): ``stop`` (``ProjectStatus.stop``), the rows of
    ``annotators`` shown and the number of all of them."""

    stop: dict[str, Any]
    annotators: pd.DataFrame
    n_annotators: int


@dataclass(frozen=True)
class MonitorSnapshot:
    """Everything one refresh of the Monitor needs (``aware`` is None unless the project's method is aware)."""

    status: ProjectStatus
    columns: ItemColumns
    hist_counts: np.ndarray
    hist_edges: np.ndarray
    history: ConvergenceHistory
    score_range: tuple[float, float]
    read_seconds: float
    aware: AwarePanel | None = None


def file_signature(path: Path) -> tuple:
    """(size, mtime_ns) of the project file and of its ``-wal`` companion (absent: zeros)."""
    out: list[int] = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(f"{path}{suffix}")
            out.extend((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.extend((0, 0))
    return tuple(out)


def estimates_histogram(estimate: np.ndarray, low: float, high: float, bins: int = HIST_BINS):
    """Counts of finite estimates in ``bins`` equal bins over [low, high] (``numpy.histogram``)."""
    values = estimate[np.isfinite(estimate)]
    return np.histogram(values, bins=bins, range=(low, high))


class HistoryReplay:
    """The convergence figures of the completed iterations, from the store's state at the end of each one
    (``Project.iteration_states``), cached until the iteration changes; ``last_ranks``: the :func:`centred_ranks`
    of the estimates at the end of the last completed iteration (None before the first)."""

    def __init__(self) -> None:
        self._iteration: int | None = None
        self._completed: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.last_ranks: np.ndarray | None = None

    def completed(self, project, current_iteration: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(iterations, mean_var, max_var, rho)`` of iterations ``0 .. current_iteration - 1``, recomputed only
        when the iteration changes."""
        if self._iteration == current_iteration and self._completed is not None:
            return self._completed
        hyper, model = project.hyper, project.model
        its, mean_var, max_var, rho = [], [], [], []
        previous: np.ndarray | None = None
        for t, state in project.iteration_states(current_iteration):
            summary = model.summary(state)
            estimate, variance = hyper.from_unit(summary.estimate), summary.variance
            its.append(t)
            mean_var.append(float(np.mean(variance)) if variance.size else float("nan"))
            max_var.append(float(np.max(variance)) if variance.size else float("nan"))
            rho.append(spearman_rho(previous, estimate) if previous is not None else float("nan"))
            previous = estimate
        self._iteration = current_iteration
        self._completed = (np.asarray(its, dtype=np.int64), np.asarray(mean_var), np.asarray(max_var), np.asarray(rho))
        self.last_ranks = centred_ranks(previous) if previous is not None else None
        return self._completed


class SummaryCache:
    """The model's per-item summary, recomputed only for the items whose state changed since the last call.

    Every model's state is a set of per-item arrays and its summary is item-wise, so the summary of the changed
    items alone equals the corresponding part of the full summary; a change of shape (or a state that is not
    per-item) recomputes everything.
    """

    def __init__(self) -> None:
        self._state: dict[str, np.ndarray] | None = None
        self._summary: Posterior | None = None

    def summary(self, model, state: dict[str, np.ndarray]) -> Posterior:
        """``model.summary(state)``, reusing the previous result for unchanged items."""
        n = next(iter(state.values())).shape[0] if state else 0
        per_item = all(a.ndim == 1 and a.shape[0] == n for a in state.values())
        old = self._state
        if (
            not per_item
            or old is None
            or self._summary is None
            or old.keys() != state.keys()
            or any(old[k].shape != state[k].shape for k in state)
        ):
            result = model.summary(state)
        else:
            changed = np.zeros(n, dtype=bool)
            for k, a in state.items():
                changed |= ~((a == old[k]) | (np.isnan(a) & np.isnan(old[k])))
            idx = np.flatnonzero(changed)
            result = Posterior(*(v.copy() for v in self._summary))
            if idx.size:
                part = model.summary({k: a[idx] for k, a in state.items()})
                for whole, changed_part in zip(result, part, strict=True):
                    whole[idx] = changed_part
        self._state = {k: a.copy() for k, a in state.items()}
        self._summary = result
        return result


def live_columns(project, item_id: np.ndarray, text: np.ndarray, cache: SummaryCache | None = None) -> ItemColumns:
    """The table columns of ``Project.estimates()`` computed from the cached state, with the item ids and texts
    given (they never change in a project, so the Monitor reads them once).

    estimate, ci and variance = the summary on the score range (``Posterior.on_scale``), n_annotations = the
    state's live count; the same formulas as ``Project.estimates``.
    """
    state = project.state()
    summary = (cache or SummaryCache()).summary(project.model, state).on_scale(project.hyper)
    return ItemColumns(
        item_id=item_id,
        estimate=summary.estimate,
        ci_low=summary.ci_low,
        ci_high=summary.ci_high,
        variance=summary.variance,
        n_annotations=np.rint(state["count"]).astype(np.int64),
        text=text,
    )


#: Annotator rows the Monitor lists (flagged ones first, then by number of scores).
AWARE_ANNOTATORS_SHOWN = 12
#: Order of the Monitor's annotator rows by flag: ``random`` and ``collapsed``, then the soft ``noisy``, then the rest.
FLAG_ORDER = {"random": 0, "collapsed": 0, "noisy": 1}


def aware_panel(project, status: ProjectStatus) -> AwarePanel:
    """The aware figures of the Monitor: the stopping rule (``status.stop``) and the annotator diagnostics
    (``Project.annotator_table``), flagged annotators first (:data:`FLAG_ORDER`), then by number of scores."""
    table = project.annotator_table()
    rank = table["flag"].map(lambda f: FLAG_ORDER.get(f, 2)).to_numpy()
    order = np.lexsort((-table["n_scores"].to_numpy(), rank))
    return AwarePanel(status.stop or {}, table.iloc[order[:AWARE_ANNOTATORS_SHOWN]], len(table))


class MonitorSource:
    """Reads a project file for the Monitor; meant to live in one worker thread (it keeps no connection open).

    Parameters
    ----------
    path : Path
        The project file.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._signature: tuple | None = None
        self._history = HistoryReplay()
        self._items: tuple[np.ndarray, np.ndarray] | None = None
        self._summaries = SummaryCache()
        self._live_ranks = LiveRanks()

    def poll(self, force: bool = False) -> MonitorSnapshot | None:
        """Read the project when it changed since the last poll (or when ``force``); None when unchanged."""
        signature = file_signature(self.path)
        if not force and signature == self._signature:
            return None
        from easl_toolkit.core.store import Project

        started = time.perf_counter()
        with Project.open(self.path, readonly=True) as project:
            status = project.status()
            if self._items is None or len(self._items[0]) != project.n_items:
                items = project.items()
                self._items = (items["item_id"].to_numpy(dtype=object), items["text"].to_numpy(dtype=object))
            columns = live_columns(project, *self._items, cache=self._summaries)
            low, high = float(project.hyper.score_min), float(project.hyper.score_max)
            current = status.iteration
            its, mean_var, max_var, rho = self._history.completed(project, current)
            aware = aware_panel(project, status) if status.stop is not None else None
        ranks = self._history.last_ranks
        live_rho = (
            spearman_from_ranks(ranks, self._live_ranks.ranks(columns.estimate)) if ranks is not None else float("nan")
        )
        nan = float("nan")
        history = ConvergenceHistory(
            iterations=np.append(its, current),
            mean_var=np.append(mean_var, nan if status.mean_variance is None else status.mean_variance),
            max_var=np.append(max_var, nan if status.max_variance is None else status.max_variance),
            rho=np.append(rho, live_rho),
        )
        counts, edges = estimates_histogram(columns.estimate, low, high)
        self._signature = signature
        return MonitorSnapshot(
            status=status,
            columns=columns,
            hist_counts=counts,
            hist_edges=edges,
            history=history,
            score_range=(low, high),
            read_seconds=time.perf_counter() - started,
            aware=aware,
        )
