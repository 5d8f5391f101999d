"""The exact merge of the statistics of two disjoint sets of responses
(:class:`~core.distributed.partitions.PartitionStats`):

- counts, category tables, coincidence sums and rating-pattern counts add;
- centred moments (sums of a - c_a, (a - c_a)^2, (a - c_a)(b - c_b), ...) are re-centred to the pooled mean and
  added: with d = c_from - c_to, sum (a - c_to) = s_a + n d and sum (a - c_to)^2 = s_aa + 2 d s_a + n d^2 (the
  pairwise update of Chan, Golub & LeVeque 1983, "Algorithms for computing the sample variance", Am. Stat. 37);
  the true-score sums S1, S2 (centred at the mean rating, Loukina et al. 2020, Appendix B) likewise with weights c_i;
- the multiplicities of the distinct (human, system) pairs add (exact Spearman and Kendall,
  :mod:`core.distributed.finish`), up to ``rank_limit`` distinct pairs;
- fairness cells (group x human score) merge with the same pairwise update (:mod:`core.distributed.fairness_cells`).

Merged in partition order, the result does not depend on where the partitions were computed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from core.distributed.fairness_cells import merge_cells, merge_resampled
from core.distributed.partitions import PairStats, PartitionStats, Totals, TrueStats

V = TypeVar("V")


def recentre_pair(t: Totals, d_a: float, d_b: float) -> Totals:
    """Moment totals centred at (c_a, c_b) re-centred at (c_a - d_a, c_b - d_b) (batch axes allowed)."""
    n, sa, sb = t["n"], t["sa"], t["sb"]
    out = dict(t)
    out["sa"] = sa + n * d_a
    out["sb"] = sb + n * d_b
    out["saa"] = t["saa"] + 2.0 * d_a * sa + n * d_a * d_a
    out["sbb"] = t["sbb"] + 2.0 * d_b * sb + n * d_b * d_b
    out["sab"] = t["sab"] + d_a * sb + d_b * sa + n * d_a * d_b
    return out


def recentre_true(t: Totals, d: float) -> Totals:
    """True-score totals centred at s re-centred at s - d: S1 + C d and S2 + 2 d S1 + C d^2."""
    out = dict(t)
    out["S1"] = t["S1"] + t["C"] * d
    out["S2"] = t["S2"] + 2.0 * d * t["S1"] + t["C"] * d * d
    return out


def add_totals(x: Totals | None, y: Totals | None) -> Totals | None:
    if x is None or y is None:
        return y if x is None else x
    return {k: x[k] + y[k] if k in y else x[k] for k in x} | {k: v for k, v in y.items() if k not in x}


def _pooled(nx: float, cx: float, ny: float, cy: float) -> float:
    n = nx + ny
    return (nx * cx + ny * cy) / n if n > 0 else 0.0


def merge_pairs(x: PairStats, y: PairStats, rank_limit: int) -> PairStats:
    nx, ny = float(x.totals["n"]), float(y.totals["n"])
    ca, cb = _pooled(nx, x.ca, ny, y.ca), _pooled(nx, x.cb, ny, y.cb)

    def moved(p: PairStats, t: Totals | None) -> Totals | None:
        return None if t is None else recentre_pair(t, p.ca - ca, p.cb - cb)

    def added(a: Any, b: Any, size: Callable[[Any], int]) -> Any:  # pair tables: None beyond the limit
        if a is None or b is None:
            return None
        both = pd.concat([a, b]).groupby(level=[0, 1], sort=False).sum()
        return both if size(both) <= rank_limit else None

    table = added(x.table, y.table, len)
    boot_table = added(x.boot_table, y.boot_table, np.size) if table is not None else None
    totals = add_totals(moved(x, x.totals), moved(y, y.totals))
    assert totals is not None
    return PairStats(totals, ca, cb, add_totals(moved(x, x.boot), moved(y, y.boot)), table, boot_table)


def merge_true(x: TrueStats, y: TrueStats) -> TrueStats:
    cx, cy = float(x.totals["C"]), float(y.totals["C"])
    c = _pooled(cx, x.centre, cy, y.centre)

    def moved(p: TrueStats, t: Totals | None) -> Totals | None:
        return None if t is None else recentre_true(t, p.centre - c)

    totals = add_totals(moved(x, x.totals), moved(y, y.totals))
    assert totals is not None
    return TrueStats(totals, c, add_totals(moved(x, x.boot), moved(y, y.boot)))


def merge_patterns(
    x: tuple[NDArray[Any], NDArray[Any]] | None, y: tuple[NDArray[Any], NDArray[Any]] | None
) -> tuple[NDArray[Any], NDArray[Any]] | None:
    if x is None or y is None:
        return y if x is None else x
    rows = np.concatenate([x[0], y[0]])
    mult = np.concatenate([x[1], y[1]])
    distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
    return distinct, np.bincount(inverse.reshape(-1), weights=mult, minlength=distinct.shape[0])


def _stack(x: NDArray[Any], y: NDArray[Any]) -> NDArray[Any]:
    return np.concatenate([x, y]) if x.size and y.size else x if x.size else y


def _merged(x: dict[Any, V], y: dict[Any, V], both: Callable[[V, V], V]) -> dict[Any, V]:
    """The entries of ``x`` and ``y`` by key, merged with ``both`` where both have one."""
    return {k: both(x[k], y[k]) if k in x and k in y else x[k] if k in x else y[k] for k in {**x, **y}}


def merge(x: PartitionStats, y: PartitionStats, rank_limit: int) -> PartitionStats:
    """The statistics of two disjoint sets of responses together."""
    out = PartitionStats(
        n_input=x.n_input + y.n_input,
        n_rated=x.n_rated + y.n_rated,
        n_reference=x.n_reference + y.n_reference,
        n_raters=max(x.n_raters, y.n_raters),
        dropped={k: x.dropped.get(k, 0) + y.dropped.get(k, 0) for k in {**x.dropped, **y.dropped}},
        changed={k: x.changed.get(k, 0) + y.changed.get(k, 0) for k in {**x.changed, **y.changed}},
        off_categories=x.off_categories + y.off_categories,
        repeats=x.repeats + y.repeats,
        raters=add_totals(x.raters, y.raters),
        raters_boot=add_totals(x.raters_boot, y.raters_boot),
        patterns=merge_patterns(x.patterns, y.patterns),
        sample_h=_stack(x.sample_h, y.sample_h),
    )
    out.pairs = _merged(x.pairs, y.pairs, lambda a, b: merge_pairs(a, b, rank_limit))
    out.true = _merged(x.true, y.true, merge_true)
    out.cells = _merged(x.cells, y.cells, merge_cells)
    for s in out.cells:
        ca, cb = x.cells.get(s), y.cells.get(s)
        ba, bb = x.cells_boot.get(s), y.cells_boot.get(s)
        if ba is not None and bb is not None and ca is not None and cb is not None:
            out.cells_boot[s] = merge_resampled(ba, ca, bb, cb, out.cells[s])
        elif ba is not None or bb is not None:
            out.cells_boot[s] = ba if ba is not None else bb  # type: ignore[assignment]
        out.unit[s] = max(x.unit.get(s, 0.0), y.unit.get(s, 0.0))
    out.sample_s = _merged(x.sample_s, y.sample_s, lambda a, b: np.concatenate([a, b]))
    return out
