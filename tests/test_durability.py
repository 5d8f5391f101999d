"""Durability: a process killed with SIGKILL in the middle of an ingest leaves the project file exactly as it was
(real subprocesses, real SIGKILL, full dumps of the database compared before and after)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from easl_toolkit.core.store import Project
from easl_toolkit.core.tables import read_table
from tests.durability_helpers import N_ROWS, REPO, copy_project, kill_inside
from tests.store_helpers import dump


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
            [sys.executable, "-m", "easl_toolkit.tui.cli", "ingest", str(project), str(big[1])],
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
