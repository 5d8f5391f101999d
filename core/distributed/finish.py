"""Merged partition statistics -> the :class:`~core.metrics.results.Evaluation` of ``easl evaluate``.

A :class:`~core.metrics.estimates.comparisons.Comparisons` without data (prefixes, categories, pooled centring)
finishes the merged totals as the in-memory point estimates are finished, and :func:`core.metrics.assemble.assemble`
builds the result; analytic intervals come from the merged rating patterns, fairness from the merged cells
(:mod:`core.distributed.fairness_cells`).

Spearman and Kendall are exact, from the multiplicities of the distinct (human, system) pairs: the merged pair table
(:func:`core.distributed.partitions.pair_table`) is the data itself up to the order of the responses, which no rank
statistic depends on:

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

import dataclasses
import itertools
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.distributed.fairness_cells import fairness_evaluation
from easl_toolkit.core.distributed.partitions import PairKey, PartitionStats, Spec, Totals
from easl_toolkit.core.metrics.assemble import assemble
from easl_toolkit.core.metrics.estimates.association import spearman_rho_resampled
from easl_toolkit.core.metrics.estimates.comparisons import Comparisons, PointEstimates
from easl_toolkit.core.metrics.estimates.fairness_resampled import fairness_design
from easl_toolkit.core.metrics.estimates.pair import PairSuite, batch_values, point_values
from easl_toolkit.core.metrics.intervals.agreement_variance import closed_form_intervals
from easl_toolkit.core.metrics.notes import capture, quiet, undefined
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.prepare import (
    DROP_H1_MISSING,
    DROP_H1_OUT_OF_SCALE,
    DROP_H1_ZERO,
    DROP_SYSTEM_MISSING,
    SET_MISSING_OUT_OF_SCALE,
    SET_MISSING_ZERO,
    policy_notes,
    prepare,
)
from easl_toolkit.core.metrics.results import Evaluation

RANK_KEYS = ("spearman", "kendall_tau_b", "kendall_tau_c")
_DROP_ORDER = (DROP_H1_MISSING, DROP_H1_ZERO, DROP_H1_OUT_OF_SCALE, DROP_SYSTEM_MISSING)
_CHANGE_ORDER = (SET_MISSING_ZERO, SET_MISSING_OUT_OF_SCALE)


def _ordered(counts: dict[str, int], order: tuple[str, ...]) -> dict[str, int]:
    return {k: counts[k] for k in (*order, *sorted(set(counts) - set(order))) if counts.get(k)}


def _prefixes(stats: PartitionStats) -> tuple[list[str], dict[PairKey, str]]:
    """The group labels in order and each comparison's key prefix (``s:model:``, ``hh:``, ``g:0:model:``, ``c:0:``)."""
    labels = sorted({key[1] for key in stats.pairs if key[0] == "g"})
    index = {label: i for i, label in enumerate(labels)}
    kinds = {"s": "s:{s}:", "hh": "hh:", "g": "g:{i}:{s}:", "c": "c:{i}:"}
    return labels, {(k, g, s): kinds[k].format(s=s, i=index.get(g)) for k, g, s in stats.pairs}


def flat_totals(stats: PartitionStats, boot: bool = False) -> Totals:
    """The merged totals under the in-memory keys (``s:model:sab``, ``t:model:S1``, ``a:pairs``, ...)."""
    _, prefix = _prefixes(stats)
    t: Totals = {}
    for key, pair in stats.pairs.items():
        src = pair.boot if boot else pair.totals
        t.update({prefix[key] + k: v for k, v in (src or {}).items()})
    for s, ts in stats.true.items():
        src = ts.boot if boot else ts.totals
        t.update({f"t:{s}:{k}": v for k, v in (src or {}).items()})
    raters = stats.raters_boot if boot else stats.raters
    if raters is not None:
        t.update({"a:" + k: v for k, v in raters.items()})
    return t


