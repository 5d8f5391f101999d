"""Replay real ratings through the real engine: which method reaches a target ranking with the fewest annotations,
on real annotators (``easl simulate replay``).

One run is (method, seed). Per item and seed, a random half of its ratings (``floor(n_i / 2)``) is held out and
their mean is the truth; the other ratings are the pool a campaign draws from, each at most once. The campaign is
the engine's: the method's model (:func:`core.models.get_model`) and its choice of HITs
(:func:`core.store.choosing.choose_hits`, the function a project uses), in batches of ``batch_hits`` HITs of
``hit_size`` items; the first batches cover every item once (a project's iteration 0). A HIT goes to one real
annotator who has a pool rating of every item in it (drawn at random among them), else each item goes to a random
unused rater of its own; the score is that annotator's real rating, with the real annotator id. Items whose pool is
spent are not chosen again. The budget is counted in scores per item, so every method spends the same.

Methods: any of :data:`core.models.METHODS` (``aware``, the paper's ``easl``, ``ra``, ``trueskill``, ``da``) and
``da-z`` (DA's HITs and scores with each annotator's scores z-scored, as WMT does; computed from the ``da`` run of
the seed, whose data it shares). Common random numbers: every method of a seed has the same split and draws its
annotators from one stream, so while two methods choose the same HITs they get the same ratings.

After an ``aware`` run the annotator diagnostics of the final fit (:mod:`core.models.aware.diagnostics`) are kept per
annotator, to compare the flags with each annotator's agreement over all their ratings
(:func:`core.simulate.replay_data.annotator_agreement`).

The truth is itself a mean of noisy ratings, so no method's curve reaches 1. How far the truth can be trusted is
its split-half reliability: the correlation of the whole pool's item means with the held-out truth, two disjoint
halves of each item's ratings (:func:`split_half`). It is not a ceiling: a model that corrects annotators
(``aware``, DA on z-scores) estimates the items better than the pool's raw means and its curve can pass it. Under
classical test theory an error-free estimate of the items would correlate about the square root of the
reliability with the truth (Spearman 1904, the correction for attenuation; Pearson's, with equal halves).

The tables (:func:`summarise`): each run's Spearman curve is put on the common grid of batch budgets (linear
interpolation; a run whose pool ran out stops there), the seeds are averaged (:func:`seed_mean`), and the budget is
the first crossing of the seed-mean curve (:func:`core.simulate.first_crossing`). The bootstrap resamples the seeds,
the same resample for the method and its reference (paired: a seed is one split and one stream of annotators).
Without targets, they are chosen from the curves (:func:`targets_from_curves`): a ladder below the best seed-mean
Spearman any method reached, so that every run says which method reaches what, at which budget.

:class:`ProjectReplay` answers a real project's HITs with the same split and draws (``easl demo``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from easl_toolkit.core.models import METHODS as ENGINE_METHODS
from easl_toolkit.core.models import ArraysLog, Change, Hyper, Scores, get_model
from easl_toolkit.core.selection import select_least_annotated
from easl_toolkit.core.simulate import MapFn, first_crossing, serial_map
from easl_toolkit.core.simulate.replay_data import Ratings, flag_table
from easl_toolkit.core.store.choosing import choose_hits

#: Methods of a replay: the engine's and DA with WMT z-scores.
METHODS = (*ENGINE_METHODS, "da-z")
#: The default comparison.
DEFAULT_METHODS = ("da", "da-z", "easl", "aware")
#: Bootstrap resamples of the seeds.
N_BOOT = 2000
#: Fewest seeds for which the replay prints a bootstrap interval without a warning: with fewer, the resamples of
#: the seeds repeat a handful of values and the interval is far too narrow.
MIN_SEEDS_FOR_INTERVAL = 5
#: Steps below the best seed-mean Spearman reached of the targets chosen from the data (:func:`targets_from_curves`).
TARGET_STEPS = (0.02, 0.05, 0.10)


def split(r: Ratings, seed: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """``(truth, pool)`` of a seed: ``truth[i]`` the mean of item ``i``'s held-out ratings (a random
    ``floor(n_i / 2)`` of them, unit scale); ``pool`` an ``(n_items, n_annotators)`` float32 matrix of the other
    ratings, NaN where an annotator has none (a pair rated twice keeps one of its pool ratings)."""
    rng = np.random.default_rng([seed, 3])
    order = np.lexsort((rng.random(r.size), r.item))
    counts = r.per_item()
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(r.size) - np.repeat(starts, counts)
    held = np.zeros(r.size, dtype=bool)
    held[order] = rank < np.repeat(counts // 2, counts)
    n_held = np.bincount(r.item[held], minlength=r.n_items)
    truth = np.bincount(r.item[held], r.score[held], r.n_items) / n_held
    pool = np.full((r.n_items, r.n_annotators), np.nan, dtype=np.float32)
    keep = ~held
    pool[r.item[keep], r.annotator[keep]] = r.score[keep]
    return truth, pool


def assign(
    hits: NDArray[Any] | list[NDArray[Any]], available: NDArray[Any], rng: np.random.Generator
) -> tuple[NDArray[Any], NDArray[Any]]:
    """``(items, annotators)`` of a batch of HITs (module docstring); marks the pairs used in ``available``. Items
    whose pool is spent are left out. ``hits`` are rows of item positions (an array, or a list of arrays). The loop is
    over the batch's HITs (a few dozen), each vectorised."""
    out_i, out_a = [], []
    for hit in hits:
        hit = hit[available[hit].any(axis=1)]
        if hit.size == 0:
            continue
        every = np.flatnonzero(available[hit].all(axis=0))
        if every.size:
            anns = np.full(hit.size, every[rng.integers(every.size)])
        else:
            keys = rng.random((hit.size, available.shape[1]))
            anns = np.where(available[hit], keys, -1.0).argmax(axis=1)
        available[hit, anns] = False
        out_i.append(hit)
        out_a.append(anns)
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i).astype(np.int64), np.concatenate(out_a).astype(np.int64)


