"""The seed papers' experiments and the real-rating replays behind ``easl simulate`` and ``easl demo``
(``docs/ARCHITECTURE.md``, "core/simulate/"), and how a simulation runs its independent units: ``map_fn(fn, tasks)``.

``map_fn`` takes a picklable top-level function and a list of argument tuples and returns an iterable of
``fn(*task)`` in the order of ``tasks``. The default runs them here, one after another; the Dask runner
(:func:`core.distributed.cluster.dask_map`) runs them on a cluster and yields each result as soon as it and every
earlier one are done, so progress advances while the sweep runs. Every unit seeds its own generators from its
arguments, so the numbers do not depend on where or in what order the units run. A sweep's ``progress``, when
given, is called with ``(done, total)`` as each unit ends. Every study reads its budgets off its curves with
:func:`first_crossing`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: ``map_fn(fn, tasks) -> iterable of fn(*task)``, in task order.
MapFn = Callable[[Callable[..., Any], Sequence[tuple[Any, ...]]], Iterable[Any]]


def serial_map(fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
    """``fn(*task)`` for each task, here and in order (the single-process default).

    Examples
    --------
    >>> list(serial_map(pow, [(2, 3), (3, 2)]))
    [8, 9]
    """
    for task in tasks:
        yield fn(*task)


def first_crossing(x: NDArray[Any], y: NDArray[Any], target: float) -> float:
    """Smallest x at which the piecewise-linear curve (x, y) reaches ``target`` (NaN if it never does).

    Examples
    --------
    >>> round(first_crossing(np.array([100.0, 200.0, 300.0]), np.array([0.5, 0.7, 0.9]), 0.8), 9)
    250.0
    """
    above = np.flatnonzero(y >= target)
    if above.size == 0:
        return float("nan")
    k = int(above[0])
    if k == 0 or y[k] == y[k - 1]:
        return float(x[k])
    return float(x[k - 1] + (target - y[k - 1]) * (x[k] - x[k - 1]) / (y[k] - y[k - 1]))
