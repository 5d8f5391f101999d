"""The column-wise files of `easl next --output x.csv` and `easl export --output x.csv`: built
without pandas, byte for byte the files `core.tables.write_table` writes from the DataFrames."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.outputs import atomic_outputs
from easl_toolkit.core.store import Project
from easl_toolkit.core.store.arrow_columns import floats, integers, strings
from easl_toolkit.core.tables import write_table
from tests.store_helpers import answer, make_items


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=30))
def test_strings_parse_any_json_array_of_strings(values):
    for text in (json.dumps(values, ensure_ascii=False), json.dumps(values, separators=(",", ":"))):
        arr = strings(text)
        arr.validate(full=True)
        assert arr.to_pylist() == values


def test_numeric_columns_match_arrow_conversion_of_pandas():
    x = np.array([0.5, np.nan, -1e-300, np.inf, 3.0])
    assert floats(x).equals(pa.Array.from_pandas(pd.Series(x)))  # NaN becomes null, like from_pandas
    assert floats(x[[0, 2, 4]]).null_count == 0
    k = np.array([3, -1, 2**40])
    assert integers(k).to_pylist() == k.tolist()


def _frame_bytes(frame: pd.DataFrame, tmp_path, name: str) -> bytes:
    path = tmp_path / name
    write_table(frame, path)
    return path.read_bytes()


def _long_bytes(project: Project, tmp_path, name: str, **kw) -> bytes:
    path = tmp_path / name
    project.open_hits_long(**kw).write_csv(path)
    return path.read_bytes()


@pytest.mark.parametrize("extra", [False, True])
def test_hit_file_is_the_bytes_of_the_frame_in_every_shape_of_hit_set(tmp_path, extra):
    items = make_items(31, extra=extra)
    items.loc[3, "text"] = 'quote " comma , newline\n and \\ backslash é'
    project = Project.create(tmp_path / "p.easl", items, Hyper(hit_size=4, seed=3))
    rng = np.random.default_rng(0)

    def same(tag: str, **kw) -> None:
        long = project.open_hits_long(**kw)
        frame = project.open_hits_frame(**kw)
        assert long.n_hits == frame["hit_id"].nunique()
        assert _long_bytes(project, tmp_path, f"{tag}-long.csv", **kw) == _frame_bytes(frame, tmp_path, f"{tag}.csv")

    same("first")  # iteration 0: consecutive keys, every HIT full (the last one padded)
    hits = project.open_hits()
    project.ingest(answer(hits[::2], rng), source="half")  # some HITs complete: a key range with gaps
    same("partial")
    project.ingest(answer(hits[1::2], rng), source="rest")
    project.advance()
    same("later")
    free = np.flatnonzero(~project.open_item_mask()[0])
    project.add_hits(free[:6].reshape(3, 2))  # narrower HITs in a new iteration: open HITs of two iterations
    same("every", every_iteration=True)
    project.ingest(answer(project.open_hits(every_iteration=True), rng), source="all")
    same("none")  # no open HIT: the header alone
    same("none-every", every_iteration=True)
    project.close()


def test_scattered_open_hits_read_by_index_equal_the_records(tmp_path):
    project = Project.create(tmp_path / "p.easl", make_items(60, extra=False), Hyper(hit_size=3, seed=5))
    rng = np.random.default_rng(1)
    hits = project.open_hits()
    keep = {h["hit_id"] for h in hits[::7]}  # a few HITs stay open, far apart
    project.ingest(answer([h for h in hits if h["hit_id"] not in keep], rng), source="most")
    long = project.open_hits_long().table.to_pylist()
    records = [
        {"hit_id": h["hit_id"], "iteration": h["iteration"], "position": p, "item_id": i["item_id"], "text": i["text"]}
        for h in project.open_hits()
        for p, i in enumerate(h["items"])
    ]
    assert long == records and {r["hit_id"] for r in long} == keep
    project.close()


@pytest.mark.parametrize("method", ["easl", "aware"])
def test_estimates_table_is_the_bytes_of_the_estimates_frame(tmp_path, method):
    items = make_items(40, extra=False)
    items.loc[5, "text"] = 'a "quoted", text\n'
    project = Project.create(tmp_path / "p.easl", items, Hyper(hit_size=4, seed=2, method=method))
    project.ingest(answer(project.open_hits(), np.random.default_rng(3)), source="s")
    table = project.estimates_table()
    assert table.frame is None and table.n_rows == 40
    path = tmp_path / "e.csv"
    with atomic_outputs([path]) as (tmp,):
        table.write_csv(tmp, path)
    assert path.read_bytes() == _frame_bytes(project.estimates(), tmp_path, "frame.csv")
    project.close()


def test_next_and_export_to_csv_import_no_pandas(tmp_path):
    project = Project.create(tmp_path / "p.easl", make_items(20, extra=False), Hyper(hit_size=4, seed=1))
    project.close()
    code = (
        "import sys; from easl_toolkit.tui.cli import main; "
        f"main(['next', {str(tmp_path / 'p.easl')!r}, '--output', {str(tmp_path / 'h.csv')!r}]); "
        f"main(['export', {str(tmp_path / 'p.easl')!r}, '--output', {str(tmp_path / 'e.csv')!r}]); "
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
    assert pd.read_csv(tmp_path / "h.csv").shape == (20, 5)