def skeleton(stats: PartitionStats, spec: Spec, rater_error_variance: float | None) -> Comparisons:
    """The comparisons of the merged data without the data: prefixes, categories, pooled centring."""
    assert spec.scale is not None
    cats = spec.scale.category_array if spec.scale.is_categorical else None
    labels, prefix = _prefixes(stats)
    empty, rows = np.zeros(0), np.zeros(0, dtype=np.int64)
    suites: dict[PairKey, PairSuite] = {}
    for key, pair in stats.pairs.items():
        smd = "pooled" if key[0] in ("hh", "c") else "unpooled"
        suite = PairSuite(prefix[key], empty, empty, rows, 0, cats, smd)
        suite.shift = {"ca": pair.ca, "cb": pair.cb}
        suites[key] = suite
    index = {label: i for i, label in enumerate(labels)}
    r = stats.n_raters
    groups = {(index[k[1]], k[2]): v for k, v in suites.items() if k[0] == "g"}
    return Comparisons(
        stats.n_rated,
        {s: suites[("s", "", s)] for s in spec.system},
        suites.get(("hh", "", "")),
        labels,
        dict(sorted(groups.items(), key=lambda kv: (kv[0][0], spec.system.index(kv[0][1])))),
        {s: fairness_design(empty, empty, np.zeros(0, dtype=object)) for s in spec.system},
        rows,
        rater_error_variance,
        np.zeros((0, r)),
        {s: empty for s in spec.system},
        np.zeros((0, r), dtype=np.int64) if stats.raters is not None else None,
        cats,
        dict(sorted(((index[k[1]], v) for k, v in suites.items() if k[0] == "c"), key=lambda kv: kv[0])),
        spec.weightings,
    )


def _rank_values(
    stats: PartitionStats, comp: Comparisons, values: dict[str, float], reasons: dict[str, str]
) -> list[str]:
    """Spearman and Kendall of every comparison from its pair table; returns notes on tables not kept."""
    _, prefix = _prefixes(stats)
    notes = []
    for key, pair in stats.pairs.items():
        p = prefix[key]
        if pair.table is None:
            why = "not computed exactly at this scale: more distinct (human, system) score pairs than the limit"
            for k in RANK_KEYS:
                values[p + k], reasons[p + k] = float("nan"), why
            notes.append(f"{p.rstrip(':')}: Spearman and Kendall {why}")
            continue
        for keys, fn in (
            (("spearman",), spearman_from_table),
            (("kendall_tau_b", "kendall_tau_c"), kendall_from_table),
        ):
            got, why_rank, _ = capture(fn, pair.table)
            for k, v in zip(keys, np.atleast_1d(np.asarray(got, dtype=np.float64))):
                values[p + k] = float(v)
                # (the in-memory report gives tau-c no reason of its own: tau-b's computation emits it once)
                if why_rank and not np.isfinite(v) and k != "kendall_tau_c":
                    reasons[p + k] = "; ".join(why_rank)
    comp.differences(values, RANK_KEYS)  # the degradations, with the reasons of both figures
    for s, k in itertools.product(comp.systems if comp.human_human is not None else (), RANK_KEYS):
        both = [w for w in (reasons.get(f"s:{s}:{k}"), reasons.get("hh:" + k)) if w]
        if both and not np.isfinite(values[f"d:{s}:{k}"]):
            reasons[f"d:{s}:{k}"] = "; ".join(both)
    return notes


def _rank_samples(stats: PartitionStats) -> dict[str, NDArray[Any]]:
    """Spearman and Kendall of every resample, keyed as the in-memory bootstrap's (no Kendall for the human-human
    consistency by group, as there)."""
    _, prefix = _prefixes(stats)
    out: dict[str, NDArray[Any]] = {}
    for key, pair in stats.pairs.items():
        if pair.boot_table is not None:
            got = resampled_ranks(pair.boot_table, kendall=key[0] != "c")
            out.update({prefix[key] + k: v for k, v in got.items()})
    return out


