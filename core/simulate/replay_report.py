"""The report of ``easl simulate replay`` (:mod:`core.simulate.replay`): CSV tables, PNG figures and a Markdown
report of what a project manager needs to choose a method and a budget. Where a method saves nothing the report
says so, from the intervals. The lines of the budgets (:func:`budget_lines`) are the same on the terminal and in the
report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.simulate.replay import MIN_SEEDS_FOR_INTERVAL, grid_of, on_grid, seed_mean
from easl_toolkit.core.simulate.replay_data import FLAGS, TRUSTED_AGREEMENT, Ratings, flag_summary
from easl_toolkit.core.simulate.report import PALETTE, Report, new_figure

METHOD_LABELS = {"da": "DA", "da-z": "DA (z-scores)", "easl": "EASL (paper)", "aware": "aware", "ra": "RA"}
_COLUMNS = ["target", "method", "budget", "ratio_to_da"] + [
    f"saved_vs_{ref}{end}" for ref in ("da", "da-z") for end in ("", "_low", "_high")
]


def label(method: str) -> str:
    """The name a report gives a method."""
    return METHOD_LABELS.get(method, method)


def curve_figure(result: dict[str, Any], batch: float, targets: tuple[float, ...]) -> Any:
    """Spearman and Kendall with the truth against scores per item: the seed mean per method, the 5-95% band over
    seeds (3 seeds or more) and the targets (dashed). The vertical range holds every curve, band and target."""
    curves = result["curves"]
    grid = grid_of(curves, batch)
    fig, axes = new_figure(2, width=4.6, height=3.4)
    for ax, value in zip(axes, ("spearman", "kendall")):
        shown: list[float] = list(targets) if value == "spearman" else []
        for k, (method, mat) in enumerate(on_grid(curves, value, grid).items()):
            color = PALETTE[k % len(PALETTE)]
            mean = seed_mean(mat)
            ax.plot(grid, mean, color=color, label=label(method))
            shown += mean[np.isfinite(mean)].tolist()
            cols = np.isfinite(mat).sum(axis=0) >= 3
            if cols.any():
                lo, hi = _finite_band(mat[:, cols])
                ax.fill_between(grid[cols], lo, hi, color=color, alpha=0.15, lw=0)
                shown += [float(np.min(lo)), float(np.max(hi))]
        if value == "spearman":
            for t in targets:
                ax.axhline(t, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("scores per item")
        ax.set_ylabel(value.capitalize())
        if shown:
            pad = 0.02 * max(max(shown) - min(shown), 0.05)
            ax.set_ylim(min(shown) - pad, min(1.0, max(shown)) + pad)
    axes[0].legend(fontsize=7, loc="lower right")
    return fig


def _finite_band(mat: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """The 5% and 95% percentiles over seeds (rows) of the finite values of each column (every column has some)."""
    cols = [col[np.isfinite(col)] for col in mat.T]
    lo = np.array([np.percentile(c, 5) for c in cols])
    hi = np.array([np.percentile(c, 95) for c in cols])
    return lo, hi


def flag_figure(flags: pd.DataFrame) -> Any:
    """Each annotator's agreement over all their ratings against the share of campaigns that flagged them."""
    fig, axes = new_figure(1, width=5.0, height=3.4)
    ax = axes[0]
    never = (flags[list(FLAGS)] == 0).all(axis=1)
    ax.scatter(flags.loc[never, "agreement_all"], np.zeros(int(never.sum())), s=10, color="lightgrey", label="never")
    for k, name in enumerate(FLAGS):
        some = flags[name] > 0
        ax.scatter(flags.loc[some, "agreement_all"], flags.loc[some, name], s=14, color=PALETTE[k], label=name)
    ax.axvline(TRUSTED_AGREEMENT, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("agreement over all ratings (r with the others' item means)")
    ax.set_ylabel("share of campaigns flagged")
    ax.legend(fontsize=7)
    return fig


def reliability_lines(reliability: pd.DataFrame) -> list[str]:
    """The split-half reliability of the truth, said as what it is (:func:`core.simulate.replay.split_half`): a
    line of figures and a line of what they mean."""
    rho, r = float(reliability["spearman"].mean()), float(reliability["pearson"].mean())
    if not np.isfinite(r):
        bound = "undefined: the truth or the pool has no spread"
    else:
        bound = f"error-free scores: r about {np.sqrt(r):.3f}" if r > 0 else "the halves do not agree at all"
    return [
        f"split-half reliability of the truth: Spearman {rho:.3f}, Pearson {r:.3f}",
        f"  (pool vs held-out item means; no ceiling; {bound})",
    ]


def best_line(best: pd.DataFrame) -> str:
    """The best seed-mean Spearman each method reached and where, best first."""
    rows = best.dropna(subset=["best"]).sort_values("best", ascending=False, kind="stable")
    parts = [f"{label(str(b.method))} {b.best:.3f} ({b.at:.2f})" for b in rows.itertuples()]
    return "best Spearman reached (scores per item): " + ", ".join(parts)


def targets_line(targets: tuple[float, ...], from_data: bool) -> str:
    """Which targets were used and where they come from."""
    shown = ", ".join(f"{t:g}" for t in targets) or "none"
    if from_data:
        return f"targets, chosen below the best Spearman reached (--targets to choose others): {shown}"
    return f"targets: {shown}"


def few_runs_warning(n_seeds: int) -> str | None:
    """A warning when the seeds are too few for the bootstrap intervals printed (:data:`MIN_SEEDS_FOR_INTERVAL`)."""
    if n_seeds >= MIN_SEEDS_FOR_INTERVAL:
        return None
    return (
        f"warning: {n_seeds} run{'s' if n_seeds != 1 else ''} are too few for the 95% intervals below (they resample "
        f"{n_seeds} seed{'s' if n_seeds != 1 else ''} and come out far too narrow); use --runs "
        f"{MIN_SEEDS_FOR_INTERVAL} or more (20 by default)"
    )


def _pct(x: float) -> str:
    """A signed whole percentage, ``+0`` for a value that rounds to zero (never ``-0``)."""
    return f"{int(round(x)):+d}" if np.isfinite(x) else "n/a"


def _method_line(row: Any, da_budget: float, best: pd.DataFrame) -> str:
    """One method's budget to one target, its ratio to DA's and its saving."""
    name = f"{label(str(row.method)):<14}"
    if not np.isfinite(row.budget):
        top = best.set_index("method").loc[row.method]
        return f"  {name} not reached within {top.budget:.3g} scores per item (best {top.best:.3f})"
    text = f"  {name} {row.budget:5.2f}"
    if row.method == "da":
        return text
    ratio = getattr(row, "ratio_to_da", np.nan)
    if np.isfinite(ratio):
        return (
            f"{text}  {ratio:.2f}x DA  {_pct(row.saved_vs_da)}% saved, 95% interval "
            f"[{_pct(row.saved_vs_da_low)}, {_pct(row.saved_vs_da_high)}]"
        )
    if np.isfinite(da_budget):
        least = 100 * (1 - row.budget / da_budget)
        return f"{text}  DA did not reach it within {da_budget:.3g}: {least:.0f}% saved or more"
    return text


def budget_lines(budget: pd.DataFrame, best: pd.DataFrame) -> list[str]:
    """Per target, a heading and one line per method: the scores per item to reach it, the ratio to DA's and the
    % saved against DA with its interval (a method that did not reach it: how far it got)."""
    lines = []
    da_budget = float(best.set_index("method")["budget"].get("da", np.nan))
    for target, rows in budget.groupby("target", sort=True):
        lines.append(f"Spearman {target:g}: scores per item to reach it (vs DA: ratio, % saved)")
        lines += [_method_line(row, da_budget, best) for row in rows.itertuples()]
    return lines


def summary_lines(result: dict[str, Any], n_seeds: int) -> list[str]:
    """What the terminal prints after a replay: the truth's reliability, the best reached, the targets, a warning
    when the seeds are too few, and :func:`budget_lines`."""
    lines = [
        *reliability_lines(result["reliability"]),
        best_line(result["best"]),
        targets_line(result["targets"], result["targets_from_data"]),
    ]
    warning = few_runs_warning(n_seeds)
    return lines + ([warning] if warning else []) + budget_lines(result["budget"], result["best"])


@dataclass(frozen=True)
class ReplayRun:
    """What :func:`write_report` says of the run: the seeds run, a batch's share of the items' scores (``batch``:
    scores per item in one batch, where the curves are drawn), the campaign settings in words, a notice on the data
    (None: none) and the run time in seconds (None: not said)."""

    n_seeds: int
    batch: float
    settings: str
    notice: str | None = None
    runtime: float | None = None


def write_report(result: dict[str, Any], r: Ratings, out_dir: str | Path, command: str, run: ReplayRun) -> Report:
    """Write ``report.md``, ``tables/*.csv`` and ``figures/*.png`` of a :func:`core.simulate.replay.run_replay`
    result (module docstring); ``run``: :class:`ReplayRun`."""
    n_seeds, batch, settings, notice, runtime = run.n_seeds, run.batch, run.settings, run.notice, run.runtime
    rep = Report(out_dir, f"Replay of real ratings: {r.source}", command)
    curves, reliability = result["curves"], result["reliability"]
    methods = ", ".join(label(m) for m in dict.fromkeys(curves["method"]))
    rep.paragraph(
        f"Data: {r.size:,} ratings of {r.n_items:,} items by {r.n_annotators:,} annotators, scale "
        f"{r.scale[0]:g}-{r.scale[1]:g}."
        + (f" {notice}." if notice else "")
        + f" Per item and seed, a random half of its ratings is held out and their mean is the truth; the "
        f"campaign draws from the rest, a HIT going to one real annotator who rated all its items (else each item "
        f"to a random unused rater of its own). Methods: {methods}; {n_seeds} seeds, each one split and one stream "
        f"of annotators for every method; {settings}." + (f" Run time: {runtime:.1f} s." if runtime is not None else "")
    )
    sd = reliability["spearman"].std(ddof=1) if len(reliability) > 1 else 0.0
    rho, pearson = float(reliability["spearman"].mean()), float(reliability["pearson"].mean())
    rep.paragraph(
        f"The truth is a mean of noisy ratings too. Its split-half reliability, the correlation of the pool's item "
        f"means with the held-out means (two disjoint halves of each item's ratings), is Spearman {rho:.3f} (sd "
        f"{sd:.3f} over seeds), Pearson {pearson:.3f} (`tables/reliability.csv`). It is not a ceiling: a method whose "
        "curve passes it estimates the items better than the mean of every rating it could draw (a model that "
        "corrects annotators can). An error-free estimate of the items would correlate about the square root of "
        f"the reliability with this truth (r = {np.sqrt(max(pearson, 0.0)):.3f}; Spearman's correction for "
        "attenuation)."
    )
    rep.paragraph(best_line(result["best"]) + " (`tables/best.csv`).")
    rep.table(curves, "curves", show=False)
    rep.table(result["mean_curves"], "mean_curves", show=False)
    rep.table(reliability, "reliability", show=False)
    rep.table(result["best"], "best", show=False)
    rep.figure(
        curve_figure(result, batch, result["targets"]),
        "curves",
        f"Spearman and Kendall with the truth against scores per item (mean of {n_seeds} seeds, band 5-95%); "
        "dashed: the targets.",
    )
    _budget_section(rep, result, n_seeds)
    _flag_section(rep, result.get("flags"))
    rep.write()
    return rep


def _budget_section(rep: Report, result: dict[str, Any], n_seeds: int) -> None:
    """The budget to each target, the savings against DA and where a method saves nothing."""
    budget, best = result["budget"], result["best"]
    rep.heading("Annotations to reach each target, and annotations saved")
    rep.paragraph(targets_line(result["targets"], result["targets_from_data"]).capitalize() + ".")
    warning = few_runs_warning(n_seeds)
    if warning:
        rep.paragraph(f"**{warning.capitalize()}.**")
    shown = budget[[c for c in _COLUMNS if c in budget.columns]].copy()
    shown.insert(2, "label", shown["method"].map(label))
    rep.table(
        shown,
        "budget",
        caption="Scores per item where the seed-mean Spearman curve first reaches the target (NaN: not within the "
        "budget); ratio to DA's; % saved vs DA and vs DA with z-scores, 95% paired bootstrap interval over seeds",
        digits=2,
    )
    rep.parts += ["```text", *budget_lines(budget, best), "```", ""]
    da = budget[budget["method"] == "da"].set_index("target")["budget"]
    none = [
        f"{label(str(row.method))} at {row.target:g}"
        for row in budget.itertuples()
        if row.method != "da"
        and (
            not np.isfinite(row.budget)
            or (np.isfinite(da.get(row.target, np.nan)) and not getattr(row, "saved_vs_da_low", np.nan) > 0)
        )
    ]
    rep.paragraph(
        "Where a method saves nothing against DA (it did not reach the target, or the interval of its savings "
        "reaches 0 or below): " + (", ".join(none) if none else "nowhere") + "."
    )


def _flag_section(rep: Report, flags: pd.DataFrame | None) -> None:
    """The annotator flags of the ``aware`` campaigns beside each annotator's agreement over all ratings."""
    if flags is not None and len(flags):
        summary = flag_summary(flags)
        rep.heading("Annotator flags against agreement over all ratings")
        rep.paragraph(
            f"The annotator-aware model's flags at the end of each campaign, beside each annotator's agreement over "
            f"all their ratings (r with the other annotators' item means). {summary['trusted']} of "
            f"{summary['annotators']} annotators agree at r >= {TRUSTED_AGREEMENT:g}; flagged `random` in at least "
            f"one campaign: {summary['random_ever']} ({summary['random_trusted']} of them at r >= "
            f"{TRUSTED_AGREEMENT:g}); `noisy`: {summary['noisy_ever']}; `collapsed`: {summary['collapsed_ever']}. "
            f"Per campaign on average: {summary['random_mean_per_campaign']:.2f} `random`, "
            f"{summary['noisy_mean_per_campaign']:.2f} `noisy`."
        )
        rep.figure(flag_figure(flags), "flags", "Share of campaigns that flagged each annotator, by agreement.")
        rep.table(flags, "flags", show=False)
        rep.table(
            flags.head(15),
            "flags_lowest",
            caption="The 15 annotators of lowest agreement over all ratings (every annotator: `tables/flags.csv`)",
            digits=3,
        )
        pd.DataFrame([summary]).pipe(rep.table, "flag_summary", show=False)