def zscore(annotator: NDArray[Any], x: NDArray[Any], n_annotators: int) -> NDArray[Any]:
    """Each annotator's scores as z-scores (WMT's practice); an annotator with fewer than 2 scores or no spread
    uses the median standard deviation of the others."""
    n_a = np.bincount(annotator, minlength=n_annotators).astype(np.float64)
    mean = np.bincount(annotator, x, n_annotators) / np.maximum(n_a, 1)
    sd = np.sqrt(np.bincount(annotator, (x - mean[annotator]) ** 2, n_annotators) / np.maximum(n_a - 1, 1))
    ok = (n_a >= 2) & (sd > 1e-6)
    sd = np.where(ok, sd, np.median(sd[ok]) if ok.any() else 1.0)
    z: NDArray[Any] = (x - mean[annotator]) / sd[annotator]
    return z


def item_means(item_ix: NDArray[Any], x: NDArray[Any], n: int) -> NDArray[Any]:
    """Each item's mean score; the mean of all the (non-empty) ``x`` for an item without scores."""
    c = np.bincount(item_ix, minlength=n)
    m: NDArray[Any] = np.where(c > 0, np.bincount(item_ix, x, n) / np.maximum(c, 1), x.mean())
    return m


def seed_mean(mat: NDArray[Any], axis: int = 0) -> NDArray[Any]:
    """Mean of the finite values of ``mat`` along ``axis`` (the seeds); NaN where there is none (every seed's run
    ended before that budget, or its estimates were all equal), without numpy's empty-slice warning."""
    ok = np.isfinite(mat)
    n = ok.sum(axis=axis)
    total = np.where(ok, mat, 0.0).sum(axis=axis)
    out: NDArray[Any] = np.full(n.shape, np.nan)
    np.divide(total, n, out=out, where=n > 0)
    return out


def split_half(truth: NDArray[Any], pool: NDArray[Any]) -> dict[str, float]:
    """Split-half reliability of a seed's truth (module docstring): Spearman, Kendall and Pearson correlations of
    the pool's item means with the held-out truth (the two halves of each item's ratings)."""
    available = ~np.isnan(pool)
    means = np.where(available, pool, 0.0).sum(axis=1) / np.maximum(available.sum(axis=1), 1)
    rho, tau = correlations(means, truth)
    r = float(np.corrcoef(means, truth)[0, 1]) if np.ptp(means) > 0 and np.ptp(truth) > 0 else float("nan")
    return {"spearman": rho, "kendall": tau, "pearson": r}


