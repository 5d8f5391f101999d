"""The column builders of ``easl next --output hits.csv``: the HITs recorded by ``insert_iteration``, NUL-joined
strings (``joined_strings``) against the JSON reader (``strings``), and the file of a new iteration (built from
the HITs chosen, the items read by key when they are few) against the long form read back from the project and
written by pandas' route (``core.tables.write_table``)."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project
from easl_toolkit.core.store.arrow_columns import joined_strings, strings
from easl_toolkit.core.store.hit_columns import jsonl_records, read_every_item, started_long_hits, write_started
from easl_toolkit.core.store.hit_rows import hit_ids
from easl_toolkit.core.tables import write_table
from tests.hit_helpers import scores, tricky_items


def test_insert_iteration_records_the_ids_and_items_of_the_hits(tmp_path):
    hits = np.random.default_rng(0).permutation(200)[:115].reshape(23, 5)
    with Project.create(tmp_path / "p.easl", tricky_items(200), Hyper(method="easl", hit_size=5)) as p:
        p.ingest(scores(p.next_hits(), np.random.default_rng(1)), source="s")  # iteration 0 complete
        p.add_hits(hits[:, :3])  # 23 HITs of 3: iteration 1
        records = p.hits(1)
    index = list(tricky_items(200)["item_id"])
    assert [r["hit_id"] for r in records] == hit_ids(1, 23)
    assert [[index.index(i["item_id"]) for i in r["items"]] for r in records] == hits[:, :3].tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), max_size=30))
def test_joined_strings_read_what_json_reads(values):
    blob = "\0".join(values).encode() if values else None
    array = joined_strings(blob, len(values))
    if any("\0" in v for v in values):  # more NUL bytes than separators: left to the JSON reader
        assert array is None
        return
    assert array is not None
    assert array.to_pylist() == values
    assert array.equals(strings(json.dumps(values, ensure_ascii=False)))


@pytest.mark.parametrize("per_iteration", [None, 3])  # every item read (a scan), or the few of 3 HITs (by key)
def test_new_iteration_file_equals_the_long_form_read_back(tmp_path, per_iteration):
    items = tricky_items(200)
    items.loc[17, "text"] = "a NUL \0 inside"  # read as JSON, not NUL-joined
    rng = np.random.default_rng(3)
    hyper = Hyper(method="easl", hit_size=5, seed=2, hits_per_iteration=per_iteration)
    with Project.create(tmp_path / "p.easl", items, hyper) as p:
        for it in range(1, 4):
            p.ingest(scores(p.next_hits(), rng), source=f"s{it}")
            written = tmp_path / f"new{it}.csv"
            n_hits = p.next_hits_file(written)
            assert p.iteration() == it
            reference = tmp_path / f"ref{it}.csv"
            write_table(p.open_hits_frame(), reference)
            assert n_hits == len(p.open_hits()) > 0
            assert written.read_bytes() == reference.read_bytes()
            frame = pd.read_csv(written, dtype=str, keep_default_na=False)
            assert len(frame) == 5 * n_hits


def test_a_failed_insert_leaves_neither_the_iteration_nor_the_file(tmp_path, monkeypatch):
    import easl_toolkit.core.store.hits as hits_module

    rng = np.random.default_rng(4)
    with Project.create(tmp_path / "p.easl", tricky_items(200), Hyper(method="easl", hit_size=5, seed=1)) as p:
        p.ingest(scores(p.next_hits(), rng), source="s0")
        real = hits_module.insert_iteration

        def failing(conn, *args):  # the rows are written, then the disk fills up
            real(conn, *args)
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(hits_module, "insert_iteration", failing)
        out = tmp_path / "hits.csv"
        with pytest.raises(sqlite3.OperationalError, match="disk is full"):
            p.next_hits_file(out)
        assert not out.exists() and sorted(f.name for f in tmp_path.iterdir()) == ["p.easl", "p.easl-shm", "p.easl-wal"]
        assert p.iteration() == 0 and len(p.hits(1)) == 0
        monkeypatch.setattr(hits_module, "insert_iteration", real)
        assert p.next_hits_file(out) == 40 and p.iteration() == 1
        reference = tmp_path / "ref.csv"
        write_table(p.open_hits_frame(), reference)
        assert out.read_bytes() == reference.read_bytes()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("slice_hits", [1, 7, 40, 1000])
def test_the_file_written_slice_by_slice_is_the_whole_table_written_at_once(tmp_path, slice_hits, fmt):
    items = tricky_items(200)
    with Project.create(tmp_path / "p.easl", items, Hyper(method="easl", hit_size=5, seed=1)) as p:
        every = read_every_item(p.path, ["item_id", "text"])
    hits = np.random.default_rng(2).integers(0, 200, size=(40, 5))
    whole, sliced = tmp_path / f"whole.{fmt}", tmp_path / f"sliced.{fmt}"
    started_long_hits(12, hits, (every, hits.reshape(-1))).write_to(str(whole), whole, fmt)
    write_started(str(sliced), sliced, fmt, 12, hits, (every, hits.reshape(-1)), slice_hits=slice_hits)
    assert sliced.read_bytes() == whole.read_bytes()
    if fmt != "parquet":
        assert whole.read_text(encoding="utf-8").count("it12-39") == (5 if fmt == "csv" else 1)


TEXTS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)  # any text UTF-8 can hold


@settings(max_examples=100, deadline=None)
@given(items=st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=12), width=st.integers(1, 4))
def test_jsonl_records_are_the_bytes_of_json_dumps(items, width):
    """The JSONL of ``easl next`` joined by Arrow (``jsonl_records``) is ``json.dumps`` of each HIT record, whatever
    the texts hold (quotes, backslashes, control characters, NUL, non-ASCII)."""
    owner = [k // width for k in range(len(items))]
    table = pa.table(
        {
            "hit_id": pa.array([f'h"{j}' for j in owner], type=pa.large_string()),
            "iteration": pa.array([3] * len(items), type=pa.int64()),
            "position": pa.array([k % width for k in range(len(items))], type=pa.int64()),
            "item_id": pa.array([i for i, _ in items], type=pa.large_string()),
            "text": pa.array([t for _, t in items], type=pa.large_string()),
        }
    )
    records = [
        {
            "hit_id": f'h"{j}',
            "iteration": 3,
            "items": [{"item_id": i, "text": t} for i, t in items[j * width : (j + 1) * width]],
        }
        for j in range(owner[-1] + 1)
    ]
    expected = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    assert jsonl_records(table).to_pybytes() == expected
