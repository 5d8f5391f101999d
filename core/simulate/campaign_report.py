"""Tables of the evaluation-campaign study (:mod:`core.simulate.campaign_study`): coverage, interval width against
budget, the budget ratio to reach the classical width, and the paired never-worse-than-uniform check.

Budget ratio: for a design d and a classical budget b, the cost b' (mean human scores spent) at which d's median
interval width equals the classical median width at b, by log-log interpolation of d's width against its cost over
the study's budgets (the end segment's slope extrapolates beyond them, as width ~ cost^-1/2 suggests); ratio
b' / b. Never worse: per campaign, width(active) - width(uniform) on the same responses and uniforms; the check
fails where the 95% interval of the mean difference (normal, over campaigns) lies entirely above 0, or where the
design withholds an interval that the uniform design reports. Coverage is over the intervals reported (an estimate
without an interval has a reason instead, :mod:`core.campaign.estimators`), beside the share withheld.

Run: ``python -m core.simulate.campaign_report DIR`` on the per-setting CSVs written by
:func:`core.simulate.campaign_study.run_and_save`; it prints the study page's tables in Markdown.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: The issue's targets for the budget ratio of the active design (PRMSE against double-scoring).
TARGETS = {"mean": 0.5, "r": 0.5, "qwk": 0.8, "rmse": 0.8, "prmse": 0.75}
KEYS = ["rater", "system_r", "family", "metric"]


def load(directory: str | Path) -> pd.DataFrame:
    """Every per-setting CSV of a study run, concatenated."""
    files = sorted(Path(directory).glob("campaign_*.csv.gz"))
    if not files:
        raise ValueError(f"no study results (campaign_*.csv.gz) in {directory}")
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)


def cells(df: pd.DataFrame) -> pd.DataFrame:
    """Coverage, median width, mean cost and the share of campaigns without an interval per (setting, metric,
    budget, design).

    Coverage is over the campaigns that report an interval (an estimate reported without one, with its reason,
    :mod:`core.campaign.estimators`, is not a miss; ``withheld`` says how often that happens). For the median width
    a withheld interval counts as infinitely wide. The median, not the mean, of the widths: PRMSE with
    low-agreement raters and few double-scored responses has a few campaigns with an estimated true-score variance
    near 0 and huge widths, which would swamp a mean.
    """
    shown = np.isfinite(df["width"].to_numpy(dtype=np.float64))
    df = df.assign(
        covered=df["covered"].astype(np.float64).where(shown),
        withheld=~shown,
        width=df["width"].where(shown, np.inf),
    )
    return (
        df.groupby([*KEYS, "budget", "design"])
        .agg(
            coverage=("covered", "mean"),
            width=("width", "median"),
            cost=("cost", "mean"),
            n=("covered", "size"),
            withheld=("withheld", "mean"),
        )
        .reset_index()
    )


def coverage_by_scored_twice(
    df: pd.DataFrame, edges: tuple[int, ...] = (0, 30, 40, 50, 60, 80, 100, 150, 300)
) -> pd.DataFrame:
    """Coverage of the intervals of the metrics that need second scores, by the number of responses scored twice
    (campaign designs, every setting and budget together): the evidence for
    :data:`core.campaign.estimators.MIN_DOUBLE`. Needs the ``n`` column of the study's rows."""
    d = df[(df["family"] == "double") & (df["design"] != "classical") & np.isfinite(df["width"])]
    scored_twice = pd.cut(d["n"], list(edges))
    g = d.assign(scored_twice=scored_twice).groupby(["metric", "scored_twice"], observed=True)["covered"]
    return pd.DataFrame({"coverage": g.mean(), "campaigns": g.size()}).reset_index()


def coverage_summary(c: pd.DataFrame) -> pd.DataFrame:
    """Per (family, metric, design): lowest and highest coverage over settings and budgets, cells outside 93-97%."""
    g = c.groupby(["family", "metric", "design"])["coverage"]
    out = pd.DataFrame({"min": g.min(), "max": g.max(), "cells": g.size()})
    out["outside_93_97"] = (
        c.assign(bad=~c["coverage"].between(0.93, 0.97)).groupby(["family", "metric", "design"])["bad"].sum()
    )
    out["withheld_max"] = c.groupby(["family", "metric", "design"])["withheld"].max()
    return out.reset_index()


def _cost_for_width(cost: np.ndarray[Any, Any], width: np.ndarray[Any, Any], target: float) -> float:
    """Cost at which a width curve reaches ``target`` (log-log interpolation, end slopes extrapolate)."""
    ok = np.isfinite(width) & (width > 0) & (cost > 0)
    if ok.sum() < 2 or not np.isfinite(target):
        return float("nan")
    x, y = np.log(cost[ok]), np.log(width[ok])
    order = np.argsort(x)
    x, y = x[order], y[order]
    t = np.log(target)
    seg = int(np.clip(np.searchsorted(-y, -t), 1, len(x) - 1))
    slope = (y[seg] - y[seg - 1]) / (x[seg] - x[seg - 1])
    if not np.isfinite(slope) or slope >= 0:
        return float("nan")
    return float(np.exp(x[seg - 1] + (t - y[seg - 1]) / slope))