def correlations(est: NDArray[Any], truth: NDArray[Any]) -> tuple[float, float]:
    """Spearman and Kendall (tau-b) of the estimates with the truth; NaN while the estimates are all equal (e.g.
    z-scores of annotators with one score each)."""
    if np.ptp(est) == 0:
        return float("nan"), float("nan")
    rho = float(stats.spearmanr(est, truth).statistic)
    tau = float(stats.kendalltau(est, truth).statistic)
    return rho, tau


def run_one(
    r: Ratings,
    method: str,
    seed: int,
    *,
    hit_size: int = 5,
    batch_hits: int = 15,
    max_per_item: float = 12.0,
) -> dict[str, Any]:
    """One campaign (module docstring).

    Returns
    -------
    dict
        ``rows``: a dict per batch (``method, seed, per_item, spearman, kendall``; for ``da`` also the ``da-z``
        rows); ``annotators``: for ``aware``, the final diagnostics (a ``pandas.DataFrame`` with ``annotator``, the
        flag and its figures), else None; ``reliability``: the seed's split-half reliability (:func:`split_half`).
    """
    engine = "da" if method == "da-z" else method
    hyper = Hyper(method=engine, hit_size=hit_size, seed=seed, score_min=0.0, score_max=1.0)
    model: Any = get_model(hyper)
    truth, pool = split(r, seed)
    available = ~np.isnan(pool)
    n, na = r.n_items, r.n_annotators
    reliability = {"seed": seed, **split_half(truth, pool)}
    assign_rng = np.random.default_rng([seed, 11])
    state = model.init_state(n)
    item_ix, ann, score = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    rows: list[dict[str, Any]] = []
    for k in range(max(1, round(max_per_item * n / (batch_hits * hit_size)))):
        spent = ~available.any(axis=1)
        if spent.all():
            break
        alloc_rng = np.random.default_rng([seed, 13, k])
        counts = np.bincount(item_ix, minlength=n)
        if counts.min() == 0:  # a project's iteration 0 covers every item once
            hits = select_least_annotated(counts, hit_size=hit_size, n_hits=batch_hits, rng=alloc_rng, exclude=spent)
        else:
            hits = choose_hits(model, state, n_hits=batch_hits, rng=alloc_rng, exclude=spent)
        items, anns = assign(hits, available, assign_rng)
        if items.size == 0:
            break
        x = pool[items, anns].astype(np.float64)
        item_ix, ann, score = np.concatenate([item_ix, items]), np.concatenate([ann, anns]), np.concatenate([score, x])
        groups = np.repeat(np.arange(len(hits)), hits.shape[1])[: items.size]
        change = Change(steps=[(1, Scores(items, x, groups))])
        state = model.update(state, change, ArraysLog(Scores(item_ix, score, None, ann), n)).state
        base = {"seed": seed, "per_item": item_ix.size / n}
        est = model.summary(state).estimate
        rho, tau = correlations(est, truth)
        rows.append({"method": engine, **base, "spearman": rho, "kendall": tau})
        if method == "da-z" or engine == "da":
            z = item_means(item_ix, zscore(ann, score, na), n)
            rho, tau = correlations(z, truth)
            rows.append({"method": "da-z", **base, "spearman": rho, "kendall": tau})
    if method == "da":
        rows = [row for row in rows if row["method"] == "da"] + [row for row in rows if row["method"] == "da-z"]
    elif method == "da-z":
        rows = [row for row in rows if row["method"] == "da-z"]
    annotators = None
    if engine == "aware" and item_ix.size:
        annotators = model.diagnostics(state, item_ix, ann, score).to_frame()
        annotators.insert(0, "annotator", np.arange(len(annotators)))
        annotators.insert(1, "seed", seed)
    return {
        "rows": rows,
        "annotators": annotators,
        "reliability": reliability,
    }


def run_task(r: Ratings, method: str, seed: int, run_kw: dict[str, Any]) -> dict[str, Any]:
    """:func:`run_one` as a picklable top-level function of a :data:`~core.simulate.MapFn` task."""
    return run_one(r, method, seed, **run_kw)


