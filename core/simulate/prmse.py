"""The PRMSE simulations of Loukina et al. (2020): the simulated dataset, made exactly as the authors' public
simulation code makes it, and the experiments on it.

Source: Loukina, Madnani, Cahill, Yao, Johnson, Riordan, McCaffrey (2020), "Using PRMSE to evaluate automated
scoring systems in the presence of label noise", BEA workshop, section 3; the protocol (generators, seeds,
rounding, clipping) is restated in ``docs/design.md``, section 6.1.

Randomness here deliberately uses numpy's legacy ``RandomState`` with the authors' fixed seeds (not the project's
``Generator`` convention): that is what makes the published Table 1 and Table 2 reproducible bit for bit. Every
seed is a field of :class:`PrmseSettings`, so a user can change it.

``RandomState(s).normal(0, sd, N)`` equals ``sd * RandomState(s).standard_normal(N)`` bit for bit (the legacy normal
is ``loc + scale * gauss``), so the error-sd search draws each rater's standard normals once and scales them by
every candidate sd.

Each experiment reproduces one analysis of the paper the way the authors' public notebooks do it
(github.com/EducationalTestingService/prmse-simulations; protocol in ``docs/design.md``, section 6.1) and
returns tidy DataFrames; :mod:`core.simulate.prmse_report` turns them into tables, figures and the report.
All metrics come from :mod:`core.metrics` (Pearson r, continuous QWK, R2, PRMSE); nothing is re-implemented here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.simulate import MapFn, measures, serial_map

if TYPE_CHECKING:
    from easl_toolkit.core.simulate.report import Comparison

RATER_CATEGORIES = ("low", "moderate", "average", "high")
SYSTEM_CATEGORIES = ("poor", "low", "medium", "high", "perfect")


@dataclass(frozen=True)
class PrmseSettings:
    """Every parameter of the simulated dataset and of the experiments; defaults are the authors' values.

    Attributes follow the authors' ``Dataset`` class and ``settings.json`` (prmse-simulations, MIT licence).
    ``search_seed_step``: category c (0-based) searches with seed ``(c + 1) * search_seed_step``; rater r of the
    search uses ``search_seed + r * search_rater_stride``. Final rater r of every category uses
    ``rater_seed + r * rater_stride``; system s of every category ``system_seed + s * system_stride``.
    ``error_sds``: skip the search and use these rater error sds (one per rater category).
    """

    n_responses: int = 10_000
    score_min: int = 1
    score_max: int = 6
    true_mean: float = 3.844
    true_sd: float = 0.74
    rater_categories: tuple[str, ...] = RATER_CATEGORIES
    rater_rhos: tuple[float, ...] = (0.40, 0.55, 0.65, 0.80)
    raters_per_category: int = 50
    system_categories: tuple[str, ...] = SYSTEM_CATEGORIES
    system_r2: tuple[float, ...] = (0.0, 0.4, 0.65, 0.8, 0.99)
    systems_per_category: int = 5
    sd_grid: tuple[float, float, float] = (0.01, 1.5, 0.01)
    error_sds: tuple[float, ...] | None = None
    true_seed: int = 12345
    search_seed_step: int = 100
    search_rater_stride: int = 25
    rater_seed: int = 34567
    rater_stride: int = 123
    system_seed: int = 67890
    system_stride: int = 456
    pair_seed: int = 1234567890
    pairs_per_category: int = 50
    double_scoring_seed: int = 987654321
    double_scored_percentages: tuple[float, ...] = (1, 2.5, 5, 10, 25, 50, 100)
    sample_system: str = "sys_17"
    same_pair_category: str = "average"

    def __post_init__(self) -> None:
        problems = []
        if self.n_responses < 10:
            problems.append(f"n_responses must be at least 10 (got {self.n_responses})")
        if self.score_max <= self.score_min:
            problems.append(f"score_max ({self.score_max}) must exceed score_min ({self.score_min})")
        if self.true_sd <= 0:
            problems.append(f"true_sd must be positive (got {self.true_sd})")
        if len(self.rater_rhos) != len(self.rater_categories) or not self.rater_categories:
            problems.append("give one target correlation per rater category")
        if self.error_sds is not None and len(self.error_sds) != len(self.rater_categories):
            problems.append("give one error sd per rater category")
        if len(self.system_r2) != len(self.system_categories) or not self.system_categories:
            problems.append("give one target R2 per system category")
        if any(not (0 <= r2 <= 1) for r2 in self.system_r2):
            problems.append("system R2 targets must lie in [0, 1]")
        if self.raters_per_category < 2:
            problems.append("raters_per_category must be at least 2 (pairs of raters are needed)")
        if self.systems_per_category < 1:
            problems.append("systems_per_category must be at least 1")
        n_pairs = self.raters_per_category * (self.raters_per_category - 1) // 2
        if not 1 <= self.pairs_per_category <= n_pairs:
            problems.append(
                f"pairs_per_category must be between 1 and {n_pairs} (the pairs of {self.raters_per_category} raters)"
            )
        if any(not (0 < p <= 100) for p in self.double_scored_percentages):
            problems.append("double-scored percentages must lie in (0, 100]")
        start, stop, step = self.sd_grid
        if not (0 < start < stop and step > 0):
            problems.append("sd_grid must be START STOP STEP with 0 < START < STOP and STEP > 0")
        if self.same_pair_category not in self.rater_categories:
            problems.append(f"same_pair_category {self.same_pair_category!r} is not a rater category")
        n_systems = len(self.system_categories) * self.systems_per_category
        if self.sample_system not in [f"sys_{s + 1}" for s in range(n_systems)]:
            problems.append(f"sample_system {self.sample_system!r} is not one of sys_1..sys_{n_systems}")
        if problems:
            raise EaslError("Invalid PRMSE simulation settings: " + "; ".join(problems) + ".")


@dataclass
class SdSearch:
    """The rater error-sd grid search of one category: the candidate sds, their mean inter-rater correlations
    and the chosen sd (the grid value whose mean correlation is closest to the target)."""

    category: str
    target: float
    grid: NDArray[Any]
    mean_correlation: NDArray[Any]
    chosen: float


@dataclass
class PrmseDataset:
    """True scores, rater scores and system scores of the simulation (responses in rows)."""

    settings: PrmseSettings
    true: NDArray[Any]  # (N,)
    raters: NDArray[Any]  # (N, R) integer-valued float64 scores
    rater_ids: list[str]
    rater_category: NDArray[Any]  # (R,) category label of each rater
    rater_error_sd: NDArray[Any]  # (R,)
    systems: NDArray[Any]  # (N, S) continuous scores
    system_ids: list[str]
    system_category: NDArray[Any]  # (S,)
    system_error_sd: NDArray[Any]  # (S,)
    searches: list[SdSearch] = field(default_factory=list)

    def rater_index(self, rater_id: str) -> int:
        """Column of ``rater_id`` in :attr:`raters`."""
        return self.rater_ids.index(rater_id)

    def system_scores(self, system_id: str) -> NDArray[Any]:
        """The scores of one system (a view of its column)."""
        return self.systems[:, self.system_ids.index(system_id)]

    def category_raters(self, category: str) -> list[str]:
        """Rater ids of one category in id order."""
        return [rid for rid, cat in zip(self.rater_ids, self.rater_category) if cat == category]

    def rater_metadata(self) -> pd.DataFrame:
        """rater_id, error_sd, rater_category, expected_rho (the authors' rater_metadata.csv)."""
        rho = dict(zip(self.settings.rater_categories, self.settings.rater_rhos))
        return pd.DataFrame(
            {
                "rater_id": self.rater_ids,
                "error_sd": self.rater_error_sd,
                "rater_category": self.rater_category,
                "expected_rho": [rho[c] for c in self.rater_category],
            }
        )

    def system_metadata(self) -> pd.DataFrame:
        """system_id, system_category, expected_r2_true, error_sd (the authors' system_metadata.csv + error sd)."""
        r2 = dict(zip(self.settings.system_categories, self.settings.system_r2))
        return pd.DataFrame(
            {
                "system_id": self.system_ids,
                "system_category": self.system_category,
                "expected_r2_true": [r2[c] for c in self.system_category],
                "error_sd": self.system_error_sd,
            }
        )


def human_scores(true: NDArray[Any], errors: NDArray[Any], score_min: float, score_max: float) -> NDArray[Any]:
    """Integer human scores from true scores plus errors: ``clip(round(true + error), min, max)``.

    Rounding is numpy's half-to-even, applied before clipping, as in the authors' ``_add_noise_to_true_scores``
    (Loukina et al. 2020, section 3: "rounded to integers and truncated to lie in [1, 6]").
    Broadcasts over any leading dimensions of ``errors``.
    """
    scores: NDArray[Any] = np.clip(np.round(true + errors), score_min, score_max)
    return scores


def true_scores(settings: PrmseSettings) -> NDArray[Any]:
    """True scores: ``RandomState(true_seed).normal(mean, sd, N)`` clipped (not resampled) to the score range."""
    rs = np.random.RandomState(settings.true_seed)
    drawn = rs.normal(settings.true_mean, settings.true_sd, settings.n_responses)
    clipped: NDArray[Any] = np.clip(drawn, settings.score_min, settings.score_max)
    return clipped


def _standard_normals(seeds: NDArray[Any], n: int) -> NDArray[Any]:
    """(len(seeds), n) legacy standard normals, row r from ``RandomState(seeds[r])``."""
    out = np.empty((len(seeds), n))
    for row, seed in enumerate(seeds):  # one generator per rater: inherent to the authors' seeding scheme
        out[row] = np.random.RandomState(int(seed)).standard_normal(n)
    return out


def mean_offdiagonal_correlation(scores: NDArray[Any]) -> NDArray[Any]:
    """Mean of the off-diagonal Pearson correlations between the rows of ``scores``, batched.

    ``scores``: (..., R, N), R raters of N responses. Returns (...,). A rater with constant scores has undefined
    correlations (NaN), which propagate (pandas' ``DataFrame.corr`` gives NaN there as well).
    """
    centred = scores - scores.mean(axis=-1, keepdims=True)
    gram = centred @ np.swapaxes(centred, -1, -2)
    norms = np.sqrt(np.diagonal(gram, axis1=-2, axis2=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = gram / (norms[..., :, None] * norms[..., None, :])
    r = scores.shape[-2]
    off = ~np.eye(r, dtype=bool)
    mean: NDArray[Any] = corr[..., off].mean(axis=-1)
    return mean


def search_error_sd(
    true: NDArray[Any], target: float, search_seed: int, settings: PrmseSettings, category: str = "", block: int = 8
) -> SdSearch:
    """Grid search for the rater error sd that gives a target mean inter-rater correlation.

    For every candidate sd in ``np.arange(*settings.sd_grid)``, simulate ``raters_per_category`` raters with
    seeds ``search_seed + r * search_rater_stride`` (scores :func:`human_scores`), take the mean of the
    off-diagonal entries of their Pearson correlation matrix, and choose the candidate whose mean correlation is
    closest to ``target`` (first on ties, as ``argmin``). Loukina et al. (2020) section 3; the authors'
    ``Dataset._find_best_error_sd_for_rho``. The chosen value is the grid's own float (e.g. 0.24000000000000002),
    which matters for bit-reproducibility. Candidates whose correlation is undefined are skipped.
    """
    grid = np.arange(*settings.sd_grid)
    seeds = search_seed + np.arange(settings.raters_per_category) * settings.search_rater_stride
    z = _standard_normals(seeds, len(true))
    means = np.empty(len(grid))
    for lo in range(0, len(grid), block):
        sds = grid[lo : lo + block]
        scores = human_scores(true, sds[:, None, None] * z, settings.score_min, settings.score_max)
        means[lo : lo + block] = mean_offdiagonal_correlation(scores)
    distance = np.abs(means - target)
    if np.all(np.isnan(distance)):
        raise EaslError(
            f"The error-sd search for rater category {category!r} found no candidate with a defined "
            "inter-rater correlation; widen sd_grid or the score range."
        )
    chosen = float(grid[int(np.nanargmin(distance))])
    return SdSearch(category=category, target=target, grid=grid, mean_correlation=means, chosen=chosen)


def generate_dataset(
    settings: PrmseSettings, progress: Callable[..., None] | None = None, map_fn: MapFn | None = None
) -> PrmseDataset:
    """Generate the whole simulated dataset (Loukina et al. 2020, section 3; protocol steps 1-4 of
    ``docs/design.md``, section 6.1).

    1. True scores (:func:`true_scores`).
    2. For each rater category c, the error sd from :func:`search_error_sd` with seed ``(c + 1) * 100``
       (unless ``settings.error_sds`` is given).
    3. Final raters: seed ``rater_seed + r * rater_stride`` in every category; ids h_1..h_R in category order.
    4. Systems: error sd ``sqrt(np.var(true) * (1 - R2))`` (ddof 0), seed ``system_seed + s * system_stride``,
       not rounded, not clipped; ids sys_1..sys_S.

    ``progress``: optional callable ``progress(step_description)`` called after each step. ``map_fn`` runs the
    searches of the categories (:mod:`core.simulate`; default here, in order).
    """
    s = settings
    true = true_scores(s)
    searches: list[SdSearch] = []
    if s.error_sds is None:
        tasks = [
            (true, rho, (c + 1) * s.search_seed_step, s, cat)
            for c, (cat, rho) in enumerate(zip(s.rater_categories, s.rater_rhos))
        ]
        for search in (map_fn or serial_map)(search_error_sd, tasks):
            searches.append(search)
            if progress:
                progress(f"error-sd search: {search.category}")
        error_sds = [x.chosen for x in searches]
    else:
        error_sds = list(s.error_sds)
    # every category's raters (systems) share the standard normals of the same seeds, scaled by its error sd
    n_r, n_s = s.raters_per_category, s.systems_per_category
    rater_sd = np.repeat(np.asarray(error_sds, dtype=np.float64), n_r)
    rater_z = _standard_normals(s.rater_seed + np.arange(n_r) * s.rater_stride, s.n_responses)
    raters = human_scores(true, rater_sd[:, None] * np.tile(rater_z, (len(error_sds), 1)), s.score_min, s.score_max)
    system_sd = np.repeat(np.sqrt(np.var(true) * (1 - np.asarray(s.system_r2, dtype=np.float64))), n_s)
    system_z = _standard_normals(s.system_seed + np.arange(n_s) * s.system_stride, s.n_responses)
    systems = true + system_sd[:, None] * np.tile(system_z, (len(s.system_r2), 1))
    if progress:
        progress("raters and systems")
    return PrmseDataset(
        settings=s,
        true=true,
        raters=raters.T.copy(),
        rater_ids=[f"h_{i + 1}" for i in range(rater_sd.size)],
        rater_category=np.repeat(np.array(s.rater_categories, dtype=object), n_r),
        rater_error_sd=rater_sd,
        systems=systems.T.copy(),
        system_ids=[f"sys_{i + 1}" for i in range(system_sd.size)],
        system_category=np.repeat(np.array(s.system_categories, dtype=object), n_s),
        system_error_sd=system_sd,
        searches=searches,
    )


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
