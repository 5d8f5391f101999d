"""The tables of the annotator-aware study (:func:`core.simulate.aware_study.run_study`) from its per-batch rows:
the budget to reach the target Spearman and the % saved vs DA and DA-z with paired bootstrap intervals over seeds,
the coverage of the rank intervals, the stopping rule's hit rate, and the random-clicker flags.

The budget is the first crossing of the seed-mean Spearman curve (:func:`core.simulate.annotation.first_crossing`,
linear interpolation between checkpoints).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.models.aware_posterior import stops
from core.simulate.annotation import first_crossing


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
    """The row of one ``aware`` run (per-batch rows of :func:`core.simulate.aware_study.run_one`) where the stopping
    rule (:func:`core.models.aware_posterior.stops`, options ``rule``) first stops, judged on the expected Spearman
    ``rho`` and the fewest informative scores ``fewest`` (None: the raw counts only); None if it never stops."""
    ok = np.asarray(
        stops(run[rho], run["min_count"], target=target, min_informative=run.get(fewest) if fewest else None, **rule)
    )
    return run.iloc[int(np.flatnonzero(ok)[0])] if ok.any() else None


def stopping_before_after(runs: Any, *, target: float) -> Any:
    """The stopping rule before and after it doubted random clickers, from the same runs (per-batch rows of
    :func:`core.simulate.aware_study.run_one` for ``aware``, a ``pandas.DataFrame`` with a ``setting`` column): per
    setting and rule, the runs, how many stopped, the hit rate (true Spearman >= ``target`` where the rule first
    stops) with its 95% Wilson interval, and the mean scores per item and true Spearman at the stop. ``before``:
    ``expected_spearman_fit`` and the raw counts; ``after``: ``expected_spearman`` and the informative counts."""
    out = []
    for setting, g in runs.groupby("setting", sort=False):
        for rule, rho, fewest in (
            ("before", "expected_spearman_fit", None),
            ("after", "expected_spearman", "min_informative"),
        ):
            found = (first_stop(run, target=target, rho=rho, fewest=fewest) for _, run in g.groupby("seed"))
            at_stop = [row for row in found if row is not None]
            hits = sum(bool(r["spearman"] >= target) for r in at_stop)
            low, high = wilson_interval(hits, len(at_stop))
            out.append(
                {
                    "setting": setting,
                    "rule": rule,
                    "runs": g["seed"].nunique(),
                    "stopped": len(at_stop),
                    "hit_rate": hits / len(at_stop) if at_stop else np.nan,
                    "hit_rate_low": low,
                    "hit_rate_high": high,
                    "per_item_at_stop": float(np.mean([r["per_item"] for r in at_stop])) if at_stop else np.nan,
                    "spearman_at_stop": float(np.mean([r["spearman"] for r in at_stop])) if at_stop else np.nan,
                }
            )
    return pd.DataFrame(out)


def summarise(curves: Any, *, target: float, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Tables from the per-batch rows of :func:`core.simulate.aware_study.run_one` (a ``pandas.DataFrame``):
    ``budget`` (per model and method: scores per item to reach ``target`` on the seed-mean Spearman curve, % saved
    vs DA and vs DA-z with 95% bootstrap intervals over seeds, paired), ``coverage``, ``stopping``, ``flags``
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
        stop.assign(hit=stop["spearman_at_stop"] >= target)
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
