"""The last stage of ``easl evaluate``, the ``--output DIR`` files: RSMTool-like CSV tables, the JSON object, a
Markdown report, PNGs (human vs system scatter, confusion heat map, PRMSE intervals).

Everything is written to a temporary directory next to DIR first and moved into DIR only when complete, so an
error never leaves a half-written report. Figures are drawn on ``matplotlib.figure.Figure`` with an Agg canvas, so
no global backend is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray

from easl_toolkit.core.metrics.data import round_to_categories
from easl_toolkit.core.metrics.intervals.analytic import Interval, json_number
from easl_toolkit.core.metrics.output_schema import SCHEMA_VERSION, as_schema
from easl_toolkit.core.metrics.results import Evaluation
from easl_toolkit.core.metrics.sections import GLOSSARY_LINK, Section, glossary, notes, sections


def to_json_text(data: Mapping[str, Any]) -> str:
    """JSON text of the evaluation object: numpy scalars as Python numbers, any remaining NaN/inf as null (strict
    JSON)."""
    text = json.dumps(data, default=lambda x: x.item())
    return json.dumps(json.loads(text, parse_constant=lambda _: None), indent=2, allow_nan=False)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|") or " "


def _md_section(section: Section) -> list[str]:
    """One section as Markdown: its family's heading, the paragraph above it, the table, the caption."""
    out = [f"## {section.family}", ""] if section.family else []
    if section.intro:
        out += [section.intro, ""]
    if section.family != section.title:
        out += [f"### {section.title}", ""]
    out += ["| " + " | ".join(section.columns) + " |", "|" + "|".join("---" for _ in section.columns) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in section.rows]
    return [*out, "", section.caption, ""]


def write_output(
    ev: Evaluation, directory: Path, *, source: str, seed: int = 0, schema: int = SCHEMA_VERSION
) -> list[Path]:
    """Write the tables, ``evaluation.json`` (layout ``schema``), ``report.md`` and the figures into ``directory``."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".easl-evaluate-", dir=directory.parent))
    try:
        names = []
        tables = ev.tables
        for name, table in tables.items():
            table.to_csv(tmp / f"{name}.csv", index=False)
            names.append(f"{name}.csv")
        (tmp / "evaluation.json").write_text(to_json_text(as_schema(ev.to_json(), schema)) + "\n")
        names.append("evaluation.json")
        figures = []
        h1 = ev.human[:, 0]
        cats = ev.scale.category_array if ev.scale.is_categorical else None
        for s_name, m in ev.system.items():
            safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in s_name)
            f = scatter_plot(
                h1, m, tmp / f"scatter_{safe}.png", system_name=s_name, human_name=ev.human_names[0], seed=seed
            )
            figures.append((f"{s_name}: human vs system", f.name))
            if cats is not None:
                f = confusion_heatmap(
                    round_to_categories(h1, cats),
                    round_to_categories(m, cats),
                    cats,
                    tmp / f"confusion_{safe}.png",
                    system_name=s_name,
                )
                figures.append((f"{s_name}: confusion matrix", f.name))
        est = {s: json_number(e.true_score["prmse"].value) for s, e in ev.systems.items()}
        ints = {s: (e.true_score["prmse"].ci or Interval(np.nan, np.nan))[:2] for s, e in ev.systems.items()}
        f = prmse_plot(est, ints, tmp / "prmse.png", ev.confidence)
        figures.append(("PRMSE with bootstrap interval", f.name))
        (tmp / "report.md").write_text(_markdown(ev, tables, source, figures))
        names.append("report.md")
        names.extend(name for _, name in figures)
        directory.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.replace(tmp / name, directory / name)
        return [directory / name for name in names]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _markdown(ev: Evaluation, tables: dict[str, pd.DataFrame], source: str, figures: list[tuple[str, str]]) -> str:
    """``report.md``: how a project's human raters were built, the sections of the terminal
    (:func:`core.metrics.sections.sections`), the figures, the notes and what every figure means."""
    out = [
        f"# Evaluation of {source}",
        "",
        f"{ev.n_responses} responses evaluated ({ev.n_dropped} dropped), scale [{ev.scale.min:g}, "
        f"{ev.scale.max:g}], human columns: {', '.join(ev.human_columns)}.",
        "",
    ]
    if ev.dropped:
        out += ["Dropped responses:", ""] + [f"- {k}: {v}" for k, v in ev.dropped.items()] + [""]
    if ev.raters is not None:
        out += ["## Human raters", ""] + [f"- {line}" for line in ev.raters.lines()] + [""]
    for section in sections(ev):
        out += _md_section(section)
    out += ["## Figures", ""]
    for title, name in figures:
        out += [f"### {title}", "", f"![{title}]({name})", ""]
    found = notes(ev)
    if found:
        out += ["## Notes", ""] + [f"- {n}" for n in found] + [""]
    out += ["## What each figure means", "", "| figure | what it is |", "|---|---|"]
    out += [f"| {key} | {_md_cell(text)} |" for key, text in glossary(ev)]
    out += ["", f"The formulas and their sources: `{GLOSSARY_LINK}` and `docs/design.md`, section 4.", ""]
    out += ["Tables: " + ", ".join(f"`{k}.csv`" for k in tables) + "; full results: `evaluation.json`.", ""]
    return "\n".join(out)


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
