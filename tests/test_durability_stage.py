"""Durability of the chunked ingest: a process killed with SIGKILL while a chunk's rows are being bound into the
log, or after the log was written and before the live index was, leaves the project file exactly as it was (real
subprocesses, real SIGKILL, full dumps compared before and after).

Each chunk's rows are bound into the log 50 at a time, and the live index is copied from the log by one ``INSERT ...
SELECT`` per chunk (:mod:`core.store.log_rows`), so the kill points are named by statement and by chunk: the child
of ``tests/test_durability.py`` waits inside its trace callback at the ``nth`` statement that starts with
``prefix``.
"""

from __future__ import annotations

import pytest

from easl_toolkit.core.store import Project
from easl_toolkit.core.tables import read_table
from tests.durability_helpers import N_ROWS, copy_project, kill_inside
from tests.store_helpers import dump

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "prefix, nth, chunk_rows",
    [
        ("INSERT INTO observations", 600, 0),  # one batch, half of the log written (50 rows per statement)
        ("INSERT OR FAIL INTO live", 1, 0),  # one batch: the log written, the live index not yet
        ("INSERT INTO observations", 900, 10_000),  # four chunks appended, the fifth half written
        ("INSERT OR FAIL INTO live", 5, 10_000),  # the fifth chunk's log written, its live rows not yet
    ],
)
def test_sigkill_inside_the_chunked_ingest_leaves_the_file_as_before(tmp_path, big, prefix, nth, chunk_rows):
    project = copy_project(big[0], tmp_path / "p.easl")
    before = dump(project)
    kill_inside(project, big[1], prefix, nth, chunk_rows)
    assert dump(project) == before
    with Project.open(project) as p:
        assert p.verify()["ok"]
        report = p.ingest(read_table(big[1]), source="retry")  # the file is fully usable
        assert report.new + report.duplicate + report.superseded == N_ROWS
        assert p.verify()["ok"]


@pytest.mark.parametrize(
    "prefix, nth",
    [
        ("INSERT OR IGNORE INTO live", 1),  # a large file's end pass: the log written, its live index being built
        ("INSERT INTO state", 1),  # after the end pass, the state being saved
    ],
)
def test_sigkill_inside_the_end_pass_of_a_large_ingest_leaves_the_file_as_before(tmp_path, big, prefix, nth):
    project = copy_project(big[0], tmp_path / "p.easl")
    before = dump(project)
    kill_inside(project, big[1], prefix, nth, 10_000, defer=True)
    assert dump(project) == before
    with Project.open(project) as p:
        assert p.verify()["ok"]