def finish(
    stats: PartitionStats,
    spec: Spec,
    *,
    options: EvaluationOptions,
    group_name: str = "group",
    scale_note: str | None = None,
    extra_notes: list[str] | None = None,
) -> Evaluation:
    """The evaluation of the merged statistics (same figures as :func:`core.metrics.pipeline.evaluate`, with the
    same ``options``; the scale, zero policy and bootstrap are those ``spec`` sent to the workers)."""
    confidence, base_group = options.confidence, options.base_group
    assert spec.scale is not None
    notes = list(extra_notes or []) + policy_notes(
        _ordered(stats.dropped, _DROP_ORDER),
        _ordered(stats.changed, _CHANGE_ORDER),
        scale_note,
        spec.scale.is_categorical,
        stats.off_categories,
    )
    comp = skeleton(stats, spec, options.rater_error_variance)
    totals = flat_totals(stats)
    point = PointEstimates(totals, *point_values(comp.finishers(totals, with_ranks=False)))
    rank_notes = _rank_values(stats, comp, point.values, point.reasons)
    closed = closed_form_intervals(
        comp, point, confidence=confidence, population_size=options.population_size, raters=stats.patterns
    )
    samples: dict[str, NDArray[Any]] = {}
    if spec.n_bootstrap > 0 and stats.n_reference >= 2:
        samples = batch_values(comp.finishers(flat_totals(stats, boot=True), with_ranks=False))
        samples.update(comp.differences(quiet(_rank_samples, stats), RANK_KEYS))
        notes.append(
            "bootstrap: each response drawn Poisson(1) times per resample in its partition (mergeable; not the "
            "in-memory multinomial draws)"
        )
    elif spec.n_bootstrap > 0:
        notes.append("bootstrap skipped: it needs at least 2 responses")
    empty: dict[str, NDArray[Any]] = {s: np.zeros(0) for s in spec.system}  # a Prepared without the data
    groups = np.zeros(0, dtype=object) if spec.group else None
    p = prepare(np.zeros((0, len(spec.human))), empty, human_names=spec.human, scale=spec.scale, groups=groups)
    p.policy.dropped = _ordered(stats.dropped, _DROP_ORDER)
    ev = assemble(
        dataclasses.replace(p, n_input=stats.n_input, notes=notes),
        comp,
        point,
        closed,
        samples,
        # the skeleton's fairness (no data, no base group) is replaced by the cells' below
        options=dataclasses.replace(options, n_bootstrap=spec.n_bootstrap, seed=spec.seed, base_group=None),
        group_name=group_name,
    )
    return _with_merged_data(ev, stats, spec, group_name, base_group, confidence, rank_notes)


def _with_merged_data(
    ev: Evaluation,
    stats: PartitionStats,
    spec: Spec,
    group_name: str,
    base_group: str | None,
    confidence: float,
    rank_notes: list[str],
) -> Evaluation:
    """``ev`` with what the skeleton cannot give: the fairness of the merged cells, the counts and the sample of
    responses kept for the figures."""
    fairness = dict(ev.fairness)
    if spec.group:
        fairness[group_name] = {
            s: fairness_evaluation(
                stats.cells.get(s),
                stats.unit.get(s, 0.0),
                base_group,
                spec.n_bootstrap if stats.n_reference >= 2 else 0,
                stats.cells_boot.get(s),
                confidence,
            )
            for s in spec.system
        }
    notes = [*ev.notes, *rank_notes]
    if stats.sample_h.shape[0] < stats.n_reference:
        notes.append(
            f"figures drawn from {stats.sample_h.shape[0]} of the {stats.n_reference} responses (evenly spaced in "
            "every partition); the tables count every response"
        )
    return dataclasses.replace(
        ev,
        n_responses=stats.n_reference,
        human=stats.sample_h,
        system=stats.sample_s,
        fairness=fairness,
        notes=tuple(notes),
    )


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
