"""`easl simulate prmse`: run every experiment of Loukina et al. (2020) and write tables, figures and the report.

The reproduced numbers are set next to those of the paper and the authors' notebook (:func:`compare`). With the
authors' default settings the simulated dataset is bit-identical to the authors' code, so reproduced values differ
from the notebook's only by floating-point summation order. "Within tolerance" means:

- against the authors' notebook outputs (6 decimals): 5e-6 (rounding of the printed value plus float noise);
- against the paper's text and tables (2 decimals): 0.005 (half a unit of the last printed digit), or 0.0051 where
  the paper rounded a notebook value half-up across the boundary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from easl_toolkit.core.simulate import MapFn, published
from easl_toolkit.core.simulate import prmse as exp
from easl_toolkit.core.simulate.prmse import PrmseDataset, PrmseResults, PrmseSettings, generate_dataset
from easl_toolkit.core.simulate.published import NOTEBOOK as NB
from easl_toolkit.core.simulate.published import PAPER as P
from easl_toolkit.core.simulate.report import (
    Comparison,
    Groups,
    Report,
    Style,
    box_by_group,
    grouped_boxes,
    lines,
    new_figure,
    strip_by_group,
)

METRICS = ["r", "QWK", "R2", "degradation", "PRMSE"]
#: Tolerance against the authors' notebook outputs (6 decimals).
TOL_NOTEBOOK = 5e-6
#: Tolerance against the paper's text and tables (2 decimals).
TOL_PAPER = 0.0051


def run(
    settings: PrmseSettings,
    progress: Callable[..., None] | None = None,
    double_scoring: bool = True,
    dataset: PrmseDataset | None = None,
    map_fn: MapFn | None = None,
) -> PrmseResults:
    """Generate the dataset (unless ``dataset``, made from the same settings, is given) and run every experiment;
    ``progress(step)`` is called after each step; ``map_fn`` runs the per-category units
    (:mod:`core.simulate`)."""
    timings: dict[str, float] = {}

    def timed(step: str, fn: Callable[[], Any], done: str | None = None) -> Any:
        t = time.perf_counter()
        out = fn()
        if progress and done:
            progress(done)
        timings[step] = time.perf_counter() - t
        return out

    ds = timed("dataset", lambda: dataset if dataset else generate_dataset(settings, progress=progress, map_fn=map_fn))
    table1, table2 = timed("tables 1-2", lambda: (exp.rater_table(ds), exp.system_table(ds)))
    stability = timed("4.1 / 5.2", lambda: exp.metric_stability(ds, progress=progress, map_fn=map_fn))
    ranking = timed("4.2", lambda: exp.ranking(ds), "4.2 ranking")
    cumulative = timed("4.3", lambda: exp.cumulative_raters(ds), "4.3 cumulative raters")
    double = table4 = None
    if double_scoring:
        double = timed("5.3", lambda: exp.double_scoring(ds, progress=progress, map_fn=map_fn))
        table4 = exp.prmse_range_table(double, settings.rater_categories)
    res = PrmseResults(
        ds, table1, table2, stability, ranking, cumulative, double, table4, exp.true_system_metrics(ds), {}, timings
    )
    # the published numbers apply when the dataset and pairs are the authors' (the percentages may differ)
    if settings == PrmseSettings(double_scored_percentages=settings.double_scored_percentages):
        res.comparisons = compare(res)
    return res


def write_report(res: PrmseResults, out_dir: str | Path, command: str) -> Report:
    """Write ``report.md`` with its tables and figures to ``out_dir``: one step per section of the paper."""
    rep = Report(out_dir, "PRMSE simulations (Loukina et al. 2020), reproduced", command)
    for section in (_introduction, _section3, _figure1, _figure2, _figure3, _figure4, _figure5):
        section(rep, res)
    rep.settings(res.dataset.settings)
    rep.write()
    return rep


def _compare(rep: Report, res: PrmseResults, key: str, caption: str) -> None:
    """The reproduced-vs-published table ``compare_<key>`` when the published numbers apply."""
    if res.comparisons:
        rep.table(res.comparisons[key].frame(), f"compare_{key}", caption=caption, digits=6)


def _introduction(rep: Report, res: PrmseResults) -> None:
    s, ds = res.dataset.settings, res.dataset
    comparable = bool(res.comparisons)
    rep.paragraph(
        f"Simulated dataset: {s.n_responses:,} responses, {len(ds.rater_ids)} raters in {len(s.rater_categories)} "
        f"categories, {len(ds.system_ids)} systems in {len(s.system_categories)} categories; sample system "
        f"{s.sample_system}; {s.pairs_per_category} rater pairs per category. Generators, seeds, rounding "
        "(half-to-even, then clipping) and the error-sd grid search follow the authors' public code "
        "(prmse-simulations, MIT), so with the default settings the dataset is the authors' dataset bit for bit. All "
        "metrics come from `easl_toolkit.core.metrics`."
        + (
            ""
            if comparable
            else " **The settings differ from the authors', so the published numbers are not "
            "shown next to these results.**"
        )
    )
    rep.paragraph(
        "Tolerances: reproduced values are compared with the authors' notebook outputs (printed with 6 "
        f"decimals) within {TOL_NOTEBOOK:g}, and with the paper (2 decimals) within {TOL_PAPER:g} "
        "(half a unit of the last digit, plus a hair for values the paper rounded up from x.xx5)."
    )
    if comparable:
        n_rows = sum(r["within_tolerance"] is not None for c in res.comparisons.values() for r in c.rows)
        bad = [r["quantity"] for c in res.comparisons.values() for r in c.rows if r["within_tolerance"] is False]
        rep.paragraph(
            f"**Summary: {n_rows - len(bad)} of {n_rows} compared numbers are within tolerance.**"
            + ("" if not bad else " Outside: " + "; ".join(bad) + ".")
        )
    rep.key_values(res.timings, "timings", ("step", "seconds"), caption="Run time per step", digits=2)


def _section3(rep: Report, res: PrmseResults) -> None:
    ds = res.dataset
    rep.heading("Section 3: the simulated raters and systems (Tables 1 and 2)")
    if ds.searches:
        search = pd.DataFrame({"error_sd": ds.searches[0].grid} | {x.category: x.mean_correlation for x in ds.searches})
        rep.table(search, "sd_search", show=False)
        fig = lines(
            search,
            "error_sd",
            [x.category for x in ds.searches],
            style=Style(
                shared_panel=True,
                markers=False,
                xlabel="rater error sd",
                ylabel="mean inter-rater r",
                title="Error-sd grid search (targets: " + ", ".join(f"{r:g}" for r in ds.settings.rater_rhos) + ")",
            ),
        )
        rep.figure(
            fig,
            "sd_search",
            "Mean inter-rater correlation for each candidate error sd, per category (the search behind Table 1).",
        )
    rep.table(res.table1, "table1", caption="Table 1: rater categories", digits=4)
    rep.table(res.table2, "table2", caption="Table 2: system categories", digits=4)
    _compare(rep, res, "table1", "Table 1 and the chosen error sds vs published")
    _compare(rep, res, "table2", "Table 2 vs published")
    rep.table(ds.rater_metadata(), "rater_metadata", show=False)
    rep.table(ds.system_metadata(), "system_metadata", show=False)


def _figure1(rep: Report, res: PrmseResults) -> None:
    s, st = res.dataset.settings, res.stability
    cats = list(s.rater_categories)
    rep.heading("Section 4.1 / Figure 1: the same system against raters of different quality")
    rep.table(st, "figure1_metrics", show=False)
    means = (
        st.groupby(["reference", "rater_category"])[METRICS[:4]]
        .mean()
        .reset_index()
        .pivot(index="reference", columns="rater_category")
        .stack(0, future_stack=True)
        .reset_index()
        .rename(columns={"level_1": "metric"})
    )
    means = means[["metric", "reference"] + [c for c in cats if c in means.columns]]
    rep.table(
        means.sort_values(["metric", "reference"]).reset_index(drop=True),
        "figure1_means",
        caption=f"Mean metric of {s.sample_system} over the {s.pairs_per_category} pairs of each category",
        digits=4,
    )
    fig = strip_by_group(
        st,
        METRICS[:4],
        Groups("rater_category", cats, "reference", list(exp.REFERENCES)),
        Style(title=f"Figure 1: {s.sample_system} against rater pairs of each category"),
    )
    rep.figure(
        fig,
        "figure1",
        "Figure 1: r, QWK, R2 and degradation of one system against the first rater (h1) "
        "and the pair mean, by rater category.",
    )
    _compare(rep, res, "figure1", "Figure 1 numbers vs published")


def _figure2(rep: Report, res: PrmseResults) -> None:
    m, same = res.ranking["metrics"], res.ranking["same_pair"]
    rep.heading("Section 4.2 / Figure 2 / Table 3: rankings when systems are evaluated on different pairs")
    rep.table(m, "figure2_ranks", show=False)
    rep.table(res.ranking["table3"], "table3", caption="Table 3: systems per rater category of their pair", index=True)

    def ranks(suffix: str) -> pd.DataFrame:
        return m[["system_category"] + [f"{k}{suffix}" for k in METRICS]].rename(
            columns={f"{k}{suffix}": k for k in METRICS}
        )

    fig = box_by_group(
        ranks("_rank"),
        METRICS,
        Groups("system_category", list(res.dataset.settings.system_categories)),
        dots=ranks("_same_rank"),
        style=Style(
            ylabel="rank (1 = best)",
            title=f"Figure 2: system ranks, each system on its own pair (boxes) vs all on {same[0]}+{same[1]} (red)",
        ),
    )
    rep.figure(
        fig,
        "figure2",
        "Figure 2: ranks of the 25 systems by each metric when every system is evaluated "
        "on a different rater pair (boxes), and on one common pair (red dots).",
    )
    agree = pd.DataFrame(
        [
            {
                "metric": k,
                "rank_corr_with_true_different_pairs": float(np.corrcoef(m["true_rank"], m[f"{k}_rank"])[0, 1]),
                "rank_corr_with_true_same_pair": float(np.corrcoef(m["true_rank"], m[f"{k}_same_rank"])[0, 1]),
                "max_abs_rank_error_different_pairs": float((m["true_rank"] - m[f"{k}_rank"]).abs().max()),
            }
            for k in METRICS
        ]
    )
    rep.table(
        agree,
        "figure2_rank_agreement",
        caption="Agreement of each metric's ranking with the true ranking (R2 against the true score)",
    )
    _compare(rep, res, "table3", "Table 3 and the fixed pair vs published")


def _figure3(rep: Report, res: PrmseResults) -> None:
    cu = res.cumulative
    rep.heading("Section 4.3 / Figure 3: more raters")
    rep.table(cu, "figure3_cumulative", show=False)
    steps = [k for k in (1, 2, 5, 10, 25, 50) if k <= cu["n_raters"].max()]
    rep.table(
        cu[cu["n_raters"].isin(steps)].reset_index(drop=True),
        "figure3_steps",
        caption=f"{res.dataset.settings.sample_system} against the cumulative mean of the first k raters of each "
        "category",
        digits=4,
    )
    fig = lines(
        cu,
        "n_raters",
        ["r", "R2", "QWK"],
        ("rater_category", list(res.dataset.settings.rater_categories)),
        Style(
            hlines={k: res.true_metrics[k] for k in ("r", "R2", "QWK")},
            markers=True,
            xlabel="number of raters",
            title="Figure 3: metrics against the mean of k raters",
        ),
    )
    rep.figure(
        fig,
        "figure3",
        "Figure 3: r, R2 and QWK of one system against the cumulative mean of 1..K raters; "
        "red: the value against the true score.",
    )
    rep.paragraph(
        "Against the true score: "
        + ", ".join(f"{k} = {v:.4f}" for k, v in res.true_metrics.items())
        + ". The paper reports no numbers for this figure; it states that every category approaches the "
        "true-score value as raters are added, which the table above shows."
    )


def _figure4(rep: Report, res: PrmseResults) -> None:
    cats = list(res.dataset.settings.rater_categories)
    rep.heading("Section 5.2 / Figure 4: R2 against PRMSE")
    pair_rows = res.stability[res.stability["reference"] == "h1-h2 mean"].copy()
    fig = strip_by_group(
        pair_rows,
        ["R2", "PRMSE"],
        Groups("rater_category", cats),
        Style(
            hlines={"R2": res.true_metrics["R2"], "PRMSE": res.true_metrics["R2"]},
            title="Figure 4: R2 (pair mean) and PRMSE, same system",
        ),
    )
    rep.figure(
        fig,
        "figure4",
        "Figure 4: R2 against the pair mean and PRMSE for the same system over the 200 "
        "pairs; red: R2 against the true score.",
    )
    summary = pair_rows.groupby("rater_category")[["R2", "PRMSE"]].agg(["min", "mean", "max"]).reindex(cats)
    summary.columns = [f"{a}_{b}" for a, b in summary.columns]
    rep.table(summary.reset_index(), "figure4_summary", caption="R2 and PRMSE by rater category", digits=4)
    _compare(rep, res, "figure4", "Figure 4 numbers vs published")


def _figure5(rep: Report, res: PrmseResults) -> None:
    if res.double is None or res.table4 is None:
        return
    s, dd = res.dataset.settings, res.double
    rep.heading("Section 5.3 / Figure 5 / Table 4: PRMSE and double-scoring")
    rep.table(dd, "figure5_prmse", show=False)
    pcts = list(s.double_scored_percentages)
    counts = dd.groupby("percent_double_scored")["num_double_scored"].first().reindex(pcts).tolist()
    title = "Figure 5: PRMSE by share and by number of double-scored responses (y clipped to 0.4-1.2)"
    fig, axes = new_figure(2, width=6.5, height=4.0, title=title)
    panels = (
        (
            "prmse_percent",
            [f"{p:g}%\n({n})" for p, n in zip(pcts, counts)],
            "% (n) double-scored responses, all N responses",
        ),
        ("prmse_number", counts, "number of responses (all double-scored)"),
    )
    for ax, (value, labels, xlabel) in zip(axes, panels):
        groups = Groups("percent_double_scored", pcts, "rater_category", list(s.rater_categories), labels)
        grouped_boxes(dd, value, groups, ax, Style(hline=res.true_metrics["R2"], ylim=(0.4, 1.2)))
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel("PRMSE")
    rep.figure(
        fig,
        "figure5",
        "Figure 5: distribution of PRMSE over the pairs of each category; dotted: R2 "
        "against the true score. As in the paper, the axis is clipped to 0.4-1.2.",
    )
    t4 = res.table4.copy()
    t4.insert(0, "num_double_scored", counts)
    rep.table(t4.reset_index(), "table4", caption="Table 4: range (max - min) of PRMSE over the pairs", digits=4)
    _compare(rep, res, "table4", "Table 4 vs published")


def compare(res: PrmseResults) -> dict[str, Comparison]:
    """Reproduced numbers next to the paper's and the authors' notebook's, by experiment."""
    out = {
        "table1": _vs_table1(res),
        "table2": _vs_table2(res),
        "figure1": _vs_figure1(res),
        "figure4": _vs_figure4(res),
        "table3": _vs_table3(res),
    }
    if res.table4 is not None:
        out["table4"] = _vs_table4(res)
    return out


