"""Writing a simulation's outputs: CSV tables, PNG figures and one Markdown report, in an output directory.

Layout written by :class:`Report`::

    OUT/report.md        the report (each reproduced number next to the paper's, and the command that made it)
    OUT/tables/*.csv     every table of the report, full precision
    OUT/figures/*.png    every figure of the report

Every file is written atomically, the report itself last. The figure builders below return a
``matplotlib.figure.Figure`` built on ``Figure`` objects directly (Agg canvas, not ``pyplot``), so they need no
display and leak no state; :meth:`Report.figure` saves it as PNG.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.outputs import atomic_outputs


def format_number(value: Any, digits: int = 3) -> str:
    """A number for a Markdown cell: fixed ``digits`` decimals for floats, as-is for ints and text; NaN -> "n/a"."""
    if value is None:
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return "n/a" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def markdown_table(df: pd.DataFrame, digits: int = 3, index: bool = False) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (floats with ``digits`` decimals)."""
    frame = df.reset_index() if index else df
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in frame.itertuples(index=False):
        cells = [format_number(v, digits).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclass
class Comparison:
    """Reproduced values next to published ones.

    Each row: quantity, reproduced value, published value, source of the published value, tolerance, and whether
    ``|reproduced - published| <= tolerance`` (blank when there is no published value).
    """

    COLUMNS = ("quantity", "reproduced", "published", "difference", "tolerance", "within_tolerance", "source")
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self, quantity: str, reproduced: float, published: float | None, source: str, tolerance: float | None
    ) -> None:
        """Add one row (``published``/``tolerance`` None: a number the paper does not report)."""
        diff = (
            None
            if published is None or reproduced is None or not np.isfinite(reproduced)
            else float(reproduced) - float(published)
        )
        within = None if diff is None or tolerance is None else abs(diff) <= tolerance + 1e-12
        values = (quantity, reproduced, published, diff, tolerance, within, source)
        self.rows.append(dict(zip(self.COLUMNS, values)))

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame (the CSV written for the report)."""
        return pd.DataFrame(self.rows, columns=list(self.COLUMNS))


class Report:
    """Collects sections, tables and figures and writes them to an output directory.

    Parameters
    ----------
    out_dir : path of the output directory (created if missing).
    title : the report's title.
    command : the command line that made it (shown at the top of the report).
    """

    def __init__(self, out_dir: str | Path, title: str, command: str) -> None:
        self.out = Path(out_dir)
        try:
            (self.out / "tables").mkdir(parents=True, exist_ok=True)
            (self.out / "figures").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EaslError(f"Cannot create the output directory {self.out}: {exc.strerror}.") from exc
        self.parts: list[str] = [f"# {title}", "", f"Command: `{command}`", ""]
        self.files: list[Path] = []

    def heading(self, text: str, level: int = 2) -> None:
        """A section heading."""
        self.parts += ["#" * level + " " + text, ""]

    def paragraph(self, text: str) -> None:
        """A paragraph of Markdown text."""
        self.parts += [text.strip(), ""]

    def table(
        self, df: pd.DataFrame, name: str, caption: str = "", digits: int = 3, show: bool = True, index: bool = False
    ) -> Path:
        """Write ``df`` to ``tables/<name>.csv`` (full precision) and, if ``show``, add it to the report."""
        path = self._save(self.out / "tables" / f"{name}.csv", df.to_csv(index=index).encode())
        if show:
            if caption:
                self.parts += [f"*{caption}* (`tables/{name}.csv`)", ""]
            self.parts += [markdown_table(df, digits=digits, index=index), ""]
        return path

    def figure(self, fig: Figure, name: str, caption: str, dpi: int = 110) -> Path:
        """Save a matplotlib ``Figure`` as ``figures/<name>.png`` and add it to the report."""
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        path = self._save(self.out / "figures" / f"{name}.png", buf.getvalue())
        self.parts += [f"![{caption}](figures/{name}.png)", "", f"*{caption}*", ""]
        return path

    def key_values(self, values: dict[str, Any], name: str, columns: tuple[str, str], **table: Any) -> Path:
        """A two-column table of ``values`` (e.g. run time per step) as ``tables/<name>.csv``."""
        return self.table(pd.DataFrame([{columns[0]: k, columns[1]: v} for k, v in values.items()]), name, **table)

    def settings(self, settings: Any, extra: dict[str, Any] | None = None) -> Path:
        """The closing "Settings" section: every field of the dataclass ``settings`` (tuples shown as lists), then
        ``extra``, as text in ``tables/settings.csv``."""
        values = {f.name: getattr(settings, f.name) for f in fields(settings)} | (extra or {})
        self.heading("Settings")
        return self.key_values(
            {k: str(list(v) if isinstance(v, tuple) else v) for k, v in values.items()},
            "settings",
            ("setting", "value"),
        )

    def write(self) -> Path:
        """Write ``report.md`` (last, after every table and figure) and return its path."""
        return self._save(self.out / "report.md", ("\n".join(self.parts).rstrip() + "\n").encode())

    def _save(self, path: Path, data: bytes) -> Path:
        """Write ``data`` to ``path`` under a temporary name renamed into place (:func:`core.outputs.atomic_outputs`:
        a reader never sees half a file) and list it in :attr:`files`."""
        with atomic_outputs([path]) as (tmp,):
            Path(tmp).write_bytes(data)
        self.files.append(path)
        return path


PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def new_figure(
    n_panels: int, width: float = 3.6, height: float = 3.3, rows: int = 1, title: str = ""
) -> tuple[Figure, NDArray[Any]]:
    """A figure with ``n_panels`` axes on ``rows`` rows (constrained layout, Agg canvas), titled ``title`` if given."""
    cols = int(np.ceil(n_panels / rows))
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    if title:
        fig.suptitle(title)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False).ravel())
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


@dataclass(frozen=True)
class Groups:
    """The groups of a figure by group: one position per level of column ``x`` (in ``x_order``, labelled ``x_labels``,
    default the levels), and within it one box or one colour per level of column ``hue`` (in ``hue_order``; None:
    one)."""

    x: str
    x_order: Sequence[Any]
    hue: str | None = None
    hue_order: Sequence[str] | None = None
    x_labels: Sequence[str] | None = None


@dataclass(frozen=True)
class Style:
    """How a figure is drawn: a red reference line per panel (``hlines``: panel column -> value), or one dotted line
    in every panel (``hline``), the y limits (None: automatic), the axis labels and the title, markers on the points
    (:func:`lines`), and every column in one shared panel instead of one panel each (:func:`lines`)."""

    hlines: dict[str, float] | None = None
    hline: float | None = None
    ylim: tuple[float, float] | None = None
    xlabel: str = ""
    ylabel: str = ""
    title: str = ""
    markers: bool = True
    shared_panel: bool = False


def strip_by_group(df: pd.DataFrame, panels: Sequence[str], groups: Groups, style: Style = Style()) -> Figure:
    """One panel per column in ``panels``: jittered points of that column for each ``groups.x`` level (x axis),
    coloured by ``groups.hue``; ``style.hlines`` draws a red reference line per panel."""
    group, order, hue, hue_order = groups.x, groups.x_order, groups.hue, groups.hue_order
    hlines, title = style.hlines, style.title
    fig, axes = new_figure(len(panels), title=title)
    jitter = np.random.default_rng(0)
    hues = list(hue_order) if hue and hue_order is not None else [None]
    for ax, col in zip(axes, panels):
        for h_i, h in enumerate(hues):
            sub = df if h is None else df[df[hue] == h]
            offset = 0.0 if len(hues) == 1 else (h_i - (len(hues) - 1) / 2) * 0.25
            for g_i, g in enumerate(order):
                vals = sub.loc[sub[group] == g, col].to_numpy(dtype=float)
                x = g_i + offset + jitter.uniform(-0.08, 0.08, len(vals))
                label = str(h) if (g_i == 0 and h is not None) else None
                ax.scatter(x, vals, s=9, alpha=0.7, color=PALETTE[h_i % len(PALETTE)], label=label)
        if hlines and col in hlines:
            ax.axhline(hlines[col], color="red", lw=1.2)
        ax.set_xticks(range(len(order)), list(order), rotation=30)
        ax.set_title(col)
        ax.set_xlabel(group.replace("_", " "))
        ax.grid(alpha=0.3)
    if hue:
        axes[0].legend(fontsize=8, title=hue.replace("_", " "), title_fontsize=8)
    return fig


def box_by_group(
    df: pd.DataFrame, panels: Sequence[str], groups: Groups, dots: pd.DataFrame | None = None, style: Style = Style()
) -> Figure:
    """One panel per column in ``panels``: box plots of that column per ``groups.x`` level; ``dots`` (same columns)
    adds red points (e.g. the ranks when every system is evaluated on the same rater pair); ``style``: the y label
    and the title."""
    group, order, ylabel, title = groups.x, groups.x_order, style.ylabel, style.title
    fig, axes = new_figure(len(panels), width=3.0, title=title)
    for ax, col in zip(axes, panels):
        data = [df.loc[df[group] == g, col].to_numpy(dtype=float) for g in order]
        ax.boxplot(
            data,
            positions=range(len(order)),
            widths=0.6,
            patch_artist=True,
            boxprops={"facecolor": "#d9d9d9"},
            medianprops={"color": "black"},
        )
        if dots is not None:
            for g_i, g in enumerate(order):
                vals = dots.loc[dots[group] == g, col].to_numpy(dtype=float)
                ax.scatter(np.full(len(vals), g_i), vals, color="red", s=14, zorder=3)
        ax.set_xticks(range(len(order)), list(order), rotation=60)
        ax.set_title(col)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    return fig


def grouped_boxes(df: pd.DataFrame, value: str, groups: Groups, ax: Axes, style: Style = Style()) -> None:
    """Box plots of ``value`` for each ``groups.x`` level, side by side for each ``groups.hue`` level, on ``ax``;
    ``style.hline``: a dotted reference line, ``style.ylim``: the y limits."""
    hline, ylim = style.hline, style.ylim
    x, x_order, hue, hue_order = groups.x, groups.x_order, groups.hue, list(groups.hue_order or [])
    k = len(hue_order)
    width = 0.8 / k
    for h_i, h in enumerate(hue_order):
        data = [df.loc[(df[x] == xv) & (df[hue] == h), value].to_numpy(dtype=float) for xv in x_order]
        pos = np.arange(len(x_order)) - 0.4 + width * (h_i + 0.5)
        bp = ax.boxplot(
            data,
            positions=pos,
            widths=width * 0.9,
            patch_artist=True,
            showfliers=True,
            flierprops={"markersize": 2},
            medianprops={"color": "black"},
        )
        for patch in bp["boxes"]:
            patch.set_facecolor(PALETTE[h_i % len(PALETTE)])
        ax.plot([], [], color=PALETTE[h_i % len(PALETTE)], lw=6, label=str(h))
    if hline is not None:
        ax.axhline(hline, color="black", ls=":")
    if ylim is not None:
        ax.set_ylim(*ylim)
    labels = groups.x_labels if groups.x_labels is not None else x_order
    ax.set_xticks(range(len(x_order)), [str(v) for v in labels])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def lines(
    df: pd.DataFrame,
    x: str,
    panels: Sequence[str],
    series: tuple[str | None, Sequence[str] | None] = (None, None),
    style: Style = Style(),
) -> Figure:
    """Line plots of each column in ``panels`` against ``x``; ``series = (column, levels)``: one line per level of
    that column, in that order (None: one line); ``style``: :class:`Style` (``hlines``, the labels, the title,
    ``markers``, ``shared_panel``).

    ``style.shared_panel``: draw every column of ``panels`` in one panel (one line each) instead of one panel each.
    """
    by, series_order = series
    shared_panel, hlines, title = style.shared_panel, style.hlines, style.title
    if shared_panel:
        fig, axes = new_figure(1, width=6.0, height=4.2)
        axes[0].set_title(title)
        groups = [list(panels)]
    else:
        fig, axes = new_figure(len(panels), title=title)
        groups = [[col] for col in panels]
    levels = list(series_order) if by and series_order is not None else [None]
    for ax, cols in zip(axes, groups):
        for i, (col, lev) in enumerate((col, lev) for col in cols for lev in levels):
            sub = df if lev is None else df[df[by] == lev]
            label = col if shared_panel else None if lev is None else str(lev)
            line, colour = "-" if i < len(PALETTE) else "--", PALETTE[i % len(PALETTE)]
            ax.plot(sub[x], sub[col], line, marker="o" if style.markers else None, ms=3, color=colour, label=label)
        if hlines and cols[0] in hlines:
            ax.axhline(hlines[cols[0]], color="red", lw=1.2)
        if not shared_panel:
            ax.set_title(cols[0])
        ax.set_xlabel(style.xlabel or x)
        ax.set_ylabel(style.ylabel)
        ax.grid(alpha=0.3)
    if shared_panel:
        axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    elif by:
        axes[0].legend(fontsize=8)
    return fig


def band_lines(
    curves: dict[str, pd.DataFrame], x: str, panels: Sequence[tuple[str, str, str]], style: Style = Style()
) -> Figure:
    """Mean curves with shaded bands, one panel per (mean column, low column, high column) triple in ``panels``,
    one line per key of ``curves``; ``style``: the title, the x label and a dotted line in every panel (``hline``)."""
    title, xlabel, hline = style.title, style.xlabel, style.hline
    fig, axes = new_figure(len(panels), width=4.6, height=3.6, rows=len(panels), title=title)
    for ax, (mid, lo, hi) in zip(axes, panels):
        for i, (name, cur) in enumerate(curves.items()):
            color = PALETTE[i % len(PALETTE)]
            ax.plot(cur[x], cur[mid], marker="o", ms=3, color=color, label=name)
            ax.fill_between(cur[x], cur[lo], cur[hi], color=color, alpha=0.2)
        if hline is not None:
            ax.axhline(hline, color="gray", ls=":", lw=1)
        ax.set_ylabel(mid.removesuffix("_mean").replace("_", " ").capitalize())
        ax.set_xlabel(xlabel or x)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


def histograms(
    values: dict[str, NDArray[Any]], bins: int = 5, value_range: tuple[float, float] = (0.0, 1.0), title: str = ""
) -> Figure:
    """One histogram panel per key of ``values`` on common bins (the paper's Figures 7 and 10 use 5 bins)."""
    fig, axes = new_figure(len(values), width=2.8, height=2.8, title=title)
    edges = np.linspace(value_range[0], value_range[1], bins + 1)
    for i, (ax, (name, vals)) in enumerate(zip(axes, values.items())):
        clipped = np.clip(np.asarray(vals, dtype=float), *value_range)
        ax.hist(clipped, bins=edges, color=PALETTE[i % len(PALETTE)], edgecolor="black")
        ax.set_title(name)
        ax.set_xlabel("scalar value")
    return fig


def heatmaps(matrices: Sequence[NDArray[Any]], titles: Sequence[str], title: str = "", rows: int = 1) -> Figure:
    """Heat maps of square matrices (e.g. match quality over items ordered by the oracle), shared colour scale."""
    fig, axes = new_figure(len(matrices), width=3.0, height=3.0, rows=rows, title=title)
    vmax = max(float(np.nanmax(m)) for m in matrices) if matrices else 1.0
    image = None
    for ax, mat, name in zip(axes, matrices, titles):
        image = ax.imshow(mat, origin="lower", cmap="viridis", vmin=0.0, vmax=vmax, interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.8, label="match quality")
    return fig
