"""Exact Spearman and Kendall from the multiplicities of the distinct (human, system) pairs.

The merged pair table (:func:`core.distributed.partitions.pair_table`) is the data itself up to the order of the
responses, which no rank statistic depends on:

- Spearman's rho is Pearson's r of the mid-ranks, computed with multiplicities by
  :func:`core.metrics.estimates.association.spearman_rho_resampled` (the function the in-memory bootstrap uses; Spearman
  1904);
- Kendall's tau-b = (P - Q) / sqrt((n0 - n1)(n0 - n2)) and tau-c = 2 (P - Q) / (n^2 (m - 1) / m) (Kendall 1945;
  Stuart 1953; as :func:`core.metrics.estimates.association.kendall_taus`), with the concordance P - Q = sum over cells
  (x, y) of n_xy (sum_{x' > x, y' > y} n_x'y' - sum_{x' > x, y' < y} n_x'y') from the table's cumulative sums.

When the table has more distinct pairs than the limit, the ranks are not computed (NaN with the reason), never
approximated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from core.metrics.estimates.association import spearman_rho_resampled
from core.metrics.notes import undefined

#: Largest number of table cells (distinct human values x distinct system values) processed at once.
BLOCK_CELLS = 4_000_000
#: Largest table (distinct human values x distinct system values) for Kendall's concordance count.
KENDALL_CELLS = 20_000_000_000


def _checked(
    a: NDArray[Any], b: NDArray[Any], w: NDArray[Any]
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]] | None:
    keep = w > 0
    a, b, w = a[keep], b[keep], w[keep]
    if w.sum() < 2:
        undefined("a correlation needs at least 2 responses")
        return None
    if np.unique(a).size < 2 or np.unique(b).size < 2:
        undefined("a correlation is undefined for constant scores")
        return None
    return a, b, w


def spearman_from_table(table: pd.Series) -> float:
    """Spearman's rho of the responses a pair table stands for (NaN with a reason as :func:`spearman_rho`)."""
    data = _checked(*_levels(table), table.to_numpy(dtype=np.float64))
    if data is None:
        return float("nan")
    a, b, w = data
    return float(spearman_rho_resampled(a, b, w[None, :])[0])


def concordance(a: NDArray[Any], b: NDArray[Any], w: NDArray[Any]) -> float:
    """P - Q over all pairs of responses, from distinct pairs (a, b) with multiplicities w.

    Rows of the (distinct a) x (distinct b) table are processed in blocks from the largest a down, each against the
    running column totals of the rows above it: O(K_a K_b) time, O(block) memory.
    """
    ua, ia = np.unique(a, return_inverse=True)
    ub, ib = np.unique(b, return_inverse=True)
    ka, kb = ua.size, ub.size
    if ka * kb > KENDALL_CELLS:
        return undefined(
            f"Kendall's tau is not computed at this scale: {ka} x {kb} distinct score values exceed the "
            f"{KENDALL_CELLS:,} cells of the exact concordance count"
        )
    above = np.zeros(kb)  # column totals of the rows with a larger a
    pq = 0.0
    step = max(1, BLOCK_CELLS // kb)
    order = np.argsort(ia, kind="stable")
    ia, ib, w = ia[order], ib[order], w[order]
    bounds = np.searchsorted(ia, np.arange(ka + 1))
    for top in range(ka, 0, -step):
        lo = max(0, top - step)
        sel = slice(bounds[lo], bounds[top])
        block = np.zeros((top - lo, kb))
        np.add.at(block, (ia[sel] - lo, ib[sel]), w[sel])
        # rows strictly above each row of the block: the rows above the block plus the later rows of the block
        later = np.cumsum(block[::-1], axis=0)[::-1] - block + above[None, :]
        greater = np.cumsum(later[:, ::-1], axis=1)[:, ::-1] - later  # y' > y
        smaller = np.cumsum(later, axis=1) - later  # y' < y
        pq += float((block * (greater - smaller)).sum())
        above += block.sum(axis=0)
    return pq


def kendall_from_table(table: pd.Series) -> tuple[float, float]:
    """Kendall's tau-b and tau-c of the responses a pair table stands for (as :func:`kendall_taus`)."""
    return kendall_from_weights(*_levels(table), table.to_numpy(dtype=np.float64))


def _levels(table: pd.Series | pd.DataFrame) -> tuple[NDArray[Any], NDArray[Any]]:
    index = table.index
    return index.get_level_values(0).to_numpy(dtype=np.float64), index.get_level_values(1).to_numpy(dtype=np.float64)


def kendall_from_weights(a: NDArray[Any], b: NDArray[Any], weights: NDArray[Any]) -> tuple[float, float]:
    """Kendall's tau-b and tau-c of distinct pairs (a, b) drawn ``weights`` times each."""
    data = _checked(a, b, weights)
    if data is None:
        return float("nan"), float("nan")
    a, b, w = data
    pq = concordance(a, b, w)
    if not np.isfinite(pq):
        return float("nan"), float("nan")
    n = float(w.sum())
    ca = pd.Series(w).groupby(a).sum().to_numpy()
    cb = pd.Series(w).groupby(b).sum().to_numpy()
    n0 = n * (n - 1.0) / 2.0
    tau_b = pq / np.sqrt((n0 - (ca * (ca - 1.0)).sum() / 2.0) * (n0 - (cb * (cb - 1.0)).sum() / 2.0))
    m = float(min(ca.size, cb.size))
    tau_c = 2.0 * pq / (n * n * (m - 1.0) / m)
    return float(np.clip(tau_b, -1.0, 1.0)), float(np.clip(tau_c, -1.0, 1.0))


def resampled_ranks(table: pd.DataFrame, kendall: bool = True) -> dict[str, NDArray[Any]]:
    """Spearman (and Kendall's taus) in every resample of a resampled pair table (one column per resample).

    Spearman uses :func:`core.metrics.estimates.association.spearman_rho_resampled` (as the in-memory bootstrap),
    Kendall one concordance count per resample (as the in-memory bootstrap recomputes it per resample)."""
    a, b = _levels(table)
    w = table.to_numpy(dtype=np.float64).T
    out = {"spearman": spearman_rho_resampled(a, b, w)}
    if kendall:
        taus = np.array([kendall_from_weights(a, b, row) for row in w]).reshape(-1, 2)
        out["kendall_tau_b"], out["kendall_tau_c"] = taus[:, 0], taus[:, 1]
    return out
