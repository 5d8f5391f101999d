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
    from easl_toolkit.core.models import Model
    from easl_toolkit.core.models.aware.posterior import StopDecision
    from easl_toolkit.core.models.inputs import Chosen


def choose_hits(
    model: Model,
    state: dict[str, NDArray[Any]],
    *,
    n_hits: int,
    rng: np.random.Generator,
    exclude: NDArray[Any] | None = None,
) -> NDArray[Any]:
    """The next ``n_hits`` HITs (item positions, shape ``(n_hits, hit_size)``; fewer rows when too few items are
    free), as the model chooses them (``Model.next_hits``: Algorithm 1 of Sakaguchi & Van Durme (2018), the least
    annotated items for DA, the aware model's allocation). ``exclude`` marks items that may not be chosen (those of
    open HITs, in streaming mode)."""
    return choose(model, state, n_hits=n_hits, rng=rng, exclude=exclude).hits


def choose(
    model: Model,
    state: dict[str, NDArray[Any]],
    *,
    n_hits: int,
    rng: np.random.Generator,
    exclude: NDArray[Any] | None = None,
) -> Chosen:
    """:func:`choose_hits` with the design the model drew them with, to record with them (``Model.choose``)."""
    chosen = model.choose(state, n_hits=n_hits, rng=rng, exclude=exclude)
    return chosen._replace(hits=np.asarray(chosen.hits, dtype=np.int64))


def stop_rng(seed: int, seq: int) -> np.random.Generator:
    """The generator of the stopping rule's posterior draws for the state at log position ``seq``: the same
    state gives the same expected Spearman in ``easl next``, ``easl status`` and the monitor."""
    return np.random.default_rng([seed, 0x5709, seq])


def stop_decision(model: Model, state: dict[str, NDArray[Any]], seq: int) -> StopDecision | None:
    """The stopping rule's verdict (``Model.stop_decision``, e.g. ``core.models.aware.posterior.StopDecision``):
    None for a model without a stopping rule or a project without a target (``hyper.stop_at``)."""
    decision: StopDecision | None = model.stop_decision(state, stop_rng(model.hyper.seed, seq))
    return decision


def state_seq(conn: sqlite3.Connection) -> int:
    """The log position the cached state reflects (``meta.state_seq``)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'state_seq'").fetchone()
    return int(row[0]) if row else 0
