"""The experiments of Loukina et al. (2020) on the simulated dataset (:mod:`core.simulate.prmse_data`).

Each function reproduces one analysis of the paper the way the authors' public notebooks do it
(github.com/EducationalTestingService/prmse-simulations; protocol in ``docs/design.md``, section 6.1) and
returns tidy DataFrames; :mod:`core.simulate.prmse_report` turns them into tables, figures and the report.
All metrics come from :mod:`core.metrics` (Pearson r, continuous QWK, R2, PRMSE); nothing is re-implemented here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from core.simulate import MapFn, measures, serial_map
from core.simulate.prmse_data import PrmseDataset, mean_offdiagonal_correlation

if TYPE_CHECKING:
    from core.simulate.report import Comparison

REFERENCES = ("h1", "h1-h2 mean")


@dataclass
class PrmseResults:
    """Everything one run computes (kept for tests and for the CLI summary)."""

    dataset: PrmseDataset
    table1: pd.DataFrame
    table2: pd.DataFrame
    stability: pd.DataFrame
    ranking: dict[str, Any]
    cumulative: pd.DataFrame
    double: pd.DataFrame | None
    table4: pd.DataFrame | None
    true_metrics: dict[str, Any]
    comparisons: dict[str, Comparison]
    timings: dict[str, float]


def rater_table(ds: PrmseDataset) -> pd.DataFrame:
    """Table 1: per rater category, the number of raters, the mean off-diagonal inter-rater Pearson correlation,
    and the mean and sd (ddof 1) of all the category's scores pooled (as the authors' ``describe()``)."""
    rows = []
    for cat in ds.settings.rater_categories:
        cols = [ds.rater_index(r) for r in ds.category_raters(cat)]
        scores = ds.raters[:, cols]
        rows.append(
            {
                "category": cat,
                "n_raters": len(cols),
                "error_sd": float(ds.rater_error_sd[cols[0]]),
                "hh_corr": float(mean_offdiagonal_correlation(scores.T)),
                "mean": float(scores.mean()),
                "sd": float(scores.std(ddof=1)),
            }
        )
    return pd.DataFrame(rows)


def system_table(ds: PrmseDataset) -> pd.DataFrame:
    """Table 2: per system category, the mean R2 of its systems against the true score
    (``r2(y_true=true, y_pred=system)``), the mean Pearson r with the true score, and the mean r with every rater
    of the ``same_pair_category`` (default "average") category."""
    ref_cols = [ds.rater_index(r) for r in ds.category_raters(ds.settings.same_pair_category)]
    rows = []
    for cat in ds.settings.system_categories:
        cols = np.flatnonzero(ds.system_category == cat)
        r2 = [measures.r2(ds.true, ds.systems[:, c]) for c in cols]
        r_true = [measures.pearson(ds.true, ds.systems[:, c]) for c in cols]
        r_avg = [measures.pearson(ds.raters[:, h], ds.systems[:, c]) for c in cols for h in ref_cols]
        rows.append(
            {
                "category": cat,
                "n_systems": len(cols),
                "error_sd": float(ds.system_error_sd[cols[0]]),
                "R2_true": float(np.mean(r2)),
                "r_true": float(np.mean(r_true)),
                f"r_{ds.settings.same_pair_category}": float(np.mean(r_avg)),
            }
        )
    return pd.DataFrame(rows)


def rater_pairs(ds: PrmseDataset, category: str) -> list[tuple[str, str]]:
    """``pairs_per_category`` random pairs of one category's raters: all ``itertools.combinations`` in id order, then
    ``RandomState(pair_seed).choice(pairs, pairs_per_category, replace=False)`` (the authors' ``get_rater_pairs``; a
    new generator per category, so every category uses the same positions)."""
    pairs = list(itertools.combinations(ds.category_raters(category), 2))
    k = ds.settings.pairs_per_category
    pick = np.random.RandomState(ds.settings.pair_seed).choice(len(pairs), size=k, replace=False)
    return [pairs[i] for i in pick]


def agreement(ds: PrmseDataset, system: NDArray[Any], h1: str, h2: str) -> list[dict[str, Any]]:
    """r, QWK, R2 and degradation of ``system`` against rater ``h1`` and against the mean of ``h1`` and ``h2``
    (the authors' ``compute_agreement_one_system_one_rater_pair``): degradation = r(h1, h2) - r(reference,
    system) (Williamson et al. 2012, as in section 4.1), so a negative value means the system agrees with the
    reference better than the two humans agree with each other."""
    a = ds.raters[:, ds.rater_index(h1)]
    b = ds.raters[:, ds.rater_index(h2)]
    hh = measures.pearson(a, b)
    out = []
    for ref_name, ref in (("h1", a), ("h1-h2 mean", (a + b) / 2)):
        r = measures.pearson(ref, system)
        out.append(
            {
                "reference": ref_name,
                "r": r,
                "QWK": measures.qwk(ref, system),
                "R2": measures.r2(ref, system),
                "degradation": measures.paper_degradation(hh, r),
            }
        )
    return out


def metric_stability(
    ds: PrmseDataset, progress: Callable[..., None] | None = None, map_fn: MapFn | None = None
) -> pd.DataFrame:
    """Section 4.1 / Figure 1 and section 5.2 / Figure 4: the sample system against each sampled pair of each
    rater category; one row per (pair, reference) with r, QWK, R2, degradation, and the pair's PRMSE (computed
    from both ratings; the same value on both rows of a pair). ``map_fn`` runs the categories
    (:mod:`core.simulate`)."""
    return _by_category(ds, _stability_rows, "4.1", progress, map_fn)


def _by_category(
    ds: PrmseDataset,
    rows_of: Callable[[PrmseDataset, str], list[dict[str, Any]]],
    step: str,
    progress: Callable[..., None] | None,
    map_fn: MapFn | None,
) -> pd.DataFrame:
    """The rows of ``rows_of(ds, category)`` for every rater category, run through ``map_fn`` in order;
    ``progress(f"{step}: {category}")`` as each category's rows arrive."""
    rows = []
    tasks = [(ds, cat) for cat in ds.settings.rater_categories]
    for cat, part in zip(ds.settings.rater_categories, (map_fn or serial_map)(rows_of, tasks)):
        rows += part
        if progress:
            progress(f"{step}: {cat}")
    return pd.DataFrame(rows)


