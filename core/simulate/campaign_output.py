"""What ``easl simulate campaign`` writes and prints: tables (CSV), figures (PNG), ``report.md`` and the budget each
design needs to reach an interval width.

Budget to reach a width W for a metric: per setting and design, the mean number of human scores at which the
design's median interval width equals W, interpolated log-log over the budgets of the run
(:func:`core.simulate.campaign_report._cost_for_width`; beyond the budgets of the run the end segment's slope
extrapolates, as width ~ scores^-1/2 suggests, and the table says so). Without W, W is the classical design's
median width at the largest budget of the run: the other designs' budgets then read as what they need for the
width that classical sampling buys with the largest budget.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from easl_toolkit.core.simulate.campaign_report import (
    _cost_for_width,
    _markdown,
    budget_ratios,
    cells,
    coverage_summary,
    never_worse,
    report,
)
from easl_toolkit.core.simulate.campaign_study import RATER_ERROR_SD

#: Designs in the order the tables list them.
DESIGN_ORDER = ("classical", "uniform", "active", "wrong", "oracle")
#: One colour per design in every panel.
COLOURS = {
    "classical": "tab:blue",
    "uniform": "tab:orange",
    "active": "tab:green",
    "wrong": "tab:gray",
    "oracle": "tab:red",
}
#: Metrics drawn in each setting's figure.
FIGURE_METRICS = ("mean", "r", "rmse", "prmse")


def budget_for_width(c: pd.DataFrame, metric: str, width: float | None) -> pd.DataFrame:
    """Per (setting, design): the human scores needed for a median width ``width`` of ``metric`` (module
    docstring), their ratio to the classical design's, and whether that is beyond the run's budgets."""
    rows = []
    part = c[c["metric"] == metric]
    for (rater, system_r), setting in part.groupby(["rater", "system_r"]):
        classical = setting[setting["design"] == "classical"].sort_values("budget")
        target = float(classical["width"].iloc[-1]) if width is None else float(width)
        need = {}
        for design in [d for d in DESIGN_ORDER if d in set(setting["design"])]:
            d = setting[setting["design"] == design].sort_values("budget")
            cost, w = d["cost"].to_numpy(), d["width"].to_numpy()
            need[design] = (_cost_for_width(cost, w, target), float(cost.min()), float(cost.max()))
        base = need.get("classical", (np.nan, 0.0, 0.0))[0]
        for design, (scores, lo, hi) in need.items():
            rows.append(
                {
                    "rater": rater,
                    "system_r": system_r,
                    "metric": metric,
                    "width": target,
                    "design": design,
                    "human_scores": scores,
                    "vs_classical": scores / base,
                    "extrapolated": bool(np.isfinite(scores) and not 0.999 * lo <= scores <= 1.001 * hi),
                }
            )
    return pd.DataFrame(rows)


def _figure(c: pd.DataFrame, rater: str, system_r: float, path: Path) -> None:
    """Median width against mean human scores spent, one panel per metric of :data:`FIGURE_METRICS`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(FIGURE_METRICS), figsize=(4 * len(FIGURE_METRICS), 3.4))
    setting = c[(c["rater"] == rater) & (c["system_r"] == system_r)]
    for ax, metric in zip(axes, FIGURE_METRICS, strict=True):
        part = setting[setting["metric"] == metric]
        for design in [d for d in DESIGN_ORDER if d in set(part["design"])]:
            d = part[part["design"] == design].sort_values("cost")
            style = "--" if design in ("oracle", "wrong") else "-"
            ax.plot(d["cost"], d["width"], marker="o", label=design, linestyle=style, color=COLOURS[design])
        ax.set_title(metric)
        ax.set_xlabel("human scores (mean)")
    axes[0].set_ylabel("median 95% interval width")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{rater}, human-system r {system_r:g}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_outputs(
    df: pd.DataFrame, out: str | Path, *, metric: str, width: float | None, header: list[str]
) -> tuple[Path, pd.DataFrame]:
    """Write ``out/report.md``, ``out/tables/*.csv`` and ``out/figures/*.png`` of a run's per-campaign rows;
    returns the directory and the budget-for-width table. ``header`` opens the report (command, data, settings)."""
    out = Path(out)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    c = cells(df)
    need = budget_for_width(c, metric, width)
    tables = {
        "cells": c,
        "coverage": coverage_summary(c),
        "budget_ratio": budget_ratios(c),
        "budget_for_width": need,
        "never_worse": never_worse(df, "active"),
    }
    for name, table in tables.items():
        table.to_csv(out / "tables" / f"{name}.csv", index=False)
    figures = []
    for (rater, system_r), _ in c.groupby(["rater", "system_r"]):
        name = f"width_{rater}_r{system_r:g}.png"
        _figure(c, rater, system_r, out / "figures" / name)
        figures.append(f"![{rater}, r {system_r:g}](figures/{name})")
    body = [*header, "", f"## Human scores to reach a width of the {metric} interval", "", _markdown(need)]
    body += ["", "## Interval width against human scores", "", *figures, "", report(df)]
    (out / "report.md").write_text("\n".join(body) + "\n", encoding="utf-8")
    return out, need


