"""Allocation for the annotator-aware model: uniform passes first, then the item slots that most reduce the
expected number of mis-ordered pairs.

With ``m_i`` the posterior mean and ``v_i`` the variance of item ``i``, the expected number of mis-ordered
pairs is ``L = sum_{i<j} Phi(-|m_i - m_j| / sqrt(v_i + v_j))``. One more score of item ``i`` turns ``v_i`` into
``v_i' = 1 / (1 / v_i + I_i)`` (:func:`information_per_score`); its gain is

    g_i = sum_j [Phi(-|m_i - m_j| / sqrt(v_i + v_j)) - Phi(-|m_i - m_j| / sqrt(v_i' + v_j))].

A batch takes the item slots of largest marginal gain (the k-th slot of an item gains what its k-th score
would, so the top slots equal the greedy choice when the other items' variances are held fixed), then groups
them into HITs at random with distinct items per HIT. Below ``N <= exact_below`` the sums are exact (``O(N^2)``
in blocks); above, the items are binned by ``m`` on a fine grid and by ``v`` into classes, and ``sum_j`` becomes
a convolution of each class's histogram with the kernel ``Phi(-|d| / sqrt(v + v_c))`` (FFT), interpolated at each
item: ``O(N + B log B)``.

SciPy is imported inside the functions that use it (``easl status`` imports this module and needs none of it),
and the convolution is numpy's real FFT, not ``scipy.signal.fftconvolve``, for the speed of ``easl next`` at scale
(measurements: docs/studies/code-notes.md).

References (every function): ``docs/studies/aware.md`` (allocation by expected reduction of mis-ordered pairs);
the research prototype's allocation (annotator-aware, after uniform passes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.aware.fit import AwareState

#: Uniform passes before the adaptive allocation starts (2 save at least as much as 3 in the annotator-aware
#: study; measurements: docs/studies/code-notes.md).
UNIFORM_PASSES = 2
EXACT_BELOW = 4000
_GRID = 2048
_V_CLASSES = 12


def information_per_score(state: AwareState) -> NDArray[Any]:
    """Expected information of one more score of each item from an annotator drawn from the pool, ``I_i =
    mean_a(s_a^2 / r_a) / q_i`` over the annotators seen so far (all, if none): one more score turns ``Var(u_i)``
    into ``1 / (1 / Var(u_i) + I_i)``.

    Parameters
    ----------
    state : AwareState

    Returns
    -------
    ndarray of float64, shape (n_items,)
        ``I_i > 0``.

    References
    ----------
    Bishop (2006), section 3.3 (Gaussian posterior update).
    """
    seen = state.n_scores > 0
    if not seen.any():
        seen = np.ones_like(seen, dtype=bool)
    per = (state.slope[seen] ** 2 + state.var_slope[seen]) / state.noise[seen]
    return float(per.mean() if per.size else 1.0) / state.q


def misorder_sums(m: NDArray[Any], v: NDArray[Any], v_self: list[NDArray[Any]]) -> list[NDArray[Any]]:
    """``F_i = sum_j Phi(-|m_i - m_j| / sqrt(v_self_i + v_j))`` for every item ``i`` (``j`` over all items),
    for each array of ``v_self``: exact in blocks for ``N <= EXACT_BELOW``; above, binned (module docstring; one
    table serves every ``v_self``), accurate to about 1e-3 of the gain when the bin width is small against
    ``sqrt(v)``.

    Parameters
    ----------
    m, v : ndarray, shape (N,)
        Posterior means and variances of the items.
    v_self : list of ndarray, shape (N,)
        Variances assumed for item ``i`` itself.

    Returns
    -------
    list of ndarray of float64, shape (N,)
        One ``F`` per ``v_self``.

    Examples
    --------
    >>> [F.tolist() for F in misorder_sums(np.zeros(2), np.ones(2), [np.ones(2)])]  # Phi(0) = 0.5, twice
    [[1.0, 1.0]]
    """
    from scipy import special  # here: status imports this module and needs none of SciPy

    n = m.size
    if n <= EXACT_BELOW:
        outs: list[NDArray[Any]] = []
        step = max(1, 2_000_000 // max(n, 1))
        for vs in v_self:
            out = np.empty(n)
            for b in range(0, n, step):  # blocks of rows, vectorised within
                d = np.abs(m[b : b + step, None] - m[None, :])
                out[b : b + step] = special.ndtr(-d / np.sqrt(vs[b : b + step, None] + v[None, :])).sum(axis=1)
            outs.append(out)
        return outs
    lo, hi = float(m.min()), float(m.max())
    grid = int(np.clip(n // 8, 256, _GRID))
    width = max(hi - lo, 1e-9) / (grid - 1)
    pos = (m - lo) / width
    cls_edges = np.quantile(v, np.linspace(0, 1, _V_CLASSES + 1))
    cls = np.clip(np.searchsorted(cls_edges, v, side="right") - 1, 0, _V_CLASSES - 1)
    v_cls = np.bincount(cls, v, _V_CLASSES) / np.maximum(np.bincount(cls, minlength=_V_CLASSES), 1)
    # histograms by class, linear binning (cloud in cell) on the m grid
    left = np.clip(np.floor(pos).astype(np.int64), 0, grid - 2)
    frac = pos - left
    flat = cls * grid + left
    hist = (np.bincount(flat, 1.0 - frac, _V_CLASSES * grid) + np.bincount(flat + 1, frac, _V_CLASSES * grid)).reshape(
        _V_CLASSES, grid
    )
    # F on (self-variance grid x m grid): per grid variance, the FFT convolution of each class's histogram with
    # its kernel Phi(-|d| / sqrt(v_self + v_c)) at offsets d = p - q, summed over the classes in the frequency
    # domain (one inverse transform), then bilinear interpolation at each item
    lvs = [np.log(np.maximum(vs, 1e-12)) for vs in v_self]
    g_lo, g_hi = min(float(x.min()) for x in lvs), max(float(x.max()) for x in lvs)
    n_v = 16 if g_hi > g_lo else 1
    v_grid = np.exp(np.linspace(g_lo, g_hi, n_v))
    d = np.abs(np.arange(-(grid - 1), grid) * width)
    table = np.empty((n_v, grid))
    n_fft = 1 << int(3 * grid - 2).bit_length()  # >= the full convolution's length 3 grid - 2: no wrap-around
    hist_f = np.fft.rfft(hist, n_fft, axis=1)
    for a, vg in enumerate(v_grid):
        kern = special.ndtr(-d[None, :] / np.sqrt(vg + v_cls[:, None]))
        full = np.fft.irfft((np.fft.rfft(kern, n_fft, axis=1) * hist_f).sum(axis=0), n_fft)
        table[a] = full[grid - 1 : 2 * grid - 1]  # the "valid" part: kernel offsets -(grid-1)..grid-1 all inside
    outs = []
    for lv in lvs:
        t = (lv - g_lo) / (g_hi - g_lo) * (n_v - 1) if n_v > 1 else np.zeros(n)
        a0 = np.clip(np.floor(t).astype(np.int64), 0, max(n_v - 2, 0))
        ta = t - a0
        a1 = np.minimum(a0 + 1, n_v - 1)
        f0 = table[a0, left] * (1 - frac) + table[a0, left + 1] * frac
        f1 = table[a1, left] * (1 - frac) + table[a1, left + 1] * frac
        outs.append(f0 * (1 - ta) + f1 * ta)
    return outs


def slot_gains(state: AwareState, *, max_slots: int = 2) -> NDArray[Any]:
    """Marginal gains of the first ``max_slots`` more scores of every item (module docstring): column ``k`` is
    ``F(v_i^(k)) - F(v_i^(k+1))`` with ``v_i^(k) = 1 / (1 / v_i + k I_i)`` and ``F`` of :func:`misorder_sums`
    (the other items held at their variances), the expected drop in mis-ordered pairs.

    Parameters
    ----------
    state : AwareState
        The current fit; ``var_mu`` is the variance that one more score reduces.
    max_slots : int, default 2
        Scores of one item considered within one batch.

    Returns
    -------
    ndarray of float64, shape (n_items, max_slots)
        Non-negative up to the binning error; non-increasing along a row.
    """
    m, v = state.mu, np.maximum(state.var_mu, 1e-12)
    info = information_per_score(state)
    f = misorder_sums(m, v, [1.0 / (1.0 / v + k * info) for k in range(max_slots + 1)])
    g = np.stack([f[k] - f[k + 1] for k in range(max_slots)], axis=1)
    return np.minimum.accumulate(np.maximum(g, 0.0), axis=1)


def group_into_hits(slots: NDArray[Any], *, n_hits: int, hit_size: int, rng: np.random.Generator) -> NDArray[Any]:
    """Group item slots into HITs at random, each item at most once per HIT: ``slots`` (length ``n_hits *
    hit_size``, no item more than ``n_hits`` times) is ordered with the copies of an item side by side, in random
    item order, and dealt column by column (slot ``k`` to HIT ``k mod n_hits``), so copies land in different
    HITs; rows and columns are then shuffled.

    Returns
    -------
    ndarray of int64, shape (n_hits, hit_size)
    """
    items, counts = np.unique(slots, return_counts=True)
    if counts.size and counts.max() > n_hits:
        raise ValueError("an item has more slots than there are HITs")
    p = rng.permutation(items.size)
    seq = np.repeat(items[p], counts[p])
    hits = np.empty((hit_size, n_hits), dtype=np.int64)
    hits.flat[:] = seq
    hits = hits.T
    return hits[rng.permutation(n_hits)][:, rng.permutation(hit_size)]


def select_batch(
    state: AwareState,
    *,
    n_hits: int,
    hit_size: int,
    rng: np.random.Generator,
    uniform_passes: int = UNIFORM_PASSES,
    max_slots: int = 2,
    exclude: NDArray[Any] | None = None,
) -> NDArray[Any]:
    """The next batch of HITs for the annotator-aware model: while some item has fewer than ``uniform_passes``
    scores, the least-annotated items (seeded random tie-break), as in direct assessment; then the ``n_hits *
    hit_size`` item slots of largest :func:`slot_gains`, grouped by :func:`group_into_hits`.

    Parameters
    ----------
    state : AwareState
        The current fit (``count`` says how many scores each item has).
    n_hits, hit_size : int
        Batch shape; ``n_hits * hit_size`` slots.
    rng : numpy.random.Generator
        The project's generator (tie-breaks and grouping).
    uniform_passes : int, default :data:`UNIFORM_PASSES`
        Scores every item gets before the allocation adapts.
    max_slots : int, default 2
        Most scores of one item in one batch once adaptive.
    exclude : ndarray of bool, shape (n_items,), optional
        Items that may not be chosen (those of open HITs, when a front end tops up HITs one at a time);
        the batch is chosen among the others, and has fewer HITs when too few items are free.

    Returns
    -------
    ndarray of int64, shape (n_hits, hit_size)
        Item indices; no item twice in a HIT.

    Examples
    --------
    >>> from core.models.aware.fit import Observations, fit
    >>> obs = Observations.build(np.arange(10), np.zeros(10, dtype=int), np.linspace(0, 1, 10), n_items=10)
    >>> hits = select_batch(fit(obs), n_hits=2, hit_size=5, rng=np.random.default_rng(0))
    >>> hits.shape, all(len(set(h)) == 5 for h in hits.tolist())
    ((2, 5), True)
    """
    if exclude is not None and np.any(exclude):
        free = np.flatnonzero(~np.asarray(exclude, dtype=bool))
        if free.size < hit_size:
            return np.zeros((0, hit_size), dtype=np.int64)
        sub = state.subset(free)
        hits = select_batch(
            sub, n_hits=n_hits, hit_size=hit_size, rng=rng, uniform_passes=uniform_passes, max_slots=max_slots
        )
        chosen: NDArray[Any] = free[hits]
        return chosen
    n = state.n_items
    n_slots = n_hits * hit_size
    if hit_size > n:
        raise ValueError(f"hit_size {hit_size} exceeds the {n} items")
    per_item = min(max(max_slots, -(-n_slots // n)), n_hits)
    if state.count.min() < uniform_passes:
        perm = rng.permutation(n)
        order = perm[np.argsort(state.count[perm], kind="stable")]
        slots = np.tile(order, -(-n_slots // n))[:n_slots]
    else:
        g = slot_gains(state, max_slots=per_item)
        flat = g.ravel() + 1e-15 * rng.random(g.size)  # seeded tie-break
        top = np.argpartition(-flat, n_slots - 1)[:n_slots]
        slots = top // per_item
    return group_into_hits(slots, n_hits=n_hits, hit_size=hit_size, rng=rng)
