"""Chunked ingestion (``Project.ingest_chunks``, used by ``easl ingest``): all or nothing across chunks, and a key
given two scores in different chunks of one input is a conflict, as it is inside one chunk."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest

from core.errors import InvalidRows
from core.tables import iter_table
from tests.store_helpers import assert_verified, dump, new_project


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
