"""Webhooks while another process writes the project: the service acknowledges each one within Label Studio's 1 s
without waiting for the project file's write lock (the spill journal, ``easl_plugin/journal.py``), and every
annotation lands exactly once once the lock is free.

The end-to-end test runs a real ``easl serve`` and a real concurrent ``easl ingest`` subprocess (the scenario of
``bench/bench_webhook_during_ingest.py``, on a moderate file); the others hold the lock with a plain SQLite
connection, as any other process does."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time

import pytest

from bench.bench_webhook_during_ingest import HIT_SIZE, LS_TIMEOUT_S, annotation_event, make_project, run
from easl_toolkit.core.store import Project
from easl_toolkit.core.store.db import FileBusy
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.journal import Journal, journal_path
from easl_toolkit.easl_plugin.writer import EventWriter


def hold_lock(path: str) -> sqlite3.Connection:
    """A connection holding the file's write lock (``BEGIN IMMEDIATE``), as ``easl ingest`` does for its whole run."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


@pytest.fixture
def linked(tmp_path) -> tuple[str, list[dict]]:
    """A project of 40 items linked to a Label Studio project; its path and open HITs."""
    path = str(tmp_path / "p.easl")
    return path, make_project(path, 40)


def bodies(hits: list[dict], n: int) -> list[str]:
    """``n`` annotation webhooks, one per task, as JSON text."""
    return [
        json.dumps(annotation_event(hits[k % len(hits)], 100 + k, 500 + k, [float(k % 101)] * HIT_SIZE))
        for k in range(n)
    ]


