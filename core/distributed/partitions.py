"""The sufficient statistics of one partition of an evaluation, computed with the in-memory code.

A partition (a pandas frame of wide-form rows) goes through the same steps as ``easl evaluate`` in memory: the
score policy and the comparisons of :func:`core.metrics.prepare.prepare` and
:func:`core.metrics.estimates.comparisons.build`, then the totals of
:attr:`core.metrics.estimates.pair.PairSuite.sums`, :func:`core.metrics.estimates.true_score.true_score_sums`
and :func:`core.metrics.estimates.agreement_totals.agreement_totals`, the multiplicities of the distinct (human, system)
pairs and the fairness cells. What is kept (:class:`PartitionStats`) merges exactly (:func:`merge`), in partition
order, so the result does not depend on where the partitions were computed:

- counts, category tables, coincidence sums and rating-pattern counts add;
- centred moments (sums of a - c_a, (a - c_a)^2, (a - c_a)(b - c_b), ...) are re-centred to the pooled mean and
  added: with d = c_from - c_to, sum (a - c_to) = s_a + n d and sum (a - c_to)^2 = s_aa + 2 d s_a + n d^2 (the
  pairwise update of Chan, Golub & LeVeque 1983, "Algorithms for computing the sample variance", Am. Stat. 37);
  the true-score sums S1, S2 (centred at the mean rating, Loukina et al. 2020, Appendix B) likewise with weights c_i;
- the multiplicities of the distinct (human, system) pairs add (exact Spearman and Kendall,
  :mod:`core.distributed.finish`), up to ``rank_limit`` distinct pairs;
- fairness cells (group x human score) merge with the same pairwise update (:mod:`core.distributed.fairness_cells`).

Bootstrap: each response of partition k is drawn Poisson(1) times in every resample (generator seeded with
(seed, k)), so a resample's totals are sums over partitions too (the Poisson bootstrap: Hanley & MacGibbon 2006,
"Creating non-parametric bootstrap samples using Poisson frequencies", Comput. Methods Programs Biomed. 83).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.distributed.fairness_cells import cell_statistics, merge_cells, merge_resampled, resampled_cells
from easl_toolkit.core.metrics.bootstrap import CHUNK_ENTRIES
from easl_toolkit.core.metrics.data import Scale, Weights
from easl_toolkit.core.metrics.estimates.agreement_totals import agreement_totals, rating_patterns
from easl_toolkit.core.metrics.estimates.comparisons import Comparisons, _pattern_tables, build
from easl_toolkit.core.metrics.estimates.pair import PairSuite
from easl_toolkit.core.metrics.estimates.sums import RowSums
from easl_toolkit.core.metrics.estimates.true_score import true_score_sums
from easl_toolkit.core.metrics.load import frame_scores
from easl_toolkit.core.metrics.prepare import apply_score_policy, prepare
from easl_toolkit.core.tables import Table

Totals = dict[str, NDArray[Any]]
#: Comparison keys: ("s", "", system), ("hh", "", ""), ("g", group label, system), ("c", group label, "").
PairKey = tuple[str, str, str]


@dataclass(frozen=True)
class Spec:
    """What every partition computes (picklable: sent to the workers)."""

    source: str
    human: tuple[str, ...]
    system: tuple[str, ...]
    group: str | None
    scale: Scale | None
    exclude_zeros: bool
    weightings: tuple[Weights, ...]
    n_bootstrap: int = 0
    seed: int = 0
    sample: int = 2000  # reference responses kept per partition for the figures
    rank_limit: int = 5_000_000  # distinct (human, system) pairs kept for the exact rank correlations


@dataclass
class PairStats:
    """One comparison: point totals and bootstrap totals (keys without prefix), the centring, the pair table."""

    totals: Totals
    ca: float
    cb: float
    boot: Totals | None = None
    table: pd.Series | None = None  # multiplicity of each distinct (a, b); None: more pairs than the limit
    boot_table: pd.DataFrame | None = None  # the same for every resample (one column each)


@dataclass
class TrueStats:
    """The true-score sums of one system (centred at ``centre``, the mean rating) and their bootstrap totals."""

    totals: Totals
    centre: float
    boot: Totals | None = None


@dataclass
class PartitionStats:
    """Everything one partition (or a merge of several) contributes to an evaluation."""

    n_input: int = 0
    n_rated: int = 0
    n_reference: int = 0
    n_raters: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    off_categories: int = 0
    repeats: int = 0  # long form: repeated ratings of an item by the same rater left out
    pairs: dict[PairKey, PairStats] = field(default_factory=dict)
    true: dict[str, TrueStats] = field(default_factory=dict)
    raters: Totals | None = None
    raters_boot: Totals | None = None
    patterns: tuple[NDArray[Any], NDArray[Any]] | None = None  # distinct rating patterns and their counts
    cells: dict[str, pd.DataFrame] = field(default_factory=dict)  # system -> fairness cells
    cells_boot: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)  # ... in every resample
    unit: dict[str, float] = field(default_factory=dict)  # system -> largest absolute score (fairness)
    sample_h: NDArray[Any] = field(default_factory=lambda: np.zeros((0, 1)))
    sample_s: dict[str, NDArray[Any]] = field(default_factory=dict)


def columns(frame: pd.DataFrame, spec: Spec, k: int) -> tuple[NDArray[Any], dict[str, NDArray[Any]], Any]:
    """The human matrix, the system vectors and the group labels of a wide-form partition (as ``load_wide``)."""
    frame = frame.reset_index(drop=True)
    table = Table(frame, np.arange(1, len(frame) + 1, dtype=np.int64), f"{spec.source} (partition {k})", "row")
    missing = [c for c in (*spec.human, *spec.system, *([spec.group] if spec.group else [])) if c not in frame]
    if missing:
        shown = ", ".join(map(str, frame.columns[:12]))
        raise ValueError(f"partition {k}: no column {missing[0]!r} (columns: {shown})")

    def numbers(c: str, strict: bool) -> NDArray[Any]:
        return frame_scores(frame, c, lambda: table, strict=strict)

    h = np.column_stack([numbers(c, False) for c in spec.human]) if len(frame) else np.zeros((0, len(spec.human)))
    sys = {c: numbers(c, True) if len(frame) else np.zeros(0) for c in spec.system}
    groups = frame[spec.group].astype(str).to_numpy() if spec.group else None
    return h, sys, groups


def partition_range(frame: pd.DataFrame, spec: Spec, k: int) -> tuple[float, float, int]:
    """(min, max, count) of the finite human ratings after the score policy without a scale (the default scale)."""
    h, sys, _ = columns(frame, spec, k)
    policy = apply_score_policy(h, sys, scale=None, exclude_zeros=spec.exclude_zeros)
    finite = policy.ratings[np.isfinite(policy.ratings)]
    if not finite.size:
        return float("inf"), float("-inf"), 0
    return float(finite.min()), float(finite.max()), int(finite.size)


def partition_stats(frame: pd.DataFrame, spec: Spec, k: int) -> PartitionStats:
    """The statistics of partition ``k`` (the scale must be fixed: a scale from the data needs every partition)."""
    if spec.scale is None:
        raise ValueError("partition statistics need the scale of the whole data set")
    h_all, sys, groups = columns(frame, spec, k)
    p = prepare(h_all, sys, scale=spec.scale, groups=groups, exclude_zeros=spec.exclude_zeros)
    h, system, reference, grp, cats = p.human, p.system, p.reference, p.groups, p.cats
    out = PartitionStats(
        repeats=int(frame.attrs.get("easl_repeats", 0)),
        n_input=p.n_input,
        n_rated=int(h.shape[0]),
        n_reference=p.n_reference,
        n_raters=int(h_all.shape[1]),
        dropped=dict(p.policy.dropped),
        changed=dict(p.policy.changed),
        off_categories=p.off_categories,
    )
    comp = build(p, rater_error_variance=None, weightings=spec.weightings)
    suites = _suites(comp)
    for key, suite in suites.items():
        out.pairs[key] = PairStats(
            _strip(suite.sums.totals(), suite.prefix),
            suite.shift["ca"],
            suite.shift["cb"],
            table=pair_table(suite.a[suite.rows], suite.b[suite.rows]),
        )
    true_sums = {}
    for s, m in comp.true_system.items():
        sums, centre = true_score_sums(comp.true_human, m)
        true_sums[s] = sums
        out.true[s] = TrueStats(sums.totals(), centre)
    if comp.raters is not None and cats is not None:
        out.raters = agreement_totals(comp.raters, cats.size)
        rows, mult = rating_patterns(comp.raters, cats.size)
        out.patterns = (rows, mult)
    ref = np.flatnonzero(reference)
    if grp is not None:
        for s, m in system.items():
            out.cells[s] = cell_statistics(h[ref, 0], m[ref], grp[ref])
            out.unit[s] = float(max(np.abs(h[ref, 0]).max(), np.abs(m[ref]).max())) if ref.size else 0.0
    keep = (
        ref[np.unique(np.linspace(0, ref.size - 1, min(ref.size, spec.sample)).astype(np.int64))] if ref.size else ref
    )
    out.sample_h = h[keep]
    out.sample_s = {s: v[keep] for s, v in system.items()}
    if spec.n_bootstrap > 0:
        fair = {s: (h[ref, 0], m[ref], grp[ref]) for s, m in system.items()} if grp is not None else {}
        _bootstrap(out, comp, suites, true_sums, spec, k, fair)
    return out


def _suites(comp: Comparisons) -> dict[PairKey, PairSuite]:
    out: dict[PairKey, PairSuite] = {("s", "", s): suite for s, suite in comp.systems.items()}
    if comp.human_human is not None:
        out[("hh", "", "")] = comp.human_human
    for (gi, s), suite in comp.groups.items():
        out[("g", comp.group_labels[gi], s)] = suite
    for gi, suite in comp.group_consistency.items():
        out[("c", comp.group_labels[gi], "")] = suite
    return out


def _strip(t: Totals, prefix: str) -> Totals:
    return {k[len(prefix) :]: np.asarray(v, dtype=np.float64) for k, v in t.items() if k.startswith(prefix)}


def pair_table(a: NDArray[Any], b: NDArray[Any]) -> pd.Series:
    """Multiplicity of each distinct (a, b) pair (index levels ``a``, ``b``)."""
    return pd.DataFrame({"a": a, "b": b}).groupby(["a", "b"], sort=False).size().astype(np.float64)


def _resampled_table(suite: PairSuite, table: pd.Series | None, counts: NDArray[Any]) -> NDArray[Any]:
    """(b, K): how often each distinct pair of ``table`` is drawn in each resample of a chunk."""
    if table is None:
        return np.zeros((counts.shape[0], 0))
    a, b = suite.a[suite.rows], suite.b[suite.rows]
    codes = pd.DataFrame({"a": a, "b": b}).groupby(["a", "b"], sort=False).ngroup().to_numpy()
    size, k = counts.shape[0], len(table)
    flat = (np.arange(size, dtype=np.int64)[:, None] * k + codes[None, :]).ravel()
    return np.bincount(flat, weights=counts[:, suite.rows].ravel(), minlength=size * k).reshape(size, k)


def _bootstrap(
    out: PartitionStats,
    comp: Comparisons,
    suites: dict[PairKey, PairSuite],
    true_sums: dict[str, RowSums],
    spec: Spec,
    k: int,
    fair: dict[str, tuple[NDArray[Any], NDArray[Any], NDArray[Any]]],
) -> None:
    """Totals of every comparison in ``spec.n_bootstrap`` Poisson(1) resamples of this partition's responses."""
    rng = np.random.default_rng([spec.seed, k])
    n = comp.n
    sums: dict[Any, tuple[RowSums, str]] = {key: (suite.sums, suite.prefix) for key, suite in suites.items()}
    sums.update({("t", s): (rs, "") for s, rs in true_sums.items()})
    if out.raters is not None and comp.raters is not None and comp.cats is not None:
        a = RowSums(n)
        a.add_grouped(*_pattern_tables(comp.raters, comp.cats.size, ""))
        sums["a"] = (a, "")
    parts: dict[Any, list[Totals]] = {key: [] for key in sums}
    tables: dict[PairKey, list[NDArray[Any]]] = {key: [] for key in suites}
    cells: dict[str, list[dict[str, NDArray[Any]]]] = {s: [] for s in fair}
    step = int(max(1, min(spec.n_bootstrap, CHUNK_ENTRIES // max(n, 1))))
    for start in range(0, spec.n_bootstrap, step):
        size = min(step, spec.n_bootstrap - start)
        counts = rng.poisson(1.0, size=(size, n)).astype(np.float64)
        for key, (rs, prefix) in sums.items():
            parts[key].append(_strip(rs.totals(counts), prefix))
        for key, suite in suites.items():
            tables[key].append(_resampled_table(suite, out.pairs[key].table, counts))
        for s, (hr, mr, gr) in fair.items():
            cells[s].append(resampled_cells(hr, mr, gr, out.cells[s], counts[:, comp.reference_rows]))
    merged = {key: {name: np.concatenate([p[name] for p in ps]) for name in ps[0]} for key, ps in parts.items()}
    for key, pair in out.pairs.items():
        pair.boot = merged[key]
        if pair.table is not None:
            pair.boot_table = pd.DataFrame(np.concatenate(tables[key]).T, index=pair.table.index)
    for s, ts in out.true.items():
        ts.boot = merged[("t", s)]
    if "a" in merged:
        out.raters_boot = merged["a"]
    for s, chunks in cells.items():
        index = out.cells[s].index
        out.cells_boot[s] = {n: pd.DataFrame(np.concatenate([c[n] for c in chunks]).T, index=index) for n in chunks[0]}


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
