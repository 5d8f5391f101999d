"""Large ingests index their later rows at the end (``core.store.deferred``): the result is the one the live index
kept chunk by chunk gives, whatever the rows repeat (a key live before the ingest, a key of an earlier chunk, the
same score or another), and a conflict between two deferred rows is found, located and rejected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from easl_toolkit.core.errors import InvalidRows
from easl_toolkit.core.store import deferred
from easl_toolkit.core.store.cells import Locations
from easl_toolkit.core.tables import iter_table
from tests.store_helpers import answer, assert_verified, dump, new_project


def _ingest(project: Any, path: Path, chunk: int, defer: bool, **kw: Any) -> Any:
    return project.ingest_chunks(iter_table(path, chunk), source=str(path), defer_live=defer, **kw)


def _outcome(project: Any, report: Any) -> tuple[Any, ...]:
    ratings = project.ratings()
    rejects = report.rejects
    listed = sorted(zip(rejects["location"], rejects["reason"])) if len(rejects) else []
    return (
        report.as_dict(),
        listed,
        sorted(zip(ratings["item_id"], ratings["annotator"], ratings["hit_id"].fillna(""), ratings["score"])),
        sorted((h["hit_id"], h["status"]) for h in project.hits(0)),
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    chunk=st.integers(1, 9),
    with_annotation_id=st.booleans(),
)
def test_deferred_rows_give_what_the_live_index_kept_chunk_by_chunk_gives(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    chunk: int,
    with_annotation_id: bool,
) -> None:
    """Two projects get the same first ingest, then the same second file in chunks, one with the live index kept
    chunk by chunk, one deferred; the second file supersedes scores of the first and repeats
    rows of the first and of itself, with the same score or another. Refused (it has conflicts), it lists the same
    conflicts or more; with ``skip_invalid``, counts, rejects, live ratings, HIT statuses and estimates agree, and
    both projects verify."""
    tmp_path = tmp_path_factory.mktemp("defer")
    rng = np.random.default_rng(seed)
    with new_project(tmp_path, name="a.easl", hit_size=3) as a, new_project(tmp_path, name="b.easl", hit_size=3) as b:
        hits = a.next_hits()
        assert b.next_hits() == hits
        rows = answer(hits, rng, with_annotation_id=with_annotation_id)
        first = rows[rng.random(len(rows)) < 0.4].copy()
        moved = rng.random(len(first)) < 0.3  # scores the second file supersedes
        first.loc[moved, "score"] = np.round(rng.uniform(0, 100, int(moved.sum())), 1)
        again = rows.iloc[rng.integers(0, len(rows), len(rows))].copy()  # repeats, within the file and of the first
        changed = np.arange(len(again)) == 0  # one at least, so that the file is refused without skip_invalid
        changed |= rng.random(len(again)) < 0.2
        again.loc[changed, "score"] = np.round(rng.uniform(0, 100, int(changed.sum())), 1)
        second = pd.concat([rows.iloc[rng.permutation(len(rows))], again], ignore_index=True)
        p1, p2 = tmp_path / "first.csv", tmp_path / "second.csv"
        first.to_csv(p1, index=False)
        second.to_csv(p2, index=False)
        results = []
        for project, defer in [(a, False), (b, True)]:
            _ingest(project, p1, chunk, defer)
            try:  # changed repeats conflict, unless the earlier row was a duplicate of the first ingest
                _ingest(project, p2, chunk, defer)
                results.append(["not refused"])
            except InvalidRows as refused:  # every message, nothing written
                results.append(sorted(refused.messages))
            report = _ingest(project, p2, chunk, defer, skip_invalid=True)
            results.append(_outcome(project, report))
            assert_verified(project)
        # the messages of the refused file: kept chunk by chunk, rows after the first invalid one are only looked up
        # in the live index (not appended), so conflicts among them are not listed; deferred, every one is
        assert set(results[0]) <= set(results[2])
        assert results[1] == results[3]
        pd.testing.assert_frame_equal(a.estimates(), b.estimates(), rtol=1e-9)


def test_a_conflict_between_two_deferred_rows_refuses_the_file_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("item_id,annotator,score\ni001,ann,10\ni002,ann,20\ni003,ann,30\ni002,ann,20\ni001,ann,11\n")
    with new_project(tmp_path) as p:
        before = dump(p.path)
        with pytest.raises(InvalidRows, match=r"a\.csv:6: score: conflicts with an earlier row of the same input"):
            _ingest(p, path, 2, True)
        assert dump(p.path) == before
        report = _ingest(p, path, 2, True, skip_invalid=True)
        assert (report.new, report.duplicate, report.rejected) == (3, 1, 1)
        assert report.rejects["location"].tolist() == [f"{path}:6"]
        # the log holds the kept rows only, in input order
        log = p.ratings()
        assert sorted(zip(log["item_id"], log["score"])) == [("i001", 10.0), ("i002", 20.0), ("i003", 30.0)]
        assert_verified(p)


def test_places_give_each_deferred_row_its_location() -> None:
    places = deferred.Places()
    try:
        places.add(10, Locations("f.csv:", np.arange(2, 12)), np.asarray([0, 3, 4]))
        places.add(13, Locations(texts=np.asarray(["row 1", "row 2"], dtype=object)), np.asarray([1]))
        places.add(14, Locations("g.csv:", np.arange(100, 110)), np.asarray([9]))
        assert [places[s] for s in range(10, 15)] == ["f.csv:2", "f.csv:5", "f.csv:6", "row 2", "g.csv:109"]
        with pytest.raises(KeyError):
            places[15]
    finally:
        places.close()


@pytest.mark.parametrize("method", ["da", "aware"])
def test_other_methods_give_the_same_project_either_way(tmp_path: Path, method: str) -> None:
    """DA (incremental, commutative) and the annotator-aware model (refitted to the live index at the end) give the
    same estimates and verify, with the index kept chunk by chunk or built at the end, also when the file repeats
    rows (duplicates taken out of the state at the end)."""
    picks = np.random.default_rng(5).integers(0, 12, 10)  # rows the file gives twice
    projects = []
    for defer in (False, True):
        p = new_project(tmp_path, name=f"{method}-{defer}.easl", method=method, hit_size=3, seed=3)
        projects.append(p)
        rows = pd.concat([answer(p.next_hits(), np.random.default_rng(1), annotator=a) for a in ("x", "y")])
        path = tmp_path / f"{method}-{defer}.csv"
        pd.concat([rows, rows.iloc[picks]]).to_csv(path, index=False)
        report = _ingest(p, path, 4, defer)
        assert (report.new, report.duplicate) == (len(rows), 10)
        assert_verified(p)
    try:
        pd.testing.assert_frame_equal(projects[0].estimates(), projects[1].estimates(), rtol=1e-9)
    finally:
        for p in projects:
            p.close()
