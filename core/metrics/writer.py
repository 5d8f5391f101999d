"""The ``easl evaluate --output DIR`` files: RSMTool-like CSV tables, the JSON object, a Markdown report, PNGs.

Everything is written to a temporary directory next to DIR first and moved into DIR only when complete, so an
error never leaves a half-written report.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from core.metrics.plots import confusion_heatmap, prmse_plot, scatter_plot
from core.metrics.report import SHORT_KEYS, Evaluation, _to_cats


def to_json_text(data: dict) -> str:
    """JSON text of the evaluation object; any remaining NaN/inf becomes null (strict JSON)."""
    def clean(x):
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if isinstance(x, (np.floating, float)):
            return None if not math.isfinite(float(x)) else float(x)
        if isinstance(x, np.integer):
            return int(x)
        return x
    return json.dumps(clean(data), indent=2, allow_nan=False)


def _fmt(v) -> str:
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


def write_output(ev: Evaluation, directory: Path, *, source: str, seed: int = 0) -> list[Path]:
    """Write the tables, ``evaluation.json``, ``report.md`` and the figures into ``directory``."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".easl-evaluate-", dir=directory.parent))
    try:
        names = []
        for name, table in ev.tables.items():
            table.to_csv(tmp / f"{name}.csv", index=False)
            names.append(f"{name}.csv")
        (tmp / "evaluation.json").write_text(to_json_text(ev.data) + "\n")
        names.append("evaluation.json")
        figures = []
        h1 = ev.human[:, 0]
        cats = ev.scale.category_array if ev.scale.is_categorical else None
        for j, (s_name, m) in enumerate(ev.system.items()):
            safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in s_name)
            f = scatter_plot(h1, m, tmp / f"scatter_{safe}.png", system_name=s_name, human_name=ev.human_names[0],
                             seed=seed)
            figures.append((f"{s_name}: human vs system", f.name))
            if cats is not None:
                f = confusion_heatmap(_to_cats(h1, cats), _to_cats(m, cats), cats, tmp / f"confusion_{safe}.png",
                                      system_name=s_name)
                figures.append((f"{s_name}: confusion matrix", f.name))
        est = {s: ev.data["systems"][s]["true_score"].get("prmse") for s in ev.system}
        ints = {s: tuple(np.nan if v is None else v for v in ev.data["systems"][s]["ci"].get("prmse", [None, None]))
                for s in ev.system}
        f = prmse_plot(est, ints, tmp / "prmse.png", ev.data.get("confidence", 0.95))
        figures.append(("PRMSE with bootstrap interval", f.name))
        (tmp / "report.md").write_text(_markdown(ev, source, figures))
        names.append("report.md")
        names.extend(name for _, name in figures)
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for name in names:
            os.replace(tmp / name, directory / name)
            written.append(directory / name)
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _markdown(ev: Evaluation, source: str, figures: list[tuple[str, str]]) -> str:
    d = ev.data
    out = [f"# Evaluation of {source}", "",
           f"{d['n_responses']} responses evaluated ({d['n_dropped']} dropped), scale [{d['scale']['min']:g}, "
           f"{d['scale']['max']:g}], human columns: {', '.join(d['human_columns'])}.", ""]
    if d["dropped"]:
        out += ["Dropped responses:", ""] + [f"- {k}: {v}" for k, v in d["dropped"].items()] + [""]
    out += ["## Observed scores (against the first human column)", "", _md_table(ev.tables["eval_short"]), ""]
    if "consistency" in ev.tables:
        out += ["## Human-human agreement", "",
                _md_table(ev.tables["consistency"][["human_1", "human_2", *[k for k in SHORT_KEYS]]]), ""]
    out += ["## True scores (PRMSE)", "", _md_table(ev.tables["true_score_eval"]), ""]
    rows = []
    for s, entry in d["systems"].items():
        ci = entry["ci"].get("prmse")
        if ci:
            rows.append(f"- {s}: PRMSE {_fmt(entry['true_score'].get('prmse'))}, "
                        f"{d.get('confidence', 0.95):.0%} bootstrap interval [{_fmt(ci[0])}, {_fmt(ci[1])}]")
    if rows:
        out += rows + [""]
    for key, table in ev.tables.items():
        if key.startswith("fairness_"):
            out += [f"## Fairness by {key[len('fairness_'):]}", "", _md_table(table), ""]
    out += ["## Figures", ""]
    for title, name in figures:
        out += [f"### {title}", "", f"![{title}]({name})", ""]
    if d["notes"]:
        out += ["## Notes", ""] + [f"- {n}" for n in d["notes"]] + [""]
    out += ["Tables: " + ", ".join(f"`{k}.csv`" for k in ev.tables) + "; full results: `evaluation.json`.", ""]
    return "\n".join(out)
