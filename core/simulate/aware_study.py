"""Simulation study of the annotator-aware model against DA, DA with WMT z-scores, and EASL.

One run is (truth, annotator model, method, seed). Items are scored in batches of ``batch_hits`` HITs of
``hit_size`` items, each HIT by one annotator drawn from a pool of ``n_annotators``; budgets are counted in
scores per item, so every method spends the same.

The annotator models (M1-M5, IX, DRIFT) and their world are :mod:`core.simulate.aware_world`. The tables of the
study (:func:`summarise`): the budget to reach the target Spearman (the first crossing of the seed-mean curve,
:func:`core.simulate.first_crossing`, linear between checkpoints) and the % saved vs DA and DA-z with
paired bootstrap intervals over seeds, the coverage of the rank intervals, the stopping rule's hit rate, and the
random-clicker flags.

Methods: ``da`` (least-annotated first, item means), ``da-z`` (the same HITs and scores, each annotator's scores
z-scored first, as WMT does), ``easl`` (the product's EASL model and Algorithm 1, :mod:`core.models.easl`,
:func:`core.selection.select_hits`; uncovered items first), ``aware`` (:mod:`core.models.aware.fit`: its uniform passes
are DA's batches, :func:`core.selection.select_least_annotated`, then
:func:`~core.models.aware.alloc.select_batch`).

Common random numbers: the methods of one seed share the annotators (the world), the stream that draws each HIT's
annotator and each score, and the stream of the allocation's random choices. While two methods choose the same HITs
they see the same annotators and scores: DA and ``aware`` have identical data through the uniform passes, and
``da-z`` is DA's data z-scored, so the comparison is paired.

The report of ``easl simulate easl --annotator-model ...`` (:func:`write_report`): CSV tables, PNG figures and a
Markdown report. Where ``aware`` saves nothing the report says so, from the intervals.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from easl_toolkit.core.models import Hyper, get_model
from easl_toolkit.core.models.aware.alloc import UNIFORM_PASSES, select_batch
from easl_toolkit.core.models.aware.clickers import INFORMATIVE_KEY, informative_arrays, informative_state
from easl_toolkit.core.models.aware.diagnostics import annotator_diagnostics
from easl_toolkit.core.models.aware.fit import AwareState, Observations, fit
from easl_toolkit.core.models.aware.posterior import rank_figures, stops
from easl_toolkit.core.selection import HitRequest, select_hits, select_least_annotated
from easl_toolkit.core.simulate import MapFn, first_crossing, serial_map
from easl_toolkit.core.simulate.aware_world import ANNOTATOR_MODELS, World, beta_oracle, load_oracle
from easl_toolkit.core.simulate.paired_budgets import MIN_PER_ITEM, report_section
from easl_toolkit.core.simulate.replay import item_means, zscore
from easl_toolkit.core.simulate.report import PALETTE, Report, new_figure

METHODS = ("da", "da-z", "easl", "aware")


@dataclass(frozen=True)
class RunSettings:
    """How one campaign of :func:`run_one` runs.

    Attributes
    ----------
    n_annotators, hit_size, batch_hits : int
        The pool of annotators; items per HIT; HITs per batch.
    max_per_item : float
        The budget in scores per item.
    eval_at : tuple of float
        Budgets (scores per item) where the coverage of the rank intervals is measured.
    n_draws : int
        Posterior draws of the expected Spearman (:func:`core.models.aware.posterior.rank_figures`).
    uniform_passes : int
        ``aware``: DA's batches before its own allocation.
    clicker_items, clicker_rate : float
        Random clickers concentrated on a share of the items, and the probability a clicker scores them
        (:func:`run_one`; 0: spread as the annotator model spreads them).
    """

    n_annotators: int = 20
    hit_size: int = 5
    batch_hits: int = 15
    max_per_item: float = 12.0
    eval_at: tuple[float, ...] = (5.0, 10.0)
    n_draws: int = 200
    uniform_passes: int = UNIFORM_PASSES
    clicker_items: float = 0.0
    clicker_rate: float = 1.0


@dataclass(frozen=True)
class Truth:
    """Where the truth of a study comes from: a CSV (:func:`~core.simulate.aware_world.load_oracle`, column
    ``column``) at ``path``, or by default the generated Beta(2,2) oracle
    (:func:`~core.simulate.aware_world.beta_oracle`) of ``n_items`` items."""

    path: str | Path | None = None
    column: str = "label"
    n_items: int = 150

    def values(self) -> NDArray[Any]:
        """The true value of every item."""
        return load_oracle(self.path, self.column) if self.path is not None else beta_oracle(self.n_items)


@dataclass(frozen=True)
class StudyDesign:
    """The runs of :func:`run_study`: every (model, method, seed) of ``models`` (subset of
    :data:`~core.simulate.aware_world.ANNOTATOR_MODELS`), ``methods`` (of :data:`METHODS`; ``"da"`` is needed for
    the savings) and the seeds ``first_seed .. first_seed + n_seeds - 1`` (the study's reports use >= 20), on the
    ``truth``; ``target``: the Spearman correlation to reach (0.90 on the generated Beta(2,2) oracle; 0.95 on the
    paper's)."""

    models: tuple[str, ...] = ANNOTATOR_MODELS
    methods: tuple[str, ...] = METHODS
    n_seeds: int = 20
    first_seed: int = 0
    target: float = 0.9
    truth: Truth = Truth()


@dataclass(frozen=True)
class Calibration:
    """The grid of :func:`calibrate_stopping`: ``aware`` runs of every model of ``models`` on the calibration seeds
    ``first_seed .. first_seed + n_seeds - 1`` (apart from the study's), and the stopping rules tried: every
    (target, relative margin, fewest scores per item) of ``targets``, ``relative_margins`` and ``min_scores``."""

    models: tuple[str, ...] = ANNOTATOR_MODELS
    n_seeds: int = 20
    first_seed: int = 1000
    targets: tuple[float, ...] = (0.9, 0.95)
    relative_margins: tuple[float, ...] = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
    min_scores: tuple[int, ...] = (2, 3, 4)
    truth: Truth = Truth()


@dataclass(frozen=True)
class StudyRun:
    """What :func:`write_report` says of the run: the ``target``, a description of the ``oracle``, the seeds run,
    and the run time in seconds (None: not said)."""

    target: float
    oracle: str
    n_seeds: int
    runtime: float | None = None


def run_one(
    truth: NDArray[Any], model: str, method: str, seed: int, settings: RunSettings = RunSettings()
) -> list[dict[str, Any]]:
    """One campaign (:class:`RunSettings`); a row per batch: budget (scores per item), Spearman, Kendall, and for
    ``aware`` the expected Spearman the stopping rule uses (``expected_spearman``, the truth drawn without the likely
    clickers' share, :func:`core.models.aware.clickers.informative_state`) and the one drawn from the fit alone
    (``expected_spearman_fit``, the rule before it knew of clickers), the fewest scores and informative scores of any
    item (``min_count``, ``min_informative``), and at ``eval_at`` the rank-interval coverage; at the end, for
    ``aware``, the ``random`` flags among annotators with >= 30 scores (random clickers flagged, honest annotators
    flagged) and the honest annotators flagged ``noisy``.

    ``clicker_items`` > 0 concentrates the random clickers (an annotator model with them, ``M4``): that share of
    the items (chosen per seed) is scored by clickers and the others by faithful annotators only: each HIT's items of
    either kind go to one annotator of that kind, those of the clickers' share to a clicker with probability
    ``clicker_rate`` (else to another faithful annotator; 1: clickers only)."""
    n_annotators, hit_size, batch_hits = settings.n_annotators, settings.hit_size, settings.batch_hits
    uniform_passes = settings.uniform_passes
    n = truth.size
    world = World.make(model, n, n_annotators, np.random.default_rng([seed, 7]))
    only_clickers = _clicker_share(world, model, n, seed, settings.clicker_items)
    score_rng, alloc_rng = np.random.default_rng([seed, 11]), np.random.default_rng([seed, 13])  # module docstring
    t_lo, t_hi = stats.rankdata(truth, "min") - 1, stats.rankdata(truth, "max") - 1
    n_steps = round(settings.max_per_item * n / (batch_hits * hit_size))
    item_ix, A, X = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    easl = get_model(Hyper(hit_size=hit_size)) if method == "easl" else None
    easl_state = easl.init_state(n) if easl else None
    state: AwareState | None = None
    obs: Observations | None = None
    rows = []
    for k in range(n_steps):
        counts = np.bincount(item_ix, minlength=n)
        if method == "aware" and state is not None and state.count.min() >= uniform_passes:
            hits = select_batch(
                state, n_hits=batch_hits, hit_size=hit_size, rng=alloc_rng, uniform_passes=uniform_passes
            )
        elif easl is not None and easl_state is not None and counts.min() > 0:
            loc, var = easl.selection_keys(easl_state)
            hits = select_hits(loc, var, HitRequest(hit_size=hit_size, n_hits=batch_hits, gamma=0.1), alloc_rng)
        else:
            hits = select_least_annotated(counts, hit_size=hit_size, n_hits=batch_hits, rng=alloc_rng)
        items = hits.ravel()
        anns = _annotators(hits, world, only_clickers, settings.clicker_rate, score_rng)
        x = world.scores(truth, items, anns, k / max(n_steps - 1, 1), score_rng)
        item_ix, A, X = np.concatenate([item_ix, items]), np.concatenate([A, anns]), np.concatenate([X, x])
        row: dict[str, Any] = {"model": model, "method": method, "seed": seed, "per_item": X.size / n}
        if method == "aware":
            obs = (
                Observations.build(items, anns, x, n_items=n, n_annotators=n_annotators)
                if obs is None
                else obs.extend(items, anns, x)
            )
            state = fit(obs, warm=state)
            est = state.mu
        elif easl is not None and easl_state is not None:
            easl.apply(easl_state, items, x, np.repeat(np.arange(hits.shape[0]), hits.shape[1]))
            est = easl.summary(easl_state).estimate
        else:
            est = item_means(item_ix, zscore(A, X, n_annotators) if method == "da-z" else X, n)
        row["spearman"] = float(np.corrcoef(stats.rankdata(est), stats.rankdata(truth))[0, 1])
        row["kendall"] = float(stats.kendalltau(est, truth).statistic)
        if state is not None and obs is not None:
            at_eval = any(abs(row["per_item"] - e) < 1e-9 for e in settings.eval_at)
            row |= _stopping_figures(state, obs, [seed, k, 99], settings.n_draws, (t_lo, t_hi) if at_eval else None)
        rows.append(row)
    if state is not None and obs is not None and world.spam.any():
        rows[-1] |= _flag_counts(state, obs, world.spam)
    return rows


def _clicker_share(world: World, model: str, n: int, seed: int, clicker_items: float) -> NDArray[Any]:
    """The items scored by random clickers only (``clicker_items`` of them, chosen per seed; none when 0)."""
    only_clickers = np.zeros(n, dtype=bool)
    if clicker_items > 0:
        if not world.spam.any():
            raise ValueError(f"clicker_items needs an annotator model with random clickers (M4), not {model}")
        only_clickers[np.random.default_rng([seed, 17]).permutation(n)[: round(clicker_items * n)]] = True
    return only_clickers


def _annotators(
    hits: NDArray[Any], world: World, only_clickers: NDArray[Any], clicker_rate: float, rng: np.random.Generator
) -> NDArray[Any]:
    """The annotator of each score of ``hits``: one per HIT, drawn from the pool; with items scored by clickers
    only, one faithful annotator and one clicker per HIT (the clicker with probability ``clicker_rate``, else another
    faithful annotator), each scoring their kind of item."""
    n_hits, size = hits.shape
    if not only_clickers.any():
        out: NDArray[Any] = np.repeat(rng.integers(world.spam.size, size=n_hits), size)
        return out
    honest, clickers = np.flatnonzero(~world.spam), np.flatnonzero(world.spam)
    h = np.repeat(honest[rng.integers(honest.size, size=n_hits)], size)
    c = clickers[rng.integers(clickers.size, size=n_hits)]
    if clicker_rate < 1.0:
        other = honest[rng.integers(honest.size, size=n_hits)]
        c = np.where(rng.random(n_hits) < clicker_rate, c, other)
    out = np.where(only_clickers[hits.ravel()], np.repeat(c, size), h)
    return out


def _stopping_figures(
    state: AwareState, obs: Observations, key: list[int], n_draws: int, truth_ranks: tuple[Any, Any] | None
) -> dict[str, Any]:
    """What the stopping rule of an ``aware`` run sees after a batch (:func:`run_one`); with ``truth_ranks`` (the
    lowest and highest true rank of each item) also the coverage of the 95% rank intervals."""
    informative = informative_arrays(state, obs)
    figs = rank_figures(
        state, np.random.default_rng(key), n_draws=n_draws, draws_from=informative_state(state, informative)
    )
    out = {
        "expected_spearman": figs.expected_spearman,
        # the same draws: equal figures when no score is doubted
        "expected_spearman_fit": rank_figures(state, np.random.default_rng(key), n_draws=n_draws).expected_spearman,
        "min_count": int(state.count.min()),
        "min_informative": float(informative[INFORMATIVE_KEY].min()),
    }
    if truth_ranks is not None:
        t_lo, t_hi = truth_ranks
        out["rank_coverage"] = float(np.mean((figs.rank_low <= t_hi) & (figs.rank_high >= t_lo)))
    return out


def _flag_counts(state: AwareState, obs: Observations, spam: NDArray[Any]) -> dict[str, int]:
    """The ``random`` flags of the final fit among annotators with >= 30 scores: random clickers flagged, honest
    annotators flagged (recall and false flags count ``random`` only), and honest annotators flagged ``noisy`` (a soft
    flag, counted apart)."""
    flag = annotator_diagnostics(state, obs).flag
    eligible = state.n_scores >= 30
    return {
        "spam_flagged": int(((flag == "random") & spam & eligible).sum()),
        "spam_total": int((spam & eligible).sum()),
        "false_flags": int(((flag == "random") & ~spam & eligible).sum()),
        "honest_noisy": int(((flag == "noisy") & ~spam & eligible).sum()),
        "honest_total": int((~spam & eligible).sum()),
    }


def run_task(truth: NDArray[Any], model: str, method: str, seed: int, settings: RunSettings) -> list[dict[str, Any]]:
    """:func:`run_one` as a picklable top-level function of a :data:`MapFn` task."""
    return run_one(truth, model, method, seed, settings)


def run_study(
    design: StudyDesign = StudyDesign(),
    settings: RunSettings = RunSettings(),
    *,
    progress: Any = None,
    map_fn: MapFn = serial_map,
) -> dict[str, Any]:
    """The whole study: every (model, method, seed) run of ``design`` (:class:`StudyDesign`), each as ``settings``
    say (:class:`RunSettings`), then :func:`summarise`.

    ``progress`` and ``map_fn`` are as in :mod:`core.simulate`; each (model, method, seed) run is one task of
    :func:`run_task`.

    Returns
    -------
    dict of pandas.DataFrame
        ``curves`` (every batch of every run) and the tables of :func:`summarise`.
    """
    truth = design.truth.values()
    seeds = range(design.first_seed, design.first_seed + design.n_seeds)
    tasks = [
        (truth, model, method, seed, settings) for model in design.models for method in design.methods for seed in seeds
    ]
    rows: list[dict[str, Any]] = []
    for done, run_rows in enumerate(map_fn(run_task, tasks), start=1):
        rows += run_rows
        if progress is not None:
            progress(done, len(tasks))
    curves = pd.DataFrame(rows)
    return {"curves": curves, **summarise(curves, target=design.target)}


def calibrate_stopping(
    calibration: Calibration = Calibration(), settings: RunSettings = RunSettings(), *, map_fn: MapFn = serial_map
) -> Any:
    """Hit rate of the stopping rule for each (target, relative margin ``k``, fewest scores per item) of
    ``calibration`` (:class:`Calibration`) on calibration seeds apart from the study's: per model, the share of
    ``aware`` runs whose true Spearman is >= the target where the rule first stops, and the mean scores per item
    there. The defaults :data:`~core.models.aware.posterior.STOP_RELATIVE_MARGIN` and
    :data:`~core.models.aware.posterior.STOP_MIN_SCORES` are the smallest whose worst model is >= 0.9 at every target
    (with a step of room for the seed noise). Each (model, seed) run is one :func:`run_task` through ``map_fn`` (as
    in :func:`run_study`)."""
    c = calibration
    truth = c.truth.values()
    seeds = range(c.first_seed, c.first_seed + c.n_seeds)
    tasks = [(truth, m, "aware", s, settings) for m in c.models for s in seeds]
    runs = [pd.DataFrame(rows) for rows in map_fn(run_task, tasks)]
    out = []
    for target, k, ms, model in itertools.product(c.targets, c.relative_margins, c.min_scores, c.models):
        found = (
            first_stop(r, target=target, relative_margin=k, min_scores=ms) for r in runs if r["model"].iloc[0] == model
        )
        figures = _at_stops(found, target)
        out.append({"target": target, "relative_margin": k, "min_scores": ms, "model": model, "runs": c.n_seeds})
        out[-1] |= {name: figures[name] for name in ("stopped", "hit_rate", "per_item_at_stop")}
    return pd.DataFrame(out)


def clicker_stopping(
    *,
    settings: tuple[tuple[str, float, float], ...] = (("M4", 0.2, 1.0), ("M4", 0.2, 0.7), ("M4", 0.3, 0.5)),
    seeds: range = range(1000, 1020),
    target: float = 0.9,
    run: RunSettings = RunSettings(),
    map_fn: MapFn = serial_map,
) -> Any:
    """The stopping rule before and after it doubted random clickers (:func:`stopping_before_after`), on ``aware``
    runs of each (annotator model, share of the items scored by clickers, probability that a clicker scores them:
    :class:`RunSettings`'s ``clicker_items`` and ``clicker_rate``) in ``settings`` (share 0: the ordinary study), on
    calibration ``seeds`` apart from the study's, each run otherwise as ``run`` says, on the generated oracle; each
    (setting, seed) run is one :func:`run_task` through ``map_fn``.

    Returns
    -------
    pandas.DataFrame
        Per setting (``"M4 clickers on 20% (rate 0.7)"``, ``"M1"``, ...) and rule: runs, stopped, hit rate and its 95%
        interval, scores per item and true Spearman at the stop.
    """
    truth = beta_oracle()
    tasks = [
        (truth, model, "aware", s, dataclasses.replace(run, clicker_items=share, clicker_rate=rate))
        for model, share, rate in settings
        for s in seeds
    ]
    names = [
        f"{m} clickers on {share:.0%} (rate {rate:g})" if share else m for m, share, rate in settings for _ in seeds
    ]
    runs = pd.concat([pd.DataFrame(rows).assign(setting=name) for name, rows in zip(names, map_fn(run_task, tasks))])
    return stopping_before_after(runs, target=target)


def wilson_interval(hits: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``hits / n`` (95% by default; Wilson 1927, JASA 22).

    Examples
    --------
    >>> [round(x, 3) for x in wilson_interval(19, 20)]
    [0.764, 0.991]
    """
    if n == 0:
        return float("nan"), float("nan")
    p = hits / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(mid - half), float(mid + half)


def first_stop(
    run: Any, *, target: float, rho: str = "expected_spearman", fewest: str | None = "min_informative", **rule: Any
) -> Any:
    """The row of one ``aware`` run (per-batch rows of :func:`run_one`) where the stopping rule
    (:func:`core.models.aware.posterior.stops`, options ``rule``) first stops, judged on the expected Spearman ``rho``
    and the fewest informative scores ``fewest`` (None: the raw counts only); None if it never stops."""
    ok = np.asarray(
        stops(run[rho], run["min_count"], target=target, min_informative=run.get(fewest) if fewest else None, **rule)
    )
    return run.iloc[int(np.flatnonzero(ok)[0])] if ok.any() else None


def stopping_before_after(runs: Any, *, target: float) -> Any:
    """The stopping rule before and after it doubted random clickers, from the same runs (per-batch rows of
    :func:`run_one` for ``aware``, a ``pandas.DataFrame`` with a ``setting`` column): per setting and rule,
    :func:`_at_stops` and the runs. ``before``: ``expected_spearman_fit`` and the raw counts; ``after``:
    ``expected_spearman`` and the informative counts."""
    out = []
    for setting, g in runs.groupby("setting", sort=False):
        for rule, rho, fewest in (
            ("before", "expected_spearman_fit", None),
            ("after", "expected_spearman", "min_informative"),
        ):
            found = (first_stop(run, target=target, rho=rho, fewest=fewest) for _, run in g.groupby("seed"))
            out.append({"setting": setting, "rule": rule, "runs": g["seed"].nunique(), **_at_stops(found, target)})
    return pd.DataFrame(out)


def _at_stops(found: Any, target: float) -> dict[str, Any]:
    """Of the rows where runs first stopped (:func:`first_stop`; None: a run that never stopped): how many, the
    share whose true Spearman reached ``target`` with its 95% Wilson interval, and the mean scores per item and true
    Spearman there."""
    at_stop = [row for row in found if row is not None]
    hits = sum(bool(r["spearman"] >= target) for r in at_stop)
    low, high = wilson_interval(hits, len(at_stop))
    mean = {c: float(np.mean([r[c] for r in at_stop])) if at_stop else np.nan for c in ("per_item", "spearman")}
    return {
        "stopped": len(at_stop),
        "hit_rate": hits / len(at_stop) if at_stop else np.nan,
        "hit_rate_low": low,
        "hit_rate_high": high,
        "per_item_at_stop": mean["per_item"],
        "spearman_at_stop": mean["spearman"],
    }


def summarise(curves: Any, *, target: float, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Tables from the per-batch rows of :func:`run_one` (a ``pandas.DataFrame``): ``budget`` (per model and
    method: scores per item to reach ``target`` on the seed-mean Spearman curve, % saved vs DA and vs DA-z with 95%
    bootstrap intervals over seeds, paired), ``coverage``, ``stopping``, ``flags``
    (``recall``: random clickers flagged ``random``; ``false_flag_rate``: honest annotators flagged ``random``;
    ``noisy_rate``: honest annotators flagged ``noisy``, a soft flag; among annotators with >= 30 scores)."""
    rng = np.random.default_rng(seed)
    budget_rows, cov_rows, stop_rows = [], [], []
    for model, g in curves.groupby("model", sort=False):
        budget_rows += _budget_rows(model, g, target, rng, n_boot)
        a = g[g["method"] == "aware"]
        if "rank_coverage" in a:
            for e, c in a.dropna(subset=["rank_coverage"]).groupby("per_item")["rank_coverage"]:
                cov_rows.append({"model": model, "per_item": e, "rank_coverage": float(c.mean())})
        if "expected_spearman" in a:
            stop_rows += [_stop_row(model, run, target) for _, run in a.groupby("seed")]
    return {
        "budget": pd.DataFrame(budget_rows),
        "coverage": pd.DataFrame(cov_rows),
        "stopping": _stopping_table(pd.DataFrame(stop_rows), target),
        "flags": _flags_table(curves),
    }


def _budget_rows(model: str, g: Any, target: float, rng: np.random.Generator, n_boot: int) -> list[dict[str, Any]]:
    """Per method of one annotator model: the budget to reach ``target`` and the % saved vs DA and DA-z, with
    ``n_boot`` bootstrap resamples of the seeds (the same for every method: paired)."""
    piv = g.pivot_table(index=["method", "seed"], columns="per_item", values="spearman")
    methods = list(dict.fromkeys(g["method"]))
    seeds = np.array(sorted(set(g["seed"])))
    grid = piv.columns.to_numpy(dtype=np.float64)
    mats = {m: piv.loc[m].reindex(seeds).to_numpy() for m in methods}
    boot = rng.integers(seeds.size, size=(n_boot, seeds.size))
    b_point = {m: first_crossing(grid, mats[m].mean(0), target) for m in methods}
    b_boot = {m: np.array([first_crossing(grid, mats[m][ix].mean(0), target) for ix in boot]) for m in methods}
    rows = []
    for m in methods:
        row = {"model": model, "method": m, "budget": b_point[m]}
        for ref in ("da", "da-z"):
            if ref in methods and m != ref:
                saved = 1.0 - b_boot[m] / b_boot[ref]
                row[f"saved_vs_{ref}"] = 100.0 * (1.0 - b_point[m] / b_point[ref])
                lo, hi = np.nanpercentile(saved, [2.5, 97.5]) if np.isfinite(saved).any() else (np.nan, np.nan)
                row[f"saved_vs_{ref}_ci"] = f"[{100 * lo:+.0f}, {100 * hi:+.0f}]"
        rows.append(row)
    return rows


def _stop_row(model: str, run: Any, target: float) -> dict[str, Any]:
    """Where the stopping rule first stops one ``aware`` run (if it does)."""
    row = first_stop(run, target=target)
    return {
        "model": model,
        "stopped": row is not None,
        "per_item_at_stop": float(row["per_item"]) if row is not None else np.nan,
        "spearman_at_stop": float(row["spearman"]) if row is not None else np.nan,
    }


def _stopping_table(stop: Any, target: float) -> Any:
    """Per model: runs, runs stopped, the share of them whose true Spearman reached ``target``, budget at the stop."""
    if stop.empty:
        return pd.DataFrame()
    return (
        stop.assign(hit=(stop["spearman_at_stop"] >= target).where(stop["stopped"].astype(bool)))
        .groupby("model", sort=False)
        .agg(
            runs=("stopped", "size"),
            stopped=("stopped", "sum"),
            hit_rate=("hit", "mean"),
            per_item_at_stop=("per_item_at_stop", "mean"),
        )
        .reset_index()
    )


def _flags_table(curves: Any) -> Any:
    """Recall, false-flag rate and noisy rate of the annotator flags over every run that counted them."""
    if "spam_total" not in curves:
        return pd.DataFrame()
    f = curves.dropna(subset=["spam_total"])
    honest = max(f["honest_total"].sum(), 1)
    row = {
        "runs": len(f),
        "recall": f["spam_flagged"].sum() / max(f["spam_total"].sum(), 1),
        "false_flag_rate": f["false_flags"].sum() / honest,
    }
    if "honest_noisy" in f:
        row["noisy_rate"] = f["honest_noisy"].sum() / honest
    return pd.DataFrame([row])


METHOD_LABELS = {"da": "DA", "da-z": "DA (z-scores)", "easl": "EASL", "aware": "aware"}


def no_gain_models(budget: pd.DataFrame, method: str = "aware") -> list[str]:
    """Annotator models where ``method`` is not better than DA beyond the seed noise: the lower end of the 95%
    bootstrap interval of the % saved vs DA is at or below 0 (or the target was never reached)."""
    out = []
    for row in budget[budget["method"] == method].itertuples():
        text = getattr(row, "saved_vs_da_ci", None)  # "[-18, +13]"; missing when DA never reached the target
        lo = float(text.strip("[]").split(",")[0]) if isinstance(text, str) and text.startswith("[") else np.nan
        if not np.isfinite(lo) or lo <= 0:
            out.append(str(row.model))
    return out


def curve_figure(curves: pd.DataFrame, value: str, target: float, title: str) -> Any:
    """One panel per annotator model: ``value`` (mean over seeds) against scores per item, a line per method."""
    models = list(dict.fromkeys(curves["model"]))
    fig, axes = new_figure(len(models), width=3.2, height=2.9, rows=1 if len(models) <= 4 else 2, title=title)
    for ax, model in zip(axes, models):
        g = curves[curves["model"] == model]
        for k, method in enumerate(dict.fromkeys(g["method"])):
            m = g[g["method"] == method].groupby("per_item")[value].mean()
            label = METHOD_LABELS.get(method, method)
            ax.plot(m.index, m.to_numpy(), color=PALETTE[k % len(PALETTE)], label=label)
        if value == "spearman":
            ax.axhline(target, color="grey", lw=0.8, ls="--")
        ax.set_title(model)
        ax.set_xlabel("scores per item")
        ax.set_ylabel(value.capitalize())
    axes[0].legend(fontsize=7)
    return fig


def write_report(result: dict[str, Any], out_dir: str | Path, command: str, run: StudyRun) -> Report:
    """Write ``report.md``, ``tables/*.csv`` and ``figures/*.png`` of a :func:`run_study` result (``run``: what the
    report says of the run, :class:`StudyRun`)."""
    target, oracle, n_seeds, runtime = run.target, run.oracle, run.n_seeds, run.runtime
    rep = Report(out_dir, "Annotator-aware collection against DA, DA with z-scores and EASL, simulated", command)
    curves, budget = result["curves"], result["budget"]
    methods = ", ".join(METHOD_LABELS.get(m, m) for m in dict.fromkeys(curves["method"]))
    rep.paragraph(
        f"Oracle: {oracle}. Annotator models: {', '.join(dict.fromkeys(curves['model']))} "
        f"(core/simulate/aware_world.py: M1 noise only; M2 per-annotator offsets; M3 offsets and slopes; M4 M2 with "
        f"10% random clickers; M5 item-dependent noise; IX item x annotator interaction; DRIFT drifting offsets). "
        f"Methods: {methods}; {n_seeds} seeds each, equal budgets in scores per item; one annotator per HIT."
        + (f" Run time: {runtime:.1f} s." if runtime is not None else "")
    )
    rep.table(curves, "curves", show=False)
    rep.figure(
        curve_figure(curves, "spearman", target, f"Spearman with the truth (mean of {n_seeds} seeds)"),
        "spearman_curves",
        f"Spearman correlation with the truth against scores per item; dashed: the target {target:g}.",
    )
    rep.figure(
        curve_figure(curves, "kendall", target, f"Kendall tau with the truth (mean of {n_seeds} seeds)"),
        "kendall_curves",
        "Kendall correlation with the truth against scores per item.",
    )
    rep.heading(f"Scores per item to reach Spearman {target:g}, and annotations saved")
    rep.table(
        budget,
        "budget",
        caption="Budget where the seed-mean Spearman curve first reaches the target; % saved "
        "vs DA and vs DA with z-scores, 95% paired bootstrap interval over seeds",
        digits=2,
    )
    if "aware" in set(curves["method"]) and "da" in set(curves["method"]):
        none = no_gain_models(budget)
        rep.paragraph(
            "Where aware gains nothing (the interval of the % saved vs DA reaches 0 or below): "
            + (", ".join(none) if none else "none of the annotator models run")
            + "."
        )
        if (curves["per_item"] >= MIN_PER_ITEM).any() and curves["seed"].nunique() >= 2:
            report_section(rep, curves)  # the condition for the default method
    for name, caption in (
        ("coverage", "Empirical coverage of the 95% rank intervals (aware) at 5 and 10 scores per item"),
        (
            "stopping",
            f"Stopping rule (aware): runs where it stopped, share of them whose true "
            f"Spearman was >= {target:g} there, mean scores per item at the stop",
        ),
        ("flags", "Random-clicker flags (aware, annotators with >= 30 scores): recall and false flag rate"),
    ):
        frame = result.get(name)
        frame = pd.DataFrame() if frame is None else frame
        if len(frame):
            rep.heading(name.capitalize(), level=3)
        rep.table(frame, name, caption=caption, digits=3, show=bool(len(frame)))  # written even when empty
    rep.write()
    return rep