def budget_ratios(c: pd.DataFrame) -> pd.DataFrame:
    """Budget ratio b' / b of each design against the classical design, per setting, metric and classical budget."""
    rows = []
    for key, part in c.groupby(KEYS):
        classical = part[part["design"] == "classical"].sort_values("budget")
        for design in sorted(set(part["design"]) - {"classical"}):
            d = part[part["design"] == design].sort_values("budget")
            for _, row in classical.iterrows():
                need = _cost_for_width(d["cost"].to_numpy(), d["width"].to_numpy(), row["width"])
                rows.append(
                    {
                        **dict(zip(KEYS, key, strict=True)),
                        "design": design,
                        "budget": row["budget"],
                        "ratio": need / row["cost"],
                    }
                )
    return pd.DataFrame(rows)


def never_worse(df: pd.DataFrame, design: str = "active") -> pd.DataFrame:
    """Paired width difference ``design`` - uniform per (setting, metric, budget): mean, 95% interval, the mean
    relative to the uniform design's mean width, and whether the interval lies entirely above 0. Campaigns where
    either design reports no interval (:func:`cells`) are left out of the pair; ``withheld`` counts the campaigns
    where only ``design`` reports none (a loss the widths cannot show), and a cell with any is worse too."""
    keys = [*KEYS, "budget", "campaign"]
    a = df[df["design"] == design].set_index(keys)["width"]
    u = df[df["design"] == "uniform"].set_index(keys)["width"]
    a, u = a.where(np.isfinite(a)), u.where(np.isfinite(u))
    diff = (a - u).dropna().rename("diff").reset_index()
    g = diff.groupby([*KEYS, "budget"])["diff"]
    out = pd.DataFrame({"mean": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.size())})
    out["low"] = out["mean"] - 1.96 * out["se"]
    out["high"] = out["mean"] + 1.96 * out["se"]
    out["relative"] = out["mean"] / u.groupby(level=[*KEYS, "budget"]).mean()
    only = (a.isna() & u.reindex(a.index).notna()).groupby(level=[*KEYS, "budget"]).sum()
    out["withheld"] = only.reindex(out.index).fillna(0).astype(int)
    out["worse"] = (out["low"] > 0) | (out["withheld"] > 0)
    return out.reset_index()


def headline(df: pd.DataFrame, ratios: pd.DataFrame, min_r: float = 0.8) -> pd.DataFrame:
    """Worst (largest) budget ratio of the active, uniform and oracle designs per target metric, over the settings
    whose true human-system r is at least ``min_r`` and every budget, beside the issue's target."""
    truth_r = df[df["metric"] == "r"].groupby(["rater", "system_r"])["truth"].first()
    good = truth_r[truth_r >= min_r].index
    keyed = ratios.set_index(["rater", "system_r"])
    sel = keyed[keyed.index.isin(good)].reset_index()
    rows = []
    for metric, target in TARGETS.items():
        part = sel[sel["metric"] == metric]
        active = part[part["design"] == "active"]["ratio"]
        oracle = part[part["design"] == "oracle"]["ratio"]
        uniform = part[part["design"] == "uniform"]["ratio"]
        rows.append(
            {
                "metric": metric,
                "target": target,
                "active_best": active.min(),
                "active_worst": active.max(),
                "uniform_worst": uniform.max(),
                "oracle_worst": oracle.max(),
                "met": bool(active.max() <= target),
                "beyond_oracle": bool(oracle.max() > target),
                "cells": len(active),
            }
        )
    return pd.DataFrame(rows)


def _markdown(df: pd.DataFrame, digits: int = 3) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        vals = [f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(vals) + " |")
    return "\n".join(lines)


def report(df: pd.DataFrame) -> str:
    """The study page's tables (Markdown)."""
    c = cells(df)
    parts = ["### Coverage (share of campaigns whose 95% interval covers the true value)", ""]
    parts.append(_markdown(coverage_summary(c)))
    truth_r = df[(df["metric"] == "r") & (df["design"] == "classical")].groupby(["rater", "system_r"])["truth"].first()
    parts += ["", "### Human-system r (true value) of each setting", "", _markdown(truth_r.unstack().reset_index())]
    ratios = budget_ratios(c)
    parts += ["", "### Headline: budget ratio of the active design where the true human-system r >= 0.8", ""]
    parts.append(_markdown(headline(df, ratios)))
    wide = ratios.pivot_table(index=[*KEYS, "budget"], columns="design", values="ratio").reset_index()
    parts += ["", "### Budget ratio to reach the classical width (cost of the design / classical cost)", ""]
    parts.append(_markdown(wide))
    width = c.pivot_table(index=[*KEYS, "budget"], columns="design", values="width").reset_index()
    parts += ["", "### Median interval width", "", _markdown(width, 4)]
    for design in (d for d in ("active", "wrong", "oracle") if d in set(df["design"])):
        nw = never_worse(df, design)
        bad = nw[nw["worse"]]
        parts += ["", f"### Never worse than uniform: {design} - uniform, paired over campaigns", ""]
        worst = f"{bad['relative'].max():+.2%}" if len(bad) else "none"
        parts.append(
            f"{len(bad)} of {len(nw)} cells have the 95% interval of the mean width difference above 0; the largest"
            f" of those differences, relative to the uniform design's mean width: {worst}."
        )
        if len(bad):
            parts += ["", _markdown(bad, 4)]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Print the report of the study results in the directory given as the only argument."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m core.simulate.campaign_report DIR", file=sys.stderr)
        return 2
    print(report(load(args[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