def wait_pending(path: str, n: int, timeout_s: float = 20.0) -> list:
    """The pending events, once there are ``n`` (fails after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with Project.open(path, readonly=True) as p:
            pending = p.events("pending")
        if len(pending) >= n:
            return pending
        assert time.monotonic() < deadline, len(pending)
        time.sleep(0.05)


def test_a_transaction_with_a_longest_wait_raises_file_busy_when_the_lock_stays_taken(linked):
    path, _ = linked
    other = hold_lock(path)
    try:
        with Project.open(path) as p:
            for wait in (0.0, 0.3):
                started = time.perf_counter()
                with pytest.raises(FileBusy), p.transaction(max_wait_s=wait):
                    pass
                assert wait <= time.perf_counter() - started < wait + 0.5
    finally:
        other.rollback()
        other.close()
    with Project.open(path) as p, p.transaction(max_wait_s=0):  # free again: the transaction runs
        p.set_meta({"probe": "1"})


def test_the_writer_journals_at_once_while_another_connection_holds_the_lock_and_moves_later(linked):
    path, hits = linked
    commits: list[int] = []
    writer = EventWriter(path, lambda: commits.append(1))
    writer.start()
    try:
        other = hold_lock(path)
        try:

            async def post_all() -> list[tuple[float, int | None]]:
                out = []
                for text in bodies(hits, 20):
                    started = time.perf_counter()
                    event_id = await writer.append("ANNOTATION_CREATED", text, timeout_s=5.0)
                    out.append((time.perf_counter() - started, event_id))
                return out

            acks = asyncio.run(post_all())
            assert all(event_id is None for _, event_id in acks)  # journaled, not committed
            assert max(t for t, _ in acks) < 0.5  # never waited for the lock (SQLite would wait 30 s)
            assert writer.figures()["events_journaled"] == 20 and writer.figures()["events_failed"] == 0
            assert len(Journal(journal_path(path)).read()) == 20
            with Project.open(path, readonly=True) as p:
                assert bk.queue_counts(p).get("pending", 0) == 0
        finally:
            other.rollback()
            other.close()
        pending = wait_pending(path, 20)  # the lock is free: the writer moves the journal into the queue
        assert [json.loads(e.payload)["annotation"]["id"] for e in pending] == [100 + k for k in range(20)]
    finally:
        writer.stop()
    assert Journal(journal_path(path)).read() == []


def test_the_writer_starts_while_another_process_writes_and_keeps_the_journal(linked):
    path, hits = linked
    journal = Journal(journal_path(path))
    journal.append([("ANNOTATION_CREATED", text) for text in bodies(hits, 3)], bk.now())
    journal.close()
    other = hold_lock(path)
    writer = EventWriter(path, lambda: None)
    try:
        started = time.perf_counter()
        writer.start()  # does not wait 30 s for the lock, nor fail: the journal waits
        assert time.perf_counter() - started < 5
        assert len(Journal(journal_path(path)).read()) == 3
    finally:
        other.rollback()
        other.close()
    try:
        wait_pending(path, 3)
    finally:
        writer.stop()


def test_webhooks_during_a_concurrent_easl_ingest_are_acknowledged_in_time_and_land_once(tmp_path):
    """A real ``easl serve`` and a real ``easl ingest`` of about 450,000 scores (15 MB) running beside it:
    every webhook posted meanwhile gets a 2xx within Label Studio's 1 s, and every annotation is applied exactly
    once (its four scores live, no record doubled) once the ingest has committed; ``verify`` passes."""
    r = run(str(tmp_path), size_mb=15, n_items=20_000, rate=25.0, verify=False)
    d = r.deliveries
    assert r.ingest_rc == 0
    assert len(d.annotation_ids) >= 10, "the ingest ended before any webhook was posted"
    late = [(s, round(t, 3)) for s, t in zip(d.status, d.latency_s) if not 200 <= s < 300 or t > LS_TIMEOUT_S]
    assert not late
    expected = {str(a) for a in d.annotation_ids}
    assert set(r.landed) == expected
    assert all(v == (HIT_SIZE, HIT_SIZE) for v in r.landed.values()), r.landed
    assert r.events.get("failed", 0) == 0 and r.events.get("pending", 0) == 0
    with Project.open(str(tmp_path / "bench.easl"), readonly=True) as p:
        assert p.verify()["ok"]


def test_an_ingest_in_slices_lets_the_service_apply_webhooks_while_it_runs(tmp_path):
    """The same scenario with ``easl ingest --commit-every 100000`` (a file checked whole without the write lock,
    then two transactions): most webhooks are applied while the ingest runs, not after it, and every annotation
    still lands exactly once."""
    r = run(str(tmp_path), size_mb=15, n_items=20_000, rate=25.0, verify=False, commit_every=100_000)
    d = r.deliveries
    assert r.ingest_rc == 0
    assert len(d.annotation_ids) >= 20, "the ingest ended before enough webhooks were posted"
    assert d.late_or_failed == 0
    assert r.applied_during >= 0.4 * len(d.annotation_ids), (r.applied_during, len(d.annotation_ids))
    assert set(r.landed) == {str(a) for a in d.annotation_ids}
    assert all(v == (HIT_SIZE, HIT_SIZE) for v in r.landed.values()), r.landed
    with Project.open(str(tmp_path / "bench.easl"), readonly=True) as p:
        assert p.verify()["ok"]


def test_a_large_journal_is_moved_in_slices_in_arrival_order_with_later_events_behind_it(linked, monkeypatch):
    """After a long ingest the journal holds thousands of events: they are moved a slice per transaction (so that
    acknowledgements are not held up behind one large move), in arrival order, exactly once; an event that arrives
    while the backlog is being moved is journaled behind it."""
    import easl_toolkit.easl_plugin.writer

    monkeypatch.setattr(easl_toolkit.easl_plugin.writer, "MOVE_SLICE", 50)
    moved: list[int] = []  # events moved per transaction
    real_move = bk.move_journal

    def spy(project, records):
        ids = real_move(project, records)
        moved.append(len(ids))
        return ids

    monkeypatch.setattr(bk, "move_journal", spy)
    path, hits = linked
    texts = bodies(hits, 40)
    journal = Journal(journal_path(path))
    journal.append([("ANNOTATION_CREATED", texts[k % 40]) for k in range(400)], bk.now())
    journal.close()
    other = hold_lock(path)
    writer = EventWriter(path, lambda: None)
    try:
        writer.start()

        async def one() -> int | None:
            return await writer.append(
                "TASKS_DELETED", json.dumps({"action": "TASKS_DELETED", "tasks": [{"id": 7}]}), 5.0
            )

        assert asyncio.run(one()) is None  # journaled behind the backlog
    finally:
        other.rollback()
        other.close()
    try:
        pending = wait_pending(path, 401)
    finally:
        writer.stop()
    kinds = [e.kind for e in pending]
    assert len(pending) == 401 and kinds[:400] == ["ANNOTATION_CREATED"] * 400 and kinds[400] == "TASKS_DELETED"
    assert [e.payload for e in pending[:400]] == [texts[k % 40] for k in range(400)]
    assert Journal(journal_path(path)).read() == []
    assert sum(moved) == 401 and max(moved) <= 50


def test_the_journal_is_preallocated_with_zeros_and_appends_overwrite_them_in_place(tmp_path):
    """Appends write into zeros already on disk (no new blocks, no new size to commit); the file grows a step at
    a time; leftovers beyond the records (a torn write) are zeroed on opening; a journal of the earlier format
    (no zeros) reads the same; clearing zeros the records and keeps the space."""
    from easl_toolkit.easl_plugin.journal import GROW_BYTES

    path = str(tmp_path / "p.easl.ls-journal")
    with open(path, "wb") as f:  # the earlier format: lines only
        f.write(json.dumps({"uid": "a", "kind": "K", "payload": "{}", "received_at": "t"}).encode() + b"\n")
    j = Journal(path)
    assert j.count == 1 and os.path.getsize(path) == GROW_BYTES  # preallocated on opening
    j.append([("K", json.dumps({"n": k})) for k in range(3)], "t")
    assert os.path.getsize(path) == GROW_BYTES  # written in place
    j.append([("K", "x" * 1000)] * (GROW_BYTES // 1000), "t")
    assert os.path.getsize(path) == 2 * GROW_BYTES  # the next step
    j.close()
    with open(path, "r+b") as f:  # a torn write beyond the records: a fragment after some zeros
        f.seek(2 * GROW_BYTES - 100)
        f.write(b'{"uid": "torn", "kind"')
    j = Journal(path)
    assert [r["uid"] for r in j.read()][0] == "a" and j.count == 4 + GROW_BYTES // 1000
    with open(path, "rb") as f:
        assert b"torn" not in f.read()
    j.clear()
    with open(path, "rb") as f:
        assert f.read() == bytes(2 * GROW_BYTES)
    assert j.read() == [] and j.count == 0
    j.append([("K", "{}")], "t")
    assert len(j.read()) == 1 and len(Journal(path).read()) == 1
    j.close()
