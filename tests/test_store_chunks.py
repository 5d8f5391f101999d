"""Chunked ingestion (``Project.ingest_chunks``, used by ``easl ingest``): all or nothing across chunks, and a key
given two scores in different chunks of one input is a conflict, as it is inside one chunk."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from easl_toolkit.core.errors import InvalidRows
from easl_toolkit.core.tables import iter_table
from tests.store_helpers import answer, assert_verified, dump, new_project


def _write(path: Path, rows: Sequence[tuple[str, str, float]]) -> None:
    path.write_text("item_id,annotator,score\n" + "".join(f"{i},{a},{s:g}\n" for i, a, s in rows))


def test_a_conflict_with_an_earlier_chunk_refuses_the_whole_file(tmp_path: Path) -> None:
    with new_project(tmp_path) as p:
        path = tmp_path / "a.csv"
        _write(path, [("i001", "ann", 10), ("i002", "ann", 20), ("i003", "ann", 30), ("i001", "ann", 11)])
        before = dump(p.path)
        with pytest.raises(InvalidRows, match=r"a\.csv:5: score: conflicts with an earlier row of the same input"):
            p.ingest_chunks(iter_table(path, 2), source=str(path))
        assert dump(p.path) == before


def test_skip_invalid_keeps_the_first_score_and_rejects_the_conflict(tmp_path: Path) -> None:
    with new_project(tmp_path) as p:
        path = tmp_path / "a.csv"
        rows = [("i001", "ann", 10), ("i002", "ann", 20), ("i001", "ann", 10), ("i001", "ann", 11), ("i004", "b", 5)]
        _write(path, rows)
        report = p.ingest_chunks(iter_table(path, 2), source=str(path), skip_invalid=True)
        assert (report.n_rows, report.new, report.duplicate, report.rejected) == (5, 3, 1, 1)
        assert report.rejects["location"].tolist() == [f"{path}:5"]
        ratings = p.ratings()
        assert sorted(zip(ratings["item_id"], ratings["score"])) == [("i001", 10.0), ("i002", 20.0), ("i004", 5.0)]
        assert_verified(p)


def test_chunks_give_what_one_batch_gives(tmp_path: Path) -> None:
    rows = [(f"i{k % 23:03d}", f"a{k % 3}", float(k % 101)) for k in range(60)]
    path = tmp_path / "a.csv"
    _write(path, rows)
    with new_project(tmp_path, name="one.easl") as one, new_project(tmp_path, name="many.easl") as many:
        a = one.ingest_chunks(iter_table(path, 1000), source="a.csv", skip_invalid=True)
        b = many.ingest_chunks(iter_table(path, 7), source="a.csv", skip_invalid=True)
        assert a.as_dict() == b.as_dict()
        pd.testing.assert_frame_equal(one.estimates(), many.estimates(), rtol=1e-12)  # sums in another order
        assert_verified(many)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    chunk=st.integers(1, 12),
    keep=st.floats(0.3, 1.0),
    with_annotation_id=st.booleans(),
)
def test_hit_statuses_after_chunks_are_those_recomputed_from_the_live_index(
    tmp_path_factory: pytest.TempPathFactory, seed: int, chunk: int, keep: float, with_annotation_id: bool
) -> None:
    """HITs whose every item got a score in one chunk are marked complete without a lookup
    (``core.store.batches.completed_hits``), the others recomputed: either way the status is what the live index
    says (``verify``'s ``hits_ok``), whether a HIT's items come in one chunk, several, two ingests or not all."""
    tmp_path = tmp_path_factory.mktemp("hits")
    rng = np.random.default_rng(seed)
    with new_project(tmp_path, hit_size=3) as p:
        hits = p.next_hits()
        rows = answer(hits, rng, with_annotation_id=with_annotation_id)
        rows = rows.iloc[rng.permutation(len(rows))]
        first = rows[rng.random(len(rows)) < keep]
        for k, part in enumerate([first, rows]):  # the second ingest completes every HIT (and repeats the first)
            path = tmp_path / f"s{k}.csv"
            part.to_csv(path, index=False)
            p.ingest_chunks(iter_table(path, chunk), source=str(path))
            assert_verified(p)
        assert {h["status"] for h in p.hits(0)} == {"complete"}


def test_padded_cells_are_stripped_in_whichever_chunk_they_come(tmp_path: Path) -> None:
    """A chunk whose text holds no whitespace is known unpadded (``Table.unpadded``) and is not stripped; a later
    chunk with padded cells (ASCII or Unicode whitespace) still is."""
    path = tmp_path / "a.csv"
    path.write_text(
        "item_id,annotator,score\ni001,ann,10\ni002,ann,20\n i003 ,ann\u3000, 30 \n\u2003i004,\tann,40\n",
        encoding="utf-8",
    )
    chunks = list(iter_table(path, 2))
    assert [c.unpadded for c in chunks] == [True, False]
    with new_project(tmp_path) as p:
        report = p.ingest_chunks(iter(chunks), source=str(path))
        assert (report.new, report.rejected) == (4, 0)
        ratings = p.ratings()
        assert sorted(zip(ratings["item_id"], ratings["annotator"], ratings["score"])) == [
            ("i001", "ann", 10.0),
            ("i002", "ann", 20.0),
            ("i003", "ann", 30.0),
            ("i004", "ann", 40.0),
        ]


@pytest.mark.parametrize("n", [1, 49, 50, 51, 100, 137])
def test_the_log_is_written_many_rows_per_statement_with_every_row_in_order(tmp_path: Path, n: int) -> None:
    """``core.store.log_rows.append_log`` binds 50 rows per statement and the rest in one: every row lands once,
    at consecutive positions, in input order, with its own values."""
    rows = [(f"i{k % 23:03d}", f"a{k // 23}", float(k % 101)) for k in range(n)]
    path = tmp_path / "a.csv"
    _write(path, rows)
    with new_project(tmp_path) as p:
        report = p.ingest_chunks(iter_table(path, 1000), source="a.csv")
        assert report.new == n
        with closing(sqlite3.connect(p.path)) as conn:
            got = conn.execute(
                "SELECT seq, source_key, score_raw, annotator, kind, source FROM observations ORDER BY seq"
            ).fetchall()
        assert [r[0] for r in got] == list(range(1, n + 1))
        assert [(r[1].split("\x1f")[2], r[3], r[2]) for r in got] == rows
        assert {(r[4], r[5]) for r in got} == {("score", "a.csv")}
        assert_verified(p)