def _both(c: Comparison, quantity: str, value: Any, notebook: float, paper: float, where: str) -> None:
    """Two rows: ``value`` against the notebook's number and against the paper's (``where`` in the paper)."""
    c.add(quantity, value, notebook, NB, TOL_NOTEBOOK)
    c.add(quantity, value, paper, f"{P} {where}", TOL_PAPER)


def _vs_table1(res: PrmseResults) -> Comparison:
    c = Comparison()
    for row in res.table1.itertuples():
        chosen = published.ERROR_SDS[row.category]
        c.add(f"{row.category}: chosen rater error sd", row.error_sd, chosen, "authors' rater_metadata.csv", 1e-9)
    for row in res.table1.itertuples():
        paper, nb = published.TABLE1_PAPER[row.category], published.TABLE1_NOTEBOOK[row.category]
        for col, name in enumerate(("hh_corr", "mean", "sd")):
            _both(c, f"{row.category}: {name}", getattr(row, name), nb[col], paper[col], "Table 1")
    return c


def _vs_table2(res: PrmseResults) -> Comparison:
    c = Comparison()
    r_col = [col for col in res.table2.columns if col.startswith("r_") and col != "r_true"][0]
    for row in res.table2.to_dict("records"):
        paper, nb = published.TABLE2_PAPER[row["category"]], published.TABLE2_NOTEBOOK[row["category"]]
        for col, name in enumerate(("R2_true", "r_true", r_col)):
            _both(c, f"{row['category']}: {name}", row[name], nb[col], paper[col], "Table 2")
    return c


