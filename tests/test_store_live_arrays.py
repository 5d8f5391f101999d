"""The aware model's live log kept as arrays (``core.store.live_arrays``, schema version 3): after every kind of
change (new scores, supersedes, duplicates, deferred repeats, retractions, a withdrawn HIT) the refit reads the
kept arrays, never the live index, and they equal the live index; the fit is the one the live index gives, bit for
bit; an older file migrates and reads the live index once; ``easl verify`` finds a wrong array and ``rebuild``
repairs it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.store import SCHEMA_VERSION, Project, live_arrays
from easl_toolkit.core.store import derived as replay
from easl_toolkit.core.store.db import max_seq
from easl_toolkit.core.store.state import load_state
from easl_toolkit.core.tables import iter_table
from easl_toolkit.tui.cli import main
from tests.store_helpers import answer, assert_verified, new_project


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = replay.read_live_arrays

    def counted(conn: sqlite3.Connection) -> Any:
        calls.append(1)
        return real(conn)

    monkeypatch.setattr(replay, "read_live_arrays", counted)
    return calls


def _campaign(p: Project, tmp_path: Path, rng: np.random.Generator) -> None:
    """Scores from three annotators and anonymous ones, a file in chunks with repeats (deferred), supersedes, a
    retraction and a withdrawn HIT."""
    hits = p.next_hits()
    first = pd.concat([answer(hits, rng, annotator=a, with_annotation_id=True) for a in ("x", "y")])
    p.ingest(first, source="first.csv")
    again = first.iloc[:6].copy()
    again["score"] = np.round(rng.uniform(0, 100, 6), 1)  # supersedes
    anonymous = answer(hits[:3], rng).drop(columns=["annotator"])
    p.ingest(pd.concat([again, anonymous]), source="second.csv")
    hits = p.next_hits()
    rows = answer(hits, rng, annotator="z")
    path = tmp_path / "third.csv"
    pd.concat([rows, rows.iloc[[0, 4, 7]]]).to_csv(path, index=False)  # repeats, left to the end when deferred
    p.ingest_chunks(iter_table(path, 5), source=str(path), defer_live=True)
    p.retract([first["annotation_id"].iloc[-1]], source="test")
    p.retract_hit(hits[0]["hit_id"], source="test")


def test_every_refit_reads_the_kept_arrays_and_they_equal_the_live_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with new_project(tmp_path, n=30, method="aware", hit_size=3, seed=2) as p:
        calls = _count_reads(monkeypatch)
        _campaign(p, tmp_path, np.random.default_rng(4))
        assert calls == []  # every refit read the kept arrays
        with p.db.reading() as conn:
            kept = live_arrays.load(conn, max_seq(conn))
            assert kept is not None and kept.same_as(replay.read_live_arrays(conn))
            assert kept.names == ["x", "y", None, "z"]
        assert assert_verified(p)["live_arrays_ok"]


def test_the_fit_is_the_one_the_live_index_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    states = []
    for name, kept in (("kept.easl", True), ("read.easl", False)):
        if not kept:  # every refit reads the live index
            monkeypatch.setattr(live_arrays, "load", lambda conn, at: None)
        with new_project(tmp_path, name=name, n=30, method="aware", hit_size=3, seed=2) as p:
            _campaign(p, tmp_path, np.random.default_rng(4))
            with p.db.reading() as conn:
                states.append(load_state(conn))
    assert states[0].keys() == states[1].keys()
    for k in states[0]:
        np.testing.assert_array_equal(states[0][k], states[1][k])


def test_a_version_2_file_migrates_and_reads_the_live_index_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(6)
    with new_project(tmp_path, n=30, method="aware", hit_size=3, seed=2) as p:
        p.ingest(answer(p.next_hits(), rng, annotator="x"), source="a.csv")
        path = p.path
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE covariates")  # (schema version 4)
    conn.execute("DROP TABLE designs")
    conn.execute("DROP TABLE live_arrays")
    conn.execute("DELETE FROM meta WHERE key = ?", (live_arrays.SEQ_KEY,))
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    calls = _count_reads(monkeypatch)
    with Project.open(path) as p:
        assert p.db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert_verified(p)
        hits = p.next_hits()
        p.ingest(answer(hits[:4], rng, annotator="y"), source="b.csv")
        assert calls == [1]  # the first refit reads the live index, and keeps it
        p.ingest(answer(hits[4:], rng, annotator="z"), source="c.csv")
        assert calls == [1]
        assert assert_verified(p)["live_arrays_ok"]


def test_readers_open_a_version_2_file_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Version 3 only adds a table that a writer's refit reads: status, export, verify and the annotator table read
    a version-2 file without migrating it."""
    with new_project(tmp_path, n=30, method="aware", hit_size=3, seed=2) as p:
        p.ingest(answer(p.next_hits(), np.random.default_rng(3), annotator="x"), source="a.csv")
        path = p.path
        table = p.annotator_table()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE covariates")  # (schema version 4)
    conn.execute("DROP TABLE designs")
    conn.execute("DROP TABLE live_arrays")
    conn.execute("DELETE FROM meta WHERE key = ?", (live_arrays.SEQ_KEY,))
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    with Project.open(path, readonly=True) as p:
        assert p.status().n_observations == 30
        assert_verified(p)
        pd.testing.assert_frame_equal(p.annotator_table(), table)
    for args in (["status", path, "--json"], ["verify", path], ["export", path, "--output", str(tmp_path / "e.csv")]):
        assert main(args) == 0
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2  # nothing migrated it
    conn.close()


def test_verify_finds_a_wrong_array_and_rebuild_repairs_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with new_project(tmp_path, n=30, method="aware", hit_size=3, seed=2) as p:
        p.ingest(answer(p.next_hits(), np.random.default_rng(7), annotator="x"), source="a.csv")
        with p.db.writing() as conn:
            kept = live_arrays.load(conn, max_seq(conn))
            assert kept is not None
            kept.score01[3] += 0.1
            live_arrays.save(conn, kept, max_seq(conn))
        result = p.verify()
        assert not result["ok"] and not result["live_arrays_ok"]
        assert main(["verify", p.path]) == 1
        assert "the live log kept for the annotator-aware refits differs" in capsys.readouterr().out
        assert p.rebuild()["ok"]
        p.ingest(answer(p.next_hits(), np.random.default_rng(8), annotator="y"), source="b.csv")
        assert assert_verified(p)["live_arrays_ok"]


def test_other_methods_keep_no_arrays(tmp_path: Path) -> None:
    with new_project(tmp_path, n=30, method="easl", hit_size=3, seed=2) as p:
        p.ingest(answer(p.next_hits(), np.random.default_rng(9)), source="a.csv")
        assert p.db.conn.execute("SELECT COUNT(*) FROM live_arrays").fetchone()[0] == 0
        assert assert_verified(p)["live_arrays_ok"]