def run_replay(
    r: Ratings,
    *,
    methods: tuple[str, ...] = DEFAULT_METHODS,
    n_seeds: int = 20,
    first_seed: int = 0,
    targets: tuple[float, ...] | None = None,
    progress: Any = None,
    map_fn: MapFn = serial_map,
    **run_kw: Any,
) -> dict[str, Any]:
    """Every (method, seed) campaign, then :func:`summarise`.

    Parameters
    ----------
    r : Ratings
        The real ratings (:mod:`core.simulate.replay_data`).
    methods : tuple of str
        Among :data:`METHODS`; ``da`` is the reference of the savings (``da-z`` comes with ``da``'s runs).
    n_seeds, first_seed : int
        Seeds ``first_seed .. first_seed + n_seeds - 1``: each is one split and one stream of annotators.
    targets : tuple of float, optional
        Spearman correlations to reach; default chosen from the curves (:func:`targets_from_curves`).
    progress, map_fn :
        As in :mod:`core.simulate`; each (method, seed) campaign is one task of :func:`run_task`.
    **run_kw :
        :func:`run_one`'s settings (``hit_size``, ``batch_hits``, ``max_per_item``).

    Returns
    -------
    dict
        ``curves``, ``reliability`` (per seed, :func:`split_half`), ``annotators``, ``flags`` (frames) and the
        tables of :func:`summarise` (``budget``, ``mean_curves``, ``best``, ``targets``, ``targets_from_data``).
    """
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"unknown method {bad[0]!r}; choose from {', '.join(METHODS)}")
    runs = [m for m in dict.fromkeys("da" if m == "da-z" and "da" in methods else m for m in methods)]
    tasks = [(r, m, s, dict(run_kw)) for m in runs for s in range(first_seed, first_seed + n_seeds)]
    rows: list[dict[str, Any]] = []
    halves: dict[int, dict[str, Any]] = {}
    diags = []
    for done, out in enumerate(map_fn(run_task, tasks), start=1):
        rows += out["rows"]
        halves[out["reliability"]["seed"]] = out["reliability"]
        if out["annotators"] is not None:
            diags.append(out["annotators"])
        if progress is not None:
            progress(done, len(tasks))
    curves = pd.DataFrame(rows)
    curves = curves[curves["method"].isin(methods)].reset_index(drop=True)
    annotators = pd.concat(diags, ignore_index=True) if diags else pd.DataFrame()
    return {
        "curves": curves,
        "reliability": pd.DataFrame([halves[s] for s in sorted(halves)]),
        "annotators": annotators,
        "flags": flag_table(r, annotators),
        **summarise(
            curves, targets=targets, batch=run_kw.get("batch_hits", 15) * run_kw.get("hit_size", 5) / r.n_items
        ),
    }


def on_grid(curves: pd.DataFrame, value: str, grid: NDArray[Any]) -> dict[str, NDArray[Any]]:
    """Per method, a ``(n_seeds, grid.size)`` matrix of ``value`` interpolated on ``grid`` (NaN past a run's end);
    seeds in ascending order."""
    out: dict[str, NDArray[Any]] = {}
    for method, g in curves.groupby("method", sort=False):
        seeds = sorted(set(g["seed"]))
        mat = np.full((len(seeds), grid.size), np.nan)
        for k, (_, run) in enumerate(g.groupby("seed", sort=True)):
            x, y = run["per_item"].to_numpy(dtype=np.float64), run[value].to_numpy(dtype=np.float64)
            mat[k] = np.interp(grid, x, y, left=np.nan, right=np.nan)
        out[str(method)] = mat
    return out


def grid_of(curves: pd.DataFrame, batch: float) -> NDArray[Any]:
    """The common grid: multiples of the batch budget up to the largest budget of any run."""
    top = float(curves["per_item"].max()) if len(curves) else 0.0
    out: NDArray[Any] = batch * np.arange(1, int(np.floor(top / batch + 1e-9)) + 1)
    return out


