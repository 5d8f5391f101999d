"""The report of ``easl simulate easl --annotator-model ...`` (:func:`core.simulate.aware_study.run_study`): CSV
tables, PNG figures and a Markdown report. Where ``aware`` saves nothing the report says so, from the intervals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.simulate.paired_budgets import MIN_PER_ITEM, report_section
from core.simulate.report import PALETTE, Report, new_figure

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


def write_report(
    result: dict[str, Any],
    out_dir: str | Path,
    command: str,
    *,
    target: float,
    oracle: str,
    n_seeds: int,
    runtime: float | None = None,
) -> Report:
    """Write ``report.md``, ``tables/*.csv`` and ``figures/*.png`` of a :func:`run_study` result."""
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
