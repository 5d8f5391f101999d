"""The ``easl evaluate --output DIR`` files: RSMTool-like CSV tables, the JSON object, a Markdown report, PNGs.

Everything is written to a temporary directory next to DIR first and moved into DIR only when complete, so an
error never leaves a half-written report.
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

from core.metrics.data import round_to_categories
from core.metrics.intervals.analytic import Interval, json_number
from core.metrics.output_schema import SCHEMA_VERSION, as_schema
from core.metrics.registry import SHORT
from core.metrics.results import Evaluation
from core.metrics.write.plots import confusion_heatmap, prmse_plot, scatter_plot


def to_json_text(data: Mapping[str, Any]) -> str:
    """JSON text of the evaluation object: numpy scalars as Python numbers, any remaining NaN/inf as null (strict
    JSON)."""
    text = json.dumps(data, default=lambda x: x.item())
    return json.dumps(json.loads(text, parse_constant=lambda _: None), indent=2, allow_nan=False)


def _fmt(v: object) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, (float, np.floating)):
        return "n/a" if not np.isfinite(v) else f"{v:.3f}"
    return str(v)


def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)


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
    out = [
        f"# Evaluation of {source}",
        "",
        f"{ev.n_responses} responses evaluated ({ev.n_dropped} dropped), scale [{ev.scale.min:g}, "
        f"{ev.scale.max:g}], human columns: {', '.join(ev.human_columns)}.",
        "",
    ]
    if ev.dropped:
        out += ["Dropped responses:", ""] + [f"- {k}: {v}" for k, v in ev.dropped.items()] + [""]
    out += ["## Observed scores (against the first human column)", "", _md_table(tables["eval_short"]), ""]
    if "consistency" in tables:
        out += ["## Human-human agreement", "", _md_table(tables["consistency"][["human_1", "human_2", *SHORT]]), ""]
    out += ["## True scores (PRMSE)", "", _md_table(tables["true_score_eval"]), ""]
    rows = []
    for s, entry in ev.systems.items():
        prmse = entry.true_score["prmse"]
        if ev.bootstrapped and prmse.ci is not None:
            rows.append(
                f"- {s}: PRMSE {_fmt(prmse.value)}, {ev.confidence:.0%} bootstrap interval "
                f"[{_fmt(prmse.ci.low)}, {_fmt(prmse.ci.high)}]"
            )
    if rows:
        out += rows + [""]
    for key, table in tables.items():
        if key.startswith("fairness_"):
            out += [f"## Fairness by {key[len('fairness_') :]}", "", _md_table(table), ""]
    out += ["## Figures", ""]
    for title, name in figures:
        out += [f"### {title}", "", f"![{title}]({name})", ""]
    if ev.notes:
        out += ["## Notes", ""] + [f"- {n}" for n in ev.notes] + [""]
    out += ["Tables: " + ", ".join(f"`{k}.csv`" for k in tables) + "; full results: `evaluation.json`.", ""]
    return "\n".join(out)
