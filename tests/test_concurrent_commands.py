"""Commands running at once on one project (real subprocesses): two ingests of large files, one of them in slices,
with ``easl verify``, ``easl export`` and ``easl status`` running in a loop beside them. Every reader succeeds,
every row lands once, and the project verifies at the end."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.store import Project

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_ITEMS = 20_000
N_ROWS = 200_000  #: per file: a few seconds of ingest each


def easl(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "easl_toolkit.tui.cli", *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_large_ingests_with_readers_alongside_lose_and_double_nothing(tmp_path):
    path = str(tmp_path / "p.easl")
    items = tmp_path / "items.csv"
    pd.DataFrame({"id": [f"i{k:05d}" for k in range(N_ITEMS)], "text": "t"}).to_csv(items, index=False)
    assert (
        subprocess.run(
            [sys.executable, "-m", "easl_toolkit.tui.cli", "init", path, "--items", str(items)], cwd=REPO
        ).returncode
        == 0
    )
    rng = np.random.default_rng(0)
    files = []
    for who in ("a", "b"):
        rows = pd.DataFrame(
            {
                "item_id": [f"i{k:05d}" for k in rng.integers(0, N_ITEMS, N_ROWS)],
                "score": rng.integers(0, 101, N_ROWS),
                "annotator": [f"{who}{k}" for k in range(N_ROWS)],  # every row its own key
            }
        )
        files.append(str(tmp_path / f"{who}.csv"))
        rows.to_csv(files[-1], index=False)
    writers = [easl("ingest", path, files[0]), easl("ingest", path, files[1], "--commit-every", "50000")]
    readers, failed = 0, []
    while any(w.poll() is None for w in writers):
        for args in (["verify", path], ["export", path, "--output", str(tmp_path / "e.csv")], ["status", path]):
            reader = easl(*args)
            _, err = reader.communicate(timeout=120)
            readers += 1
            if reader.returncode != 0:
                failed.append((args[0], err))
        time.sleep(0.1)
    assert [w.wait() for w in writers] == [0, 0], [w.stderr.read() for w in writers]
    assert readers >= 3 and not failed, failed
    with Project.open(path, readonly=True) as p:
        assert p.verify()["ok"]
        live = p.db.conn.execute("SELECT COUNT(*) FROM live").fetchone()[0]
        log = p.db.conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
    assert live == log == 2 * N_ROWS