def targets_from_curves(means: dict[str, NDArray[Any]]) -> tuple[float, ...]:
    """Targets chosen from the seed-mean Spearman curves ``means`` (per method): a ladder :data:`TARGET_STEPS` below
    the best any method reached, each rounded down to 0.01, so that the best method reaches every one; and, when DA
    reaches none of them, one just below DA's best (0.01 under it), so that a saving against DA is measured.
    Empty when no curve has a value.

    Examples
    --------
    >>> targets_from_curves({"da": np.array([0.5, 0.7, 0.75]), "aware": np.array([0.5, 0.78, 0.81])})
    (0.71, 0.76, 0.79)
    >>> targets_from_curves({"da": np.array([0.5, 0.6, 0.65]), "aware": np.array([0.5, 0.78, 0.81])})
    (0.64, 0.71, 0.76, 0.79)
    """
    best = {m: float(np.nanmax(y)) for m, y in means.items() if np.isfinite(y).any()}
    if not best:
        return ()
    top = max(best.values())
    ladder = {np.floor((top - step) * 100 + 1e-9) / 100 for step in TARGET_STEPS}
    if "da" in best and best["da"] < min(ladder):
        ladder.add(np.floor((best["da"] - 0.01) * 100 + 1e-9) / 100)
    return tuple(round(float(t), 2) for t in sorted(ladder) if 0.0 < t < 1.0)