def summary_lines(df: pd.DataFrame, need: pd.DataFrame, metric: str) -> list[str]:
    """What the command prints: per setting, the human scores each design needs for the width, and the coverage of
    the metric's interval by every design at every budget (every metric's coverage is in the report)."""
    lines: list[str] = []
    c = cells(df)
    for (rater, system_r), part in need.groupby(["rater", "system_r"], sort=False):
        setting_rows = df[(df["rater"] == rater) & (df["system_r"] == system_r)]
        n = int(setting_rows["campaign"].max()) + 1
        w = float(part["width"].iloc[0])
        true_r = float(setting_rows.loc[setting_rows["metric"] == "r", "truth"].iloc[0])
        what = f"{rater} raters, system r {system_r:g} with the true score" if rater in RATER_ERROR_SD else rater
        lines += [f"{what}: {n} campaigns", f"  true human-system r {true_r:.3f}"]
        lines.append(f"  human scores for a 95% interval of {metric} {w:.3g} wide:")
        for _, row in part.iterrows():
            scores = "not reached" if not np.isfinite(row["human_scores"]) else f"{row['human_scores']:.0f}"
            ratio = "" if row["design"] == "classical" else f"  ({row['vs_classical']:.2f} x classical)"
            extra = "  (extrapolated)" if row["extrapolated"] else ""
            lines.append(f"  {row['design']:<10} {scores:>11}{ratio}{extra}")
        setting = c[(c["rater"] == rater) & (c["system_r"] == system_r) & (c["metric"] == metric)]
        cov = setting.pivot_table(index="design", columns="budget", values="coverage")
        lines.append(f"  coverage of the 95% interval of {metric}, by budget (share of the responses):")
        lines.append("  " + " " * 11 + " ".join(f"{b:>5g}" for b in cov.columns))
        for d in [d for d in DESIGN_ORDER if d in cov.index]:
            lines.append(f"  {d:<10} " + " ".join(f"{v:.3f}" for v in cov.loc[d]))
    return lines


#: Metrics of the printed tables, in their order.
TABLE_METRICS = ("mean", "r", "qwk", "rmse", "smd", "prmse", "prmse_first", "hh_r", "hh_qwk")


def tables_text(c: pd.DataFrame, metrics: tuple[str, ...] = TABLE_METRICS) -> str:
    """Coverage (of the reported intervals), median width, the share of campaigns without an interval (where any)
    and budget ratio (:func:`core.simulate.campaign_report.budget_ratios`) per (setting, metric, budget) and
    design, as plain-text tables."""
    c = c[c["metric"].isin(metrics)].copy()
    c["metric"] = pd.Categorical(c["metric"], categories=list(metrics), ordered=True)
    designs = [d for d in DESIGN_ORDER if d in set(c["design"])]
    parts = []
    for (rater, system_r), setting in c.groupby(["rater", "system_r"], observed=True):
        for value, digits in (("coverage", 3), ("width", 4), ("withheld", 3)):
            part = setting[setting["withheld"] > 0] if value == "withheld" else setting
            if part.empty:
                continue
            wide = part.pivot_table(index=["metric", "budget"], columns="design", values=value, observed=True)
            wide = wide[[d for d in designs if d in wide.columns]]
            title = "share of campaigns without an interval" if value == "withheld" else f"{value} of the 95% intervals"
            parts += [f"{rater}, r {system_r:g}: {title}", wide.round(digits).to_string(), ""]
        ratios = budget_ratios(setting)
        ratios["metric"] = pd.Categorical(ratios["metric"], categories=list(metrics), ordered=True)
        wide = ratios.pivot_table(index=["metric", "budget"], columns="design", values="ratio", observed=True)
        wide = wide[[d for d in designs if d in wide.columns]]
        title = f"{rater}, r {system_r:g}: human scores for the classical width at each budget, x classical's"
        parts += [title, wide.round(2).to_string(), ""]
    return "\n".join(parts).rstrip()


def main(argv: list[str] | None = None) -> int:
    """Print the coverage and width tables of a run of ``easl simulate campaign`` (its output directory)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m easl_toolkit.core.simulate.campaign_output DIR", file=sys.stderr)
        return 2
    print(tables_text(pd.read_csv(Path(args[0]) / "tables" / "cells.csv")))
    nw = pd.read_csv(Path(args[0]) / "tables" / "never_worse.csv")
    bad = nw[nw["worse"]]
    worst = ", ".join(f"{r.metric} at {r.budget:g}: {r.relative:+.2%}" for r in bad.itertuples())
    print(
        f"\nnever worse than uniform (active - uniform, paired over campaigns): {len(bad)} of {len(nw)} cells "
        f"have the 95% interval of the mean width difference above 0{': ' + worst if len(bad) else ''}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