def _vs_figure1(res: PrmseResults) -> Comparison:
    c = Comparison()
    means = res.stability.groupby(["reference", "rater_category"])[["r", "QWK", "R2", "degradation"]].mean()
    cats = list(res.dataset.settings.rater_categories)
    for (metric, ref), values in published.FIG1_NOTEBOOK.items():
        for cat, value in zip(cats, values):
            c.add(f"mean {metric} vs {ref}, {cat}", means.loc[(ref, cat), metric], value, NB, TOL_NOTEBOOK)
    pm = means.xs("h1-h2 mean")
    text = published.FIG1_PAPER_TEXT
    for cat in ("low", "high"):
        c.add(f"mean r vs pair mean, {cat}", pm.loc[cat, "r"], text[f"r_mean_{cat}"], P + " section 4.1", TOL_PAPER)
    deg = res.stability.loc[res.stability["reference"] == "h1-h2 mean", "degradation"]
    for end, quoted in (("max", "-0.05"), ("min", "-0.30")):
        where = f'{P} section 4.1 ("{quoted}")'
        c.add(f"degradation vs pair mean, {end}", getattr(deg, end)(), text[f"degradation_{end}"], where, TOL_PAPER)
    return c


def _vs_figure4(res: PrmseResults) -> Comparison:
    c = Comparison()
    pair_rows = res.stability[res.stability["reference"] == "h1-h2 mean"]
    got = {f"{m}_{f}": getattr(pair_rows[m], f)() for m in ("R2", "PRMSE") for f in ("min", "max")}
    got["PRMSE_mean"] = pair_rows["PRMSE"].mean()
    for k, v in published.FIG4_NOTEBOOK.items():
        c.add(k, got[k], v, NB, TOL_NOTEBOOK)
    for k in ("R2_min", "R2_max", "PRMSE_min", "PRMSE_max"):
        c.add(k, got[k], published.FIG4_PAPER[k], P + " section 5.2", TOL_PAPER)
    where = P + ' section 5.2 ("0.8 in this case")'
    c.add("R2 of sys_17 against the true score", res.true_metrics["R2"], published.FIG4_PAPER["R2_true"], where, 0.005)
    return c


