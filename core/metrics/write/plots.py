"""Report figures (matplotlib, Agg canvas, PNG): human vs system scatter, confusion heat map, PRMSE intervals.

Figures are drawn on ``matplotlib.figure.Figure`` with an Agg canvas, so no global backend is touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray

_SCATTER_MAX = 20_000  # above this many points the scatter becomes a hexbin density plot


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    return path


def scatter_plot(
    human: NDArray[Any], system: NDArray[Any], path: Path, *, system_name: str, human_name: str, seed: int = 0
) -> Path:
    """Human (x) vs system (y) scores with the identity line; a hexbin above 20,000 points.

    Human scores get a small uniform jitter (+/- 0.15, seeded) so integer scores do not overplot.
    """
    fig = Figure(figsize=(5, 4.5))
    ax = fig.add_subplot()
    rng = np.random.default_rng(seed)
    x = human + rng.uniform(-0.15, 0.15, human.size)
    if human.size > _SCATTER_MAX:
        hb = ax.hexbin(x, system, gridsize=50, mincnt=1, bins="log", cmap="viridis")
        fig.colorbar(hb, ax=ax, label="responses (log)")
    else:
        ax.scatter(x, system, s=6, alpha=0.35, linewidths=0)
    lo = float(np.nanmin([human.min(), system.min()])) if human.size else 0.0
    hi = float(np.nanmax([human.max(), system.max()])) if human.size else 1.0
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--")
    ax.set_xlabel(f"human score ({human_name}, jittered)")
    ax.set_ylabel(f"system score ({system_name})")
    ax.set_title(f"{system_name} vs {human_name}")
    return _save(fig, path)


def confusion_heatmap(
    human_cat: NDArray[Any], system_cat: NDArray[Any], categories: NDArray[Any], path: Path, *, system_name: str
) -> Path:
    """Counts of (rounded human, rounded system) categories as a heat map with the counts written in the cells."""
    q = categories.size
    hi = np.searchsorted(categories, human_cat)
    si = np.searchsorted(categories, system_cat)
    table = np.bincount(hi * q + si, minlength=q * q).reshape(q, q)
    side = min(9.0, max(5.0, 1.2 + 0.5 * q))
    fig = Figure(figsize=(side, side * 0.9))
    ax = fig.add_subplot()
    im = ax.imshow(table, cmap="Blues", origin="lower")
    fig.colorbar(im, ax=ax, label="responses")
    step = max(1, int(np.ceil(q / 15)))  # at most ~15 tick labels per axis
    ticks = np.arange(0, q, step)
    labels = [f"{categories[i]:g}" for i in ticks]
    ax.set_xticks(ticks, labels)
    ax.set_yticks(ticks, labels)
    ax.set_xlabel(f"system score ({system_name}, rounded)")
    ax.set_ylabel("human score")
    if q <= 12:
        top = table.max() if table.size else 0
        for i in range(q):
            for j in range(q):
                color = "white" if top and table[i, j] > top / 2 else "black"
                ax.text(j, i, str(table[i, j]), ha="center", va="center", fontsize=8, color=color)
    ax.set_title("confusion matrix")
    return _save(fig, path)


def prmse_plot(
    estimates: dict[str, float | None], intervals: dict[str, tuple[float, float]], path: Path, confidence: float = 0.95
) -> Path:
    """PRMSE per system with its bootstrap percentile interval (a point when there is no interval). A percentile
    interval need not contain the estimate (PRMSE's bootstrap distribution is skewed): the bar is drawn from its
    ends, the estimate as a point on it or beside it."""
    names = list(estimates)
    fig = Figure(figsize=(5, 1.5 + 0.45 * len(names)))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    est = np.array([estimates[k] for k in names], dtype=float)  # None: NaN
    lo, hi = np.array([intervals.get(k, (np.nan, np.nan)) for k in names], dtype=float).reshape(-1, 2).T
    has = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(est)
    if has.any():
        half = (hi[has] - lo[has]) / 2
        ax.errorbar(
            lo[has] + half, y[has], xerr=half, fmt="none", capsize=4, label=f"{confidence:.0%} bootstrap interval"
        )
        ax.legend(loc="lower left", fontsize=8)
    ax.plot(est, y, "o", color="C0")
    ax.set_yticks(y, names)
    ax.axvline(1.0, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("PRMSE (true-score R2)")
    ax.set_title("PRMSE")
    return _save(fig, path)
