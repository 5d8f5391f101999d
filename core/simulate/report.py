"""Writing a simulation's outputs: CSV tables, PNG figures and one Markdown report, in an output directory.

Layout written by :class:`Report`::

    OUT/report.md        the report (each reproduced number next to the paper's, and the command that made it)
    OUT/tables/*.csv     every table of the report, full precision
    OUT/figures/*.png    every figure of the report

Every file is written to a temporary name in the same directory and renamed into place, so a reader never sees a
half-written file; the report itself is written last.
"""

from __future__ import annotations

import io
import math
import os
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core.errors import UserError

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
        self.rows.append(
            {
                "quantity": quantity,
                "reproduced": reproduced,
                "published": published,
                "difference": diff,
                "tolerance": tolerance,
                "within_tolerance": within,
                "source": source,
            }
        )

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame (the CSV written for the report)."""
        return pd.DataFrame(
            self.rows,
            columns=["quantity", "reproduced", "published", "difference", "tolerance", "within_tolerance", "source"],
        )


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
            raise UserError(f"Cannot create the output directory {self.out}: {exc.strerror}.") from exc
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
        path = self.out / "tables" / f"{name}.csv"
        _atomic_write_bytes(path, df.to_csv(index=index).encode())
        self.files.append(path)
        if show:
            if caption:
                self.parts += [f"*{caption}* (`tables/{name}.csv`)", ""]
            self.parts += [markdown_table(df, digits=digits, index=index), ""]
        return path

    def figure(self, fig: Figure, name: str, caption: str, dpi: int = 110) -> Path:
        """Save a matplotlib ``Figure`` as ``figures/<name>.png`` and add it to the report."""
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        path = self.out / "figures" / f"{name}.png"
        _atomic_write_bytes(path, buf.getvalue())
        self.files.append(path)
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
        path = self.out / "report.md"
        _atomic_write_bytes(path, ("\n".join(self.parts).rstrip() + "\n").encode())
        self.files.append(path)
        return path