def _stability_rows(ds: PrmseDataset, cat: str) -> list[dict[str, Any]]:
    """The rows of :func:`metric_stability` for one rater category."""
    system = ds.system_scores(ds.settings.sample_system)
    rows = []
    for h1, h2 in rater_pairs(ds, cat):
        ratings = ds.raters[:, [ds.rater_index(h1), ds.rater_index(h2)]]
        p = measures.prmse(system, ratings)
        for rec in agreement(ds, system, h1, h2):
            rows.append({"rater_category": cat, "h1": h1, "h2": h2, **rec, "PRMSE": p})
    return rows


def true_system_metrics(ds: PrmseDataset) -> dict[str, float]:
    """r, QWK and R2 of the sample system against the true scores (the red lines of Figures 3 and 4), computed as
    the authors do: ``metrics_helper(true, system)``, i.e. the true score in the human role."""
    system = ds.system_scores(ds.settings.sample_system)
    return {
        "r": measures.pearson(ds.true, system),
        "QWK": measures.qwk(ds.true, system),
        "R2": measures.r2(ds.true, system),
    }


def _ranks(values: pd.DataFrame) -> pd.DataFrame:
    """Rank systems per metric, best = 1, ties averaged (pandas ``rank(ascending=False)``); degradation is
    negated first, as in the authors' ``compute_ranks_from_metrics``."""
    v = values.copy()
    if "degradation" in v:
        v["degradation"] = -v["degradation"]
    return v.rank(ascending=False, method="average")


def ranking(ds: PrmseDataset) -> dict[str, pd.DataFrame]:
    """Section 4.2 / Figure 2 (and PRMSE's panel, section 5.2).

    Each system gets a different rater pair: all within-category pairs are pooled with the categories in
    alphabetical order (the order of the authors' pandas ``groupby``), and
    ``RandomState(pair_seed).choice(pool, n_systems, replace=False)`` assigns them to sys_1..sys_S in order.
    Metrics are computed against the pair mean, plus PRMSE from the pair. For comparison every system is also
    evaluated on one fixed pair of the ``same_pair_category``: positions
    ``RandomState(pair_seed).choice(n_raters, 2, replace=False)`` within that category (pandas
    ``Series.sample(n=2, random_state=seed)``).

    Returns ``{"metrics": per system metric values and ranks for both designs, "table3": system category x rater
    category counts, "same_pair": the fixed pair}``.
    """
    s = ds.settings
    pool = [pair for cat in sorted(s.rater_categories) for pair in itertools.combinations(ds.category_raters(cat), 2)]
    n_sys = len(ds.system_ids)
    pick = np.random.RandomState(s.pair_seed).choice(len(pool), size=n_sys, replace=n_sys > len(pool))
    assigned = [pool[i] for i in pick]
    same_ids = ds.category_raters(s.same_pair_category)
    pos = np.random.RandomState(s.pair_seed).choice(len(same_ids), size=2, replace=False)
    same = (same_ids[pos[0]], same_ids[pos[1]])
    cat_of = dict(zip(ds.rater_ids, ds.rater_category))
    names = ["r", "QWK", "R2", "degradation", "PRMSE"]
    diff_rows: list[dict[str, Any]] = []
    same_rows: list[dict[str, Any]] = []
    for sid, (h1, h2) in zip(ds.system_ids, assigned):
        system = ds.system_scores(sid)
        for rows, (a, b) in ((diff_rows, (h1, h2)), (same_rows, same)):
            rec = agreement(ds, system, a, b)[1]
            ratings = ds.raters[:, [ds.rater_index(a), ds.rater_index(b)]]
            rows.append({k: rec[k] for k in names[:4]} | {"PRMSE": measures.prmse(system, ratings)})
    diff = pd.DataFrame(diff_rows, columns=names)
    same_df = pd.DataFrame(same_rows, columns=names)
    true_r2 = [measures.r2(ds.true, ds.system_scores(sid)) for sid in ds.system_ids]
    out = pd.DataFrame(
        {
            "system_id": ds.system_ids,
            "system_category": ds.system_category,
            "h1": [p[0] for p in assigned],
            "h2": [p[1] for p in assigned],
            "rater_category": [cat_of[p[0]] for p in assigned],
            "R2_true": true_r2,
        }
    )
    out["true_rank"] = pd.Series(true_r2).rank(ascending=False, method="average").to_numpy()
    out = pd.concat(
        [
            out,
            diff.add_suffix("_value"),
            _ranks(diff).add_suffix("_rank"),
            same_df.add_suffix("_same_value"),
            _ranks(same_df).add_suffix("_same_rank"),
        ],
        axis=1,
    )
    table3 = pd.crosstab(out["system_category"], out["rater_category"]).reindex(
        index=list(s.system_categories), columns=list(s.rater_categories), fill_value=0
    )
    return {"metrics": out, "table3": table3, "same_pair": same}


