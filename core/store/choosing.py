"""The one function that chooses HITs (batch and streaming mode), and the stopping rule's verdict before a new
iteration.

Iteration t >= 1 is chosen by :func:`choose_hits` from the cached state with the generator
``numpy.random.default_rng([seed, t])``, so the same seed and observations give the same HITs, also across
restarts. An aware project with a stop target starts no iteration once :func:`stop_decision` says it is reached.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from core.models import Hyper
    from core.models.aware_posterior import StopDecision


def choose_hits(
    model: Any,
    hyper: Hyper,
    state: dict[str, NDArray[Any]],
    *,
    n_hits: int,
    rng: np.random.Generator,
    exclude: NDArray[Any] | None = None,
) -> NDArray[Any]:
    """The next ``n_hits`` HITs (item positions, shape ``(n_hits, hit_size)``; fewer rows when too few items are
    free): Algorithm 1 of Sakaguchi & Van Durme (2018) on ``model.selection_keys(state)``
    (``core.selection.select_hits``: anchors by variance, partners by match quality, eq 11/23), or the least
    annotated items for DA (``select_least_annotated``), or the aware model's allocation
    (``core.models.aware_alloc.select_batch``). ``exclude`` marks items that may not be chosen (those of open HITs,
    in streaming mode)."""
    from core import selection

    if hyper.method == "aware":
        return np.asarray(model.next_hits(state, n_hits=n_hits, rng=rng, exclude=exclude), dtype=np.int64)
    if hyper.method == "da":
        hits = selection.select_least_annotated(
            state["count"], hit_size=hyper.hit_size, n_hits=n_hits, rng=rng, exclude=exclude
        )
    else:
        location, variance = model.selection_keys(state)
        hits = selection.select_hits(
            location,
            variance,
            hit_size=hyper.hit_size,
            n_hits=n_hits,
            gamma=hyper.gamma,
            pool=hyper.partner_pool,
            rng=rng,
            exclude=exclude,
        )
    return np.asarray(hits, dtype=np.int64)


def stop_rng(seed: int, seq: int) -> np.random.Generator:
    """The generator of the stopping rule's posterior draws for the state at log position ``seq``: the same
    state gives the same expected Spearman in ``easl next``, ``easl status`` and the monitor."""
    return np.random.default_rng([seed, 0x5709, seq])


def stop_decision(model: Any, hyper: Hyper, state: dict[str, NDArray[Any]], seq: int) -> StopDecision | None:
    """The stopping rule's verdict (``core.models.aware_posterior.StopDecision``) for an aware project with a
    target (``hyper.stop_at``), else None."""
    if hyper.method != "aware" or hyper.stop_at is None:
        return None
    decision: StopDecision | None = model.stop_decision(state, stop_rng(hyper.seed, seq))
    return decision


def state_seq(conn: sqlite3.Connection) -> int:
    """The log position the cached state reflects (``meta.state_seq``)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'state_seq'").fetchone()
    return int(row[0]) if row else 0
