"""Durability: a process killed with SIGKILL in the middle of an ingest leaves the project file exactly as it was
(real subprocesses, real SIGKILL, full dumps of the database compared before and after)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from core.models import Hyper
from core.store import Project
from core.tables import read_table
from tests.store_helpers import dump, make_items

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_ITEMS = 2000
N_ROWS = 60_000

# The child ingests the file through the real code path; an SQLite trace callback (called before each statement
# row runs) announces when the ingest is deep inside its transaction and then waits to be killed.
CHILD = textwrap.dedent("""
    import sys, time
    from core.store import Project
    from core.tables import iter_table, read_table

    project, path, prefix, nth = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    chunk_rows = int(sys.argv[5]) if len(sys.argv) > 5 else 0  # > 0: the streaming ingest of easl ingest
    p = Project.open(project)
    p._conn.execute("PRAGMA cache_size = 50")  # a small page cache spills the transaction's pages to the WAL
    table = read_table(path)
    seen = 0

    def trace(statement):
        global seen
        if statement.startswith(prefix):
            seen += 1
            if seen == nth:
                sys.stdout.write("inside the transaction\\n")
                sys.stdout.flush()
                time.sleep(120)

    p._conn.set_trace_callback(trace)
    if chunk_rows:
        p.ingest_chunks(iter_table(path, chunk_rows), source=path)
    else:
        p.ingest(table, source=path)
    print("finished")
""")


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A project with N_ITEMS items, some observations already in it, and a large annotation file."""
    d = tmp_path_factory.mktemp("durability")
    project = d / "p.easl"
    rng = np.random.default_rng(0)
    with Project.create(project, make_items(N_ITEMS, extra=False), Hyper()) as p:
        first = [
            {"hit_id": h["hit_id"], "item_id": it["item_id"], "score": 50, "annotator": "early"}
            for h in p.open_hits()[:20]
            for it in h["items"]
        ]
        p.ingest(first, source="early")
    ids = np.asarray([f"i{k:03d}" for k in range(N_ITEMS)], dtype=object)
    rows = pd.DataFrame(
        {
            "item_id": ids[rng.integers(0, N_ITEMS, N_ROWS)],
            "score": rng.integers(0, 101, N_ROWS),
            "annotator": [f"a{k}" for k in range(N_ROWS)],
        }
    )
    # a few rows re-state what is already there (idempotency under the same transaction)
    rows.loc[: len(first) - 1, ["item_id", "score", "annotator"]] = pd.DataFrame(first)[
        ["item_id", "score", "annotator"]
    ].to_numpy()
    path = d / "big.csv"
    rows.to_csv(path, index=False)
    return project, path


def copy_project(src, dst):
    """A byte copy of a closed project file (no -wal/-shm files exist after a clean close)."""
    assert not os.path.exists(f"{src}-wal")
    dst.write_bytes(src.read_bytes())
    return dst


def kill_inside(project, path, prefix: str, nth: int, chunk_rows: int = 0, *, wal_written: bool = False) -> None:
    """Run :data:`CHILD` (chunks of ``chunk_rows`` rows, or one batch when 0), wait until it is inside the ingest
    transaction at the ``nth`` statement that starts with ``prefix``, and SIGKILL it; ``wal_written``: check first
    that the transaction has written pages to the WAL."""
    args = [sys.executable, "-c", CHILD, str(project), str(path), prefix, str(nth)]
    if chunk_rows:
        args.append(str(chunk_rows))
    child = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line == "inside the transaction\n", child.stderr.read()
        if wal_written:
            assert os.path.getsize(f"{project}-wal") > 0
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        child.stdout.close()
        child.stderr.close()


@pytest.mark.parametrize(
    "prefix, nth",
    [
        # kills while the log is written and between the log and the live index: tests/test_durability_stage.py
        ("INSERT INTO state", 2),  # state being saved
        ("INSERT INTO meta", 1),  # state_seq, the last write before COMMIT
    ],
)
def test_sigkill_mid_ingest_leaves_the_file_as_before(tmp_path, big, prefix, nth):
    project = copy_project(big[0], tmp_path / "p.easl")
    before = dump(project)
    kill_inside(project, big[1], prefix, nth, wal_written=True)
    assert dump(project) == before
    with Project.open(project) as p:
        assert p.verify()["ok"]
        # the file is fully usable: the same ingest now succeeds
        report = p.ingest(read_table(big[1]), source="retry")
        assert report.new + report.duplicate + report.superseded == N_ROWS
        assert p.verify()["ok"]


@pytest.mark.parametrize(
    "prefix, nth",
    [
        # kills while the fifth chunk's log is half written or its live rows not yet: tests/test_durability_stage.py
        ("INSERT INTO state", 1),  # the state carried over every chunk being saved, once, before the commit
    ],
)
def test_sigkill_mid_streaming_ingest_leaves_the_file_as_before(tmp_path, big, prefix, nth):
    """The streaming ingest (chunks of 10,000 rows in one transaction) killed after several chunks were appended:
    nothing of them is visible."""
    project = copy_project(big[0], tmp_path / "p.easl")
    before = dump(project)
    kill_inside(project, big[1], prefix, nth, chunk_rows=10_000)
    assert dump(project) == before
    with Project.open(project) as p:
        assert p.verify()["ok"]


def test_sigkill_of_the_cli_at_any_moment_is_all_or_nothing(tmp_path, big):
    """``easl ingest`` killed while it runs: the file is exactly as before, or exactly as after a full ingest."""
    reference = copy_project(big[0], tmp_path / "ref.easl")
    before = dump(reference)
    with Project.open(reference) as p:
        p.ingest(read_table(big[1]), source=str(big[1]))
    after_rows = {line for line in dump(reference) if not line.startswith('INSERT INTO "meta"')}
    outcomes = []
    for k, delay in enumerate((0.0, 0.5, 1.0, 1.5, 2.0)):
        project = copy_project(big[0], tmp_path / f"p{k}.easl")
        wal = f"{project}-wal"
        child = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "ingest", str(project), str(big[1])],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # wait until the command has opened the project (the WAL file exists), then a little longer
        deadline = time.monotonic() + 60
        while not os.path.exists(wal) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        got = dump(project)
        if got == before:
            outcomes.append("before")
        else:
            # committed before the kill: same content as the reference run (timestamps aside)
            assert len(got) == len(dump(reference)), "a partial ingest is visible"
            assert {_without_times(line) for line in got if not line.startswith('INSERT INTO "meta"')} == {
                _without_times(line) for line in after_rows
            }
            outcomes.append("after")
        with Project.open(project) as p:
            assert p.verify()["ok"]
    print("outcomes of the kills:", outcomes)
    assert "before" in outcomes  # at least one kill landed inside the transaction


def _without_times(line: str) -> str:
    """Drop ISO timestamps (created_at differs between two runs) from a dump line."""
    return re.sub(r"'\d{4}-\d\d-\d\dT[0-9:.]+\+00:00'", "'T'", line)
