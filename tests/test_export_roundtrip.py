"""``easl export`` writes exactly the project's tables, in every format, with any library versions.

The reference is the table the Python API returns (``Project.estimates``, ``Project.ratings``,
``Project.annotator_table``); each file ``easl export`` writes is read back with the standard library (``csv``,
``json``) or pyarrow and compared value for value: texts exactly (quotes, commas, line breaks, tabs, a backslash,
non-ASCII text, an empty text), numbers exactly in CSV and Parquet (a float written as text must read back to the
same float64: the shortest round-trip form; JSONL too, ``core.tables.jsonl_bytes``), missing values as empty cells /
``null``, columns in the documented
order. The small projects cover every method, items with extra columns, integer and fractional scores
and several annotators.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from easl_toolkit.core.store import Project
from easl_toolkit.tui.cli import main
from tests.store_helpers import export_project

#: name -> (method, items, with extra columns, integer scores, annotators)
PROJECTS = {
    "easl-rounded": ("easl", 150, False, True, 1),
    "easl-fine-extra": ("easl", 150, True, False, 1),
    "ra": ("ra", 150, False, True, 1),
    "trueskill": ("trueskill", 150, False, False, 1),
    "da": ("da", 150, False, False, 2),
    "aware": ("aware", 150, False, True, 3),
}


def build(tmp_path: Path, name: str) -> Path:
    """Project ``name`` of ``PROJECTS`` (``tests/store_helpers.py``, ``export_project``)."""
    method, n, extra, rounded, n_annotators = PROJECTS[name]
    path = tmp_path / f"{name}.easl"
    export_project(path, method, n, extra=extra, rounded=rounded, n_annotators=n_annotators)
    return path


def same(got: Any, want: Any) -> bool:
    """Equal values, NaN/None/NA equal to each other, numbers compared exactly."""
    if want is None or (isinstance(want, float) and math.isnan(want)) or want is pd.NA:
        return got is None or (isinstance(got, float) and math.isnan(got))
    if isinstance(want, (bool, np.bool_)):
        return bool(got) == bool(want)
    if isinstance(want, (int, float, np.integer, np.floating)):
        if got is None:
            return False
        return float(got) == float(want)
    return bool(got == want)


def read_csv_cells(path: Path, reference: pd.DataFrame) -> list[list[Any]]:
    """The CSV's rows, each cell parsed by the reference column's type (the empty cell is missing)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(reference.columns)
    numeric = [pd.api.types.is_numeric_dtype(reference[c]) for c in reference.columns]
    return [[(float(v) if v else None) if num else v for v, num in zip(row, numeric, strict=True)] for row in rows[1:]]


def assert_file_holds(path: Path, reference: pd.DataFrame) -> None:
    want = reference.astype(object).where(reference.notna(), None).to_numpy().tolist()
    if path.suffix == ".csv":
        got = read_csv_cells(path, reference)
        text_columns = [k for k, c in enumerate(reference.columns) if not pd.api.types.is_numeric_dtype(reference[c])]
        for row in want:  # a missing text is an empty cell
            for k in text_columns:
                row[k] = "" if row[k] is None else row[k]
    elif path.suffix == ".jsonl":
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert all(list(r) == list(reference.columns) for r in records)
        got = [list(r.values()) for r in records]
    else:
        table = pq.read_table(path)
        assert table.column_names == list(reference.columns)
        got = [list(r.values()) for r in table.to_pylist()]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert all(same(a, b) for a, b in zip(g, w, strict=True)), (path.name, g, w)


@pytest.mark.parametrize("name", list(PROJECTS))
@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_export_files_hold_the_projects_tables_value_for_value(tmp_path: Path, name: str, ext: str) -> None:
    path = build(tmp_path, name)
    est, rat, ann = (tmp_path / f"{kind}.{ext}" for kind in ("est", "rat", "ann"))
    args = ["export", str(path), "--output", str(est), "--ratings", str(rat)]
    aware = PROJECTS[name][0] == "aware"
    assert main(args + (["--annotators", str(ann)] if aware else [])) == 0
    with Project.open(path, readonly=True) as project:
        assert_file_holds(est, project.estimates())
        assert_file_holds(rat, project.ratings())
        if aware:
            assert_file_holds(ann, project.annotator_table())


def test_floats_are_written_in_their_shortest_round_trip_form(tmp_path: Path) -> None:
    """Every number cell of a CSV export is the shortest text that reads back to the same float64 (``repr``),
    so nothing is lost and nothing is padded."""
    path = build(tmp_path, "easl-fine-extra")
    out = tmp_path / "est.csv"
    assert main(["export", str(path), "--output", str(out)]) == 0
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for column in ("estimate", "mean", "variance", "ci_low", "ci_high"):
        for row in rows:
            cell = row[column]
            assert cell == repr(float(cell)).removesuffix(".0") or cell == repr(float(cell)), (column, cell)