def _vs_table3(res: PrmseResults) -> Comparison:
    c = Comparison()
    t3, cats = res.ranking["table3"], list(res.dataset.settings.rater_categories)
    for sys_cat, counts in published.TABLE3_PAPER.items():
        for rat_cat, v in zip(cats, counts):
            c.add(f"{sys_cat} systems on {rat_cat} pairs", int(t3.loc[sys_cat, rat_cat]), v, P + " Table 3", 0)
    same = res.ranking["same_pair"]
    is_notebooks = float(same == published.SAME_PAIR_NOTEBOOK)
    c.add(f"fixed 'average' pair is {same[0]}+{same[1]}", is_notebooks, 1.0, NB + " (h_107, h_101)", 0)
    m = res.ranking["metrics"]
    for metric in ("r", "QWK", "R2", "degradation", "PRMSE"):
        rho = float(np.corrcoef(m["true_rank"], m[f"{metric}_rank"])[0, 1])
        c.add(f"rank correlation with the true ranking, {metric} (different pairs)", rho, None, "", None)
    return c


def _vs_table4(res: PrmseResults) -> Comparison:
    c = Comparison()
    assert res.table4 is not None  # compare() asks for it only then
    cats = list(res.dataset.settings.rater_categories)
    for pct in published.TABLE4_PERCENTAGES:
        if pct not in res.table4.index:
            continue
        for cat, in_notebook, in_paper in zip(cats, published.TABLE4_NOTEBOOK[pct], published.TABLE4_PAPER[pct]):
            _both(
                c, f"{pct:g}% double-scored, {cat}", float(res.table4.loc[pct, cat]), in_notebook, in_paper, "Table 4"
            )
    return c
