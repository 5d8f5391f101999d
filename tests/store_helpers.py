"""Helpers for the project-file tests (test_store, test_cli_core, test_durability): small item sets, simulated
annotations for the open HITs, and a full dump of a project file for before/after comparisons."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project


def make_items(n: int = 23, extra: bool = True) -> pd.DataFrame:
    """``n`` items ``i000 ...`` with a text, and (``extra``) a string and a numeric extra column."""
    frame = pd.DataFrame({"item_id": [f"i{k:03d}" for k in range(n)], "text": [f"text number {k}" for k in range(n)]})
    if extra:
        frame["topic"] = [["a", "b", "c"][k % 3] for k in range(n)]
        frame["latent"] = np.linspace(0.0, 1.0, n)
    return frame


def new_project(tmp_path, name: str = "p.easl", n: int = 23, **hyper) -> Project:
    """A fresh project of ``make_items(n)`` with the given hyper-parameters."""
    return Project.create(tmp_path / name, make_items(n), Hyper(**hyper))


def answer(
    hits: list[dict],
    rng: np.random.Generator,
    *,
    annotator: str = "ann",
    with_annotation_id: bool = False,
    score_max: float = 100.0,
) -> pd.DataFrame:
    """Scores for every item of every HIT: latent (from the item's ``latent`` field, else 0.5) + N(0, 0.1^2),
    clipped, rounded on 0..score_max."""
    rows = []
    for h in hits:
        for item in h["items"]:
            latent = float(item.get("latent", 0.5))
            s = float(np.clip(latent + rng.normal(0, 0.1), 0, 1)) * score_max
            row = {"hit_id": h["hit_id"], "item_id": item["item_id"], "score": round(s, 1), "annotator": annotator}
            if with_annotation_id:
                row["annotation_id"] = f"{annotator}-{h['hit_id']}"
            rows.append(row)
    return pd.DataFrame(rows)


def dump(path) -> list[str]:
    """Every statement of ``iterdump`` of the database at ``path`` (schema and rows), for exact comparisons."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def assert_verified(project: Project) -> dict:
    """``project.verify()`` must be ok; returns its result."""
    result = project.verify()
    assert result["ok"], result
    assert result["max_abs_diff"] <= 1e-9
    return result


def export_project(
    path, method: str, n: int, *, extra: bool = False, rounded: bool = True, n_annotators: int = 1
) -> None:
    """A project of ``n`` items whose texts CSV and JSON must escape (quotes, commas, a line break, a tab, a
    backslash, non-ASCII text, an empty text), after two iterations of answers on the 1-5 scale with fixed creation
    times: the input of the export tests."""
    items = make_items(n, extra=extra)
    items.loc[3, "text"] = 'a "quoted", text\nover two lines'
    items.loc[4, "text"] = "back\\slash and tab\t"
    items.loc[5, "text"] = "naïve café – 東京"
    items.loc[6, "text"] = ""
    rng = np.random.default_rng(11)
    with Project.create(path, items, Hyper(method=method, hit_size=5, seed=7, score_min=1, score_max=5)) as project:
        for it in range(2):
            hits = project.next_hits()
            frames = [
                answer(hits, rng, annotator=f"ann{k}", with_annotation_id=True, score_max=4)
                for k in range(n_annotators)
            ]
            rows = pd.concat(frames, ignore_index=True)
            if rounded:
                rows["score"] = rows["score"].round()
            rows["score"] += 1
            rows["created_at"] = f"2026-01-0{it + 1}T00:00:00+00:00"
            project.ingest(rows, source="export")
