"""The report of ``easl simulate replay`` (:mod:`core.simulate.replay`): CSV tables, PNG figures and a Markdown
report of what a project manager needs to choose a method and a budget. Where a method saves nothing the report
says so, from the intervals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.simulate.replay import grid_of, on_grid
from core.simulate.replay_data import FLAGS, TRUSTED_AGREEMENT, Ratings, flag_summary
from core.simulate.report import PALETTE, Report, new_figure

METHOD_LABELS = {"da": "DA", "da-z": "DA (z-scores)", "easl": "EASL (paper)", "aware": "aware", "ra": "RA"}
_COLUMNS = ["target", "method", "budget", "ratio_to_da"] + [
    f"saved_vs_{ref}{end}" for ref in ("da", "da-z") for end in ("", "_low", "_high")
]


def label(method: str) -> str:
    """The name a report gives a method."""
    return METHOD_LABELS.get(method, method)


def curve_figure(result: dict[str, Any], batch: float, targets: tuple[float, ...]) -> Any:
    """Spearman and Kendall with the truth against scores per item: the seed mean per method, the 5-95% band over
    seeds, the targets (dashed) and the ceiling (dotted)."""
    curves = result["curves"]
    grid = grid_of(curves, batch)
    fig, axes = new_figure(2, width=4.6, height=3.4)
    for ax, value in zip(axes, ("spearman", "kendall")):
        for k, (method, mat) in enumerate(on_grid(curves, value, grid).items()):
            color = PALETTE[k % len(PALETTE)]
            ax.plot(grid, np.nanmean(mat, axis=0), color=color, label=label(method))
            if mat.shape[0] >= 3:
                lo, hi = np.nanpercentile(mat, [5, 95], axis=0)
                ax.fill_between(grid, lo, hi, color=color, alpha=0.15, lw=0)
        ceiling = float(result["ceiling"][value].mean())
        ax.axhline(ceiling, color="black", lw=0.8, ls=":", label="ceiling (whole pool)")
        if value == "spearman":
            for t in targets:
                ax.axhline(t, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("scores per item")
        ax.set_ylabel(value.capitalize())
        top = float(np.nanmax([ceiling, *targets])) if value == "spearman" else ceiling
        ax.set_ylim(max(0.0, top - 0.35), min(1.0, top + 0.03))
    axes[0].legend(fontsize=7, loc="lower right")
    return fig


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


def headline(budget: pd.DataFrame, method: str = "aware") -> list[str]:
    """One sentence per target: how many of DA's annotations ``method`` needed, with the interval of the savings."""
    lines = []
    for row in budget[budget["method"] == method].itertuples():
        ratio = getattr(row, "ratio_to_da", np.nan)
        if not np.isfinite(row.budget):
            lines.append(f"Spearman {row.target:g}: {label(method)} did not reach it within the budget.")
        elif not np.isfinite(ratio):
            lines.append(
                f"Spearman {row.target:g}: {label(method)} {row.budget:.2f} scores per item; DA did not reach it."
            )
        else:
            lines.append(
                f"Spearman {row.target:g}: {label(method)} needed {ratio:.2f}x DA's annotations "
                f"({row.budget:.2f} vs {row.budget / ratio:.2f} scores per item; "
                f"{row.saved_vs_da:+.0f}% saved, 95% interval "
                f"[{row.saved_vs_da_low:+.0f}, {row.saved_vs_da_high:+.0f}])."
            )
    return lines


def write_report(
    result: dict[str, Any],
    r: Ratings,
    out_dir: str | Path,
    command: str,
    *,
    targets: tuple[float, ...],
    n_seeds: int,
    batch: float,
    settings: str,
    notice: str | None = None,
    runtime: float | None = None,
) -> Report:
    """Write ``report.md``, ``tables/*.csv`` and ``figures/*.png`` of a :func:`core.simulate.replay.run_replay`
    result (module docstring)."""
    rep = Report(out_dir, f"Replay of real ratings: {r.source}", command)
    curves, budget, ceiling = result["curves"], result["budget"], result["ceiling"]
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
    rep.paragraph(
        f"Ceiling (the whole pool's item means against the truth): Spearman {ceiling['spearman'].mean():.3f} "
        f"(sd {ceiling['spearman'].std(ddof=1) if len(ceiling) > 1 else 0.0:.3f} over seeds), Kendall "
        f"{ceiling['kendall'].mean():.3f}. A target above it cannot be reached."
    )
    rep.table(curves, "curves", show=False)
    rep.table(result["mean_curves"], "mean_curves", show=False)
    rep.table(ceiling, "ceiling", show=False)
    rep.figure(
        curve_figure(result, batch, targets),
        "curves",
        f"Spearman and Kendall with the truth against scores per item (mean of {n_seeds} seeds, band 5-95%); "
        "dashed: the targets; dotted: the ceiling.",
    )
    _budget_section(rep, budget)
    _flag_section(rep, result.get("flags"))
    rep.write()
    return rep


def _budget_section(rep: Report, budget: pd.DataFrame) -> None:
    """The budget to each target, the savings against DA and where a method saves nothing."""
    rep.heading("Annotations to reach each target, and annotations saved")
    shown = budget[[c for c in _COLUMNS if c in budget.columns]].copy()
    shown.insert(2, "label", shown["method"].map(label))
    rep.table(
        shown,
        "budget",
        caption="Scores per item where the seed-mean Spearman curve first reaches the target (NaN: not within the "
        "budget); ratio to DA's; % saved vs DA and vs DA with z-scores, 95% paired bootstrap interval over seeds",
        digits=2,
    )
    for line in headline(budget):
        rep.paragraph(line)
    none = [
        f"{label(str(row.method))} at {row.target:g}"
        for row in budget.itertuples()
        if row.method != "da" and not (getattr(row, "saved_vs_da_low", np.nan) > 0)
    ]
    rep.paragraph(
        "Where a method saves nothing against DA (the interval of its savings reaches 0 or below, or the target "
        "was not reached): " + (", ".join(none) if none else "nowhere") + "."
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