def cumulative_raters(ds: PrmseDataset) -> pd.DataFrame:
    """Section 4.3 / Figure 3: the sample system against the cumulative mean of the first 1..K raters of each
    category (raters in id order, as the authors' ``expanding().mean()``), with r, R2, QWK, plus the Pearson r of
    the cumulative mean with the true score."""
    system = ds.system_scores(ds.settings.sample_system)
    rows = []
    for cat in ds.settings.rater_categories:
        cols = [ds.rater_index(r) for r in ds.category_raters(cat)]
        cum = np.cumsum(ds.raters[:, cols], axis=1) / np.arange(1, len(cols) + 1)
        for k in range(len(cols)):
            ref = cum[:, k]
            rows.append(
                {
                    "rater_category": cat,
                    "n_raters": k + 1,
                    "r": measures.pearson(ref, system),
                    "R2": measures.r2(ref, system),
                    "QWK": measures.qwk(ref, system),
                    "r_with_true": measures.pearson(ref, ds.true),
                }
            )
    return pd.DataFrame(rows)


def double_scored_rows(n_responses: int, percentage: float, seed: int) -> NDArray[Any]:
    """Boolean mask of the double-scored responses: ``RandomState(seed).choice(N, int(pct / 100 * N),
    replace=False)`` with a new generator each call (the authors' ``simulate_percent_double_scored``); every row
    at 100%."""
    if percentage >= 100:
        return np.ones(n_responses, dtype=bool)
    mask = np.zeros(n_responses, dtype=bool)
    k = int(percentage / 100 * n_responses)
    mask[np.random.RandomState(seed).choice(n_responses, size=k, replace=False)] = True
    return mask


def double_scoring(
    ds: PrmseDataset, progress: Callable[..., None] | None = None, map_fn: MapFn | None = None
) -> pd.DataFrame:
    """Section 5.3 / Figure 5 / Table 4: for every sampled pair and double-scored percentage, PRMSE of the sample
    system (a) on all N responses with only the chosen share double-scored (the second rater's other scores are
    missing) and (b) on the double-scored responses only. ``map_fn`` runs the categories
    (:mod:`core.simulate`)."""
    return _by_category(ds, _double_rows, "5.3", progress, map_fn)


def _double_rows(ds: PrmseDataset, cat: str) -> list[dict[str, Any]]:
    """The rows of :func:`double_scoring` for one rater category."""
    s = ds.settings
    system = ds.system_scores(s.sample_system)
    masks = {p: double_scored_rows(s.n_responses, p, s.double_scoring_seed) for p in s.double_scored_percentages}
    rows = []
    for h1, h2 in rater_pairs(ds, cat):
        pair = ds.raters[:, [ds.rater_index(h1), ds.rater_index(h2)]]
        for pct, mask in masks.items():
            ratings = pair.copy()
            ratings[~mask, 1] = np.nan
            rows.append(
                {
                    "rater_category": cat,
                    "h1": h1,
                    "h2": h2,
                    "percent_double_scored": pct,
                    "num_double_scored": int(mask.sum()),
                    "prmse_percent": measures.prmse(system, ratings),
                    "prmse_number": measures.prmse(system[mask], pair[mask]),
                }
            )
    return rows


def prmse_range_table(df: pd.DataFrame, categories: Sequence[str]) -> pd.DataFrame:
    """Table 4: range (max - min) of ``prmse_percent`` over the pairs, per percentage (rows) and rater category
    (columns), as the authors' ``describe()['max'] - ['min']``."""
    g = df.groupby(["percent_double_scored", "rater_category"])["prmse_percent"]
    rng = (g.max() - g.min()).unstack()
    return rng.reindex(columns=list(categories))
