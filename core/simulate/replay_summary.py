"""The tables of a replay (:func:`core.simulate.replay.run_replay`) from its per-batch rows: the budget each method
needs to reach each target Spearman, and the % saved against DA and DA with z-scores with paired bootstrap
intervals over seeds.

Each run's Spearman curve is put on the common grid of batch budgets (linear interpolation; a run whose pool ran
out stops there), the seeds are averaged, and the budget is the first crossing of the seed-mean curve
(:func:`core.simulate.annotation.first_crossing`). The bootstrap resamples the seeds, the same resample for the
method and its reference (paired: a seed is one split and one stream of annotators for every method).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from core.simulate.annotation import first_crossing

#: Bootstrap resamples of the seeds.
N_BOOT = 2000


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


def summarise(
    curves: pd.DataFrame, *, targets: tuple[float, ...], batch: float, n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any]:
    """``budget``: per target and method, the scores per item to reach the target on the seed-mean Spearman curve
    (NaN: not reached within the budget), its ratio to DA's, and the % saved vs DA and vs DA with z-scores with
    95% paired bootstrap intervals over seeds; ``mean_curves``: the seed-mean Spearman and Kendall per budget."""
    grid = grid_of(curves, batch)
    mats = on_grid(curves, "spearman", grid)
    kend = on_grid(curves, "kendall", grid)
    methods = list(mats)
    n_seeds = min(m.shape[0] for m in mats.values()) if mats else 0
    rng = np.random.default_rng(seed)
    boot = rng.integers(n_seeds, size=(n_boot, n_seeds)) if n_seeds else np.zeros((0, 0), np.int64)
    boot_means = {m: np.nanmean(mats[m][boot], axis=1) for m in methods}  # (n_boot, grid): seed means per resample
    rows = []
    for target in targets:
        point = {m: first_crossing(grid, np.nanmean(mats[m], axis=0), target) for m in methods}
        draws = {m: np.array([first_crossing(grid, x, target) for x in boot_means[m]]) for m in methods}
        for m in methods:
            row: dict[str, Any] = {"target": target, "method": m, "budget": point[m]}
            for ref in ("da", "da-z"):
                if ref not in methods or m == ref:
                    continue
                if ref == "da":
                    row["ratio_to_da"] = point[m] / point[ref]
                saved = 100.0 * (1.0 - draws[m] / draws[ref])
                lo, hi = np.nanpercentile(saved, [2.5, 97.5]) if np.isfinite(saved).any() else (np.nan, np.nan)
                row[f"saved_vs_{ref}"] = 100.0 * (1.0 - point[m] / point[ref])
                row[f"saved_vs_{ref}_low"], row[f"saved_vs_{ref}_high"] = float(lo), float(hi)
                row[f"saved_vs_{ref}_reached"] = float(np.mean(np.isfinite(saved)))
            rows.append(row)
    mean_rows = [
        {"method": m, "per_item": x, "spearman": s, "kendall": k}
        for m in methods
        for x, s, k in zip(grid, np.nanmean(mats[m], axis=0), np.nanmean(kend[m], axis=0))
    ]
    budget = pd.DataFrame(rows)
    first = [c for c in ("target", "method", "budget", "ratio_to_da") if c in budget.columns]
    budget = budget[first + [c for c in budget.columns if c not in first]]
    return {"budget": budget, "mean_curves": pd.DataFrame(mean_rows)}
