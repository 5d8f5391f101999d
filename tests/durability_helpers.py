"""Shared helpers of the durability tests (``tests/test_durability.py``, ``tests/test_durability_stage.py``): a
project with a large annotation file (the module fixture ``big``), byte copies, and a child process that ingests
through the real code path and is SIGKILLed inside its transaction."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project
from tests.store_helpers import make_items

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_ITEMS = 2000
N_ROWS = 60_000

# The child ingests the file through the real code path; an SQLite trace callback (called before each statement
# row runs) announces when the ingest is deep inside its transaction and then waits to be killed.
CHILD = textwrap.dedent("""
    import sys, time
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.tables import iter_table, read_table

    project, path, prefix, nth = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    chunk_rows = int(sys.argv[5]) if len(sys.argv) > 5 else 0  # > 0: the streaming ingest of easl ingest
    defer = len(sys.argv) > 6  # the live index built at the end, as for a file of 96 MiB or more
    p = Project.open(project)
    p.db.conn.execute("PRAGMA cache_size = 50")  # a small page cache spills the transaction's pages to the WAL
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

    p.db.conn.set_trace_callback(trace)
    if chunk_rows:
        p.ingest_chunks(iter_table(path, chunk_rows), source=path, defer_live=defer)
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


def kill_inside(
    project, path, prefix: str, nth: int, chunk_rows: int = 0, *, wal_written: bool = False, defer: bool = False
) -> None:
    """Run :data:`CHILD` (chunks of ``chunk_rows`` rows, or one batch when 0; ``defer``: the live index built at the
    end), wait until it is inside the ingest transaction at the ``nth`` statement that starts with ``prefix``, and
    SIGKILL it; ``wal_written``: check first that the transaction has written pages to the WAL."""
    args = [sys.executable, "-c", CHILD, str(project), str(path), prefix, str(nth)]
    if chunk_rows:
        args += [str(chunk_rows)] + (["defer"] if defer else [])
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