def best_reached(grid: NDArray[Any], means: dict[str, NDArray[Any]]) -> pd.DataFrame:
    """Per method, the best seed-mean Spearman reached (``best``), the scores per item where it is first reached
    (``at``) and the largest budget of the curve (``budget``)."""
    rows = []
    for m, y in means.items():
        ok = np.isfinite(y)
        k = int(np.nanargmax(y)) if ok.any() else -1
        rows.append(
            {
                "method": m,
                "best": float(y[k]) if k >= 0 else np.nan,
                "at": float(grid[k]) if k >= 0 else np.nan,
                "budget": float(grid[ok][-1]) if ok.any() else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=["method", "best", "at", "budget"])


def _saving_columns(point: dict[str, float], draws: dict[str, NDArray[Any]], m: str) -> dict[str, float]:
    """The saving of method ``m`` against DA and DA z-scores: point, 95% bootstrap interval, share of resamples in
    which both reached the target."""
    row: dict[str, float] = {}
    for ref in ("da", "da-z"):
        if ref not in point or m == ref:
            continue
        if ref == "da":
            row["ratio_to_da"] = point[m] / point[ref]
        saved = 100.0 * (1.0 - draws[m] / draws[ref])
        lo, hi = np.percentile(saved[np.isfinite(saved)], [2.5, 97.5]) if np.isfinite(saved).any() else (np.nan,) * 2
        row[f"saved_vs_{ref}"] = 100.0 * (1.0 - point[m] / point[ref])
        row[f"saved_vs_{ref}_low"], row[f"saved_vs_{ref}_high"] = float(lo), float(hi)
        row[f"saved_vs_{ref}_reached"] = float(np.mean(np.isfinite(saved)))
    return row


def summarise(
    curves: pd.DataFrame,
    *,
    targets: tuple[float, ...] | None,
    batch: float,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """``budget``: per target and method, the scores per item to reach the target on the seed-mean Spearman curve
    (NaN: not reached within the budget), its ratio to DA's, and the % saved vs DA and vs DA with z-scores with
    95% paired bootstrap intervals over seeds; ``mean_curves``: the seed-mean Spearman and Kendall per budget;
    ``best``: :func:`best_reached`; ``targets``: the targets used, ``targets_from_data``: whether they were chosen
    from the curves (``targets`` None: :func:`targets_from_curves`)."""
    grid = grid_of(curves, batch)
    mats = on_grid(curves, "spearman", grid)
    kend = on_grid(curves, "kendall", grid)
    methods = list(mats)
    means = {m: seed_mean(mats[m]) for m in methods}
    chosen = targets is None
    targets = targets_from_curves(means) if targets is None else tuple(targets)
    n_seeds = min(m.shape[0] for m in mats.values()) if mats else 0
    rng = np.random.default_rng(seed)
    boot = rng.integers(n_seeds, size=(n_boot, n_seeds)) if n_seeds else np.zeros((0, 0), np.int64)
    boot_means = {m: seed_mean(mats[m][boot], axis=1) for m in methods}  # (n_boot, grid): seed means per resample
    rows = []
    for target in targets:
        point = {m: first_crossing(grid, means[m], target) for m in methods}
        draws = {m: np.array([first_crossing(grid, x, target) for x in boot_means[m]]) for m in methods}
        for m in methods:
            rows.append({"target": target, "method": m, "budget": point[m], **_saving_columns(point, draws, m)})
    mean_rows = [
        {"method": m, "per_item": x, "spearman": s, "kendall": k}
        for m in methods
        for x, s, k in zip(grid, means[m], seed_mean(kend[m]))
    ]
    budget = pd.DataFrame(rows, columns=["target", "method", "budget"] if not rows else None)
    first = [c for c in ("target", "method", "budget", "ratio_to_da") if c in budget.columns]
    budget = budget[first + [c for c in budget.columns if c not in first]]
    return {
        "budget": budget,
        "mean_curves": pd.DataFrame(mean_rows),
        "best": best_reached(grid, means),
        "targets": targets,
        "targets_from_data": chosen,
    }


class ProjectReplay:
    """The ratings of one split (:func:`split`) answering each HIT of :meth:`core.store.Project.next_hits` with real
    ratings from the pool (:func:`assign`) and the real annotator ids (``easl demo``). Should an item's pool run out
    (a project is never told which ratings exist), the item draws again from its whole pool; the demo's budget keeps
    well below that.

    Parameters
    ----------
    ratings : Ratings
        Real ratings whose items are the project's items (by id).
    item_ids : sequence of str
        The project's item ids, in its order.
    seed : int
        The split and the stream of annotators (two projects replayed with the same seed meet the same ratings
        while they ask for the same items).
    """

    def __init__(self, ratings: Ratings, item_ids: Any, seed: int) -> None:
        self.ratings = ratings
        self.truth, self.pool = split(ratings, seed)
        self.available = ~np.isnan(self.pool)
        self.rng = np.random.default_rng([seed, 11])
        positions = pd.Index(list(item_ids)).get_indexer(ratings.item_ids)
        if (positions < 0).any() or len(item_ids) != ratings.n_items:
            raise ValueError("the project's items must be the ratings' items")
        self.position = positions  # ratings code -> project position
        self.code = np.empty(ratings.n_items, dtype=np.int64)  # project position -> ratings code
        self.code[positions] = np.arange(ratings.n_items)
        self.item_ids = np.asarray(list(item_ids), dtype=object)
        self.index = pd.Index(self.item_ids)
        self.n_scores = 0

    def answer(self, hits: list[dict[str, Any]], score_range: tuple[float, float]) -> pd.DataFrame:
        """Rows to ingest for ``hits`` (records of :meth:`core.store.Project.next_hits`): ``hit_id, item_id, score,
        annotator``, the score on ``score_range``. HIT by HIT, so that an item in two HITs is answered in both."""
        hit_ids, item_codes, annotators = [], [], []
        for hit in hits:
            codes = self.code[self.index.get_indexer([it["item_id"] for it in hit["items"]])]
            spent = codes[~self.available[codes].any(axis=1)]
            self.available[spent] = ~np.isnan(self.pool[spent])  # its pool ran out: draw again from all of it
            items, anns = assign([codes], self.available, self.rng)
            hit_ids += [hit["hit_id"]] * items.size
            item_codes.append(items)
            annotators.append(anns)
        items = np.concatenate(item_codes) if item_codes else np.zeros(0, np.int64)
        anns = np.concatenate(annotators) if annotators else np.zeros(0, np.int64)
        lo, hi = score_range
        self.n_scores += items.size
        return pd.DataFrame(
            {
                "hit_id": hit_ids,
                "item_id": self.item_ids[self.position[items]],
                "score": lo + (hi - lo) * self.pool[items, anns].astype(np.float64),
                "annotator": self.ratings.annotator_ids[anns],
            }
        )

    def spearman(self, estimates: pd.DataFrame) -> float:
        """Spearman correlation of a project's estimates (``item_id, estimate``) with the held-out truth."""
        codes = self.code[self.index.get_indexer(estimates["item_id"])]
        return correlations(estimates["estimate"].to_numpy(dtype=np.float64), self.truth[codes])[0]
