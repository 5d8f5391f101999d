"""An ingest in slices (``easl ingest --commit-every``, ``Project.ingest_slices``): the file is checked whole
before anything is written, then appended one slice per transaction, with the write lock free between slices.

What must hold: the project, the report and the rejects are those of one transaction over the same chunks; a bad
row refuses the whole file before any slice; another writer gets the lock between slices; a killed ingest leaves
whole slices, and the same ingest again completes it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest

import easl_toolkit.core.tables
from easl_toolkit.core.errors import InvalidRows
from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project
from easl_toolkit.core.tables import iter_table
from easl_toolkit.tui.cli import main
from tests.store_helpers import assert_verified, dump, make_items

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK = 30  #: rows per chunk of the in-process ingests
SLICE = 50  #: rows per slice (at least)


def _project(path, method: str = "easl") -> str:
    """A project of 40 items on the 1-5 scale, with 120 scores ingested (keys ``(item, annotator a0-a2)``)."""
    rng = np.random.default_rng(0)
    first = pd.DataFrame(
        {
            "item_id": [f"i{k % 40:03d}" for k in range(120)],
            "annotator": [f"a{k // 40}" for k in range(120)],
            "score": rng.integers(1, 6, 120),
        }
    )
    with Project.create(path, make_items(40), Hyper(method=method, hit_size=4, seed=1, score_min=1, score_max=5)) as p:
        p.ingest(first, source="first.csv")
    return str(path)


def _annotations(path, seed: int = 1, *, bad: bool = True) -> str:
    """A CSV of 300 rows: new keys drawn with repetition (repeats; with ``bad``, conflicts within and across
    chunks), 40 rows superseding a first-ingest score each, and with ``bad`` a bad score and an unknown item."""
    rng = np.random.default_rng(seed)
    item, who = rng.integers(0, 30, 260), rng.integers(0, 5, 260)
    new = pd.DataFrame(
        {
            "item_id": [f"i{k:03d}" for k in item],
            "annotator": [f"b{k}" for k in who],
            "score": (rng.integers(1, 6, 260) if bad else 1 + (item + who) % 5).astype(object),
        }
    )
    old = pd.DataFrame(
        {"item_id": [f"i{k:03d}" for k in range(40)], "annotator": "a1", "score": rng.integers(1, 6, 40)}
    )
    rows = pd.concat([new, old], ignore_index=True).sample(frac=1.0, random_state=seed).reset_index(drop=True)
    if bad:
        rows.loc[17, "score"] = "lots"
        rows.loc[233, "item_id"] = "nobody"
    rows.to_csv(path, index=False)
    return str(path)


def _figures(path) -> tuple:
    """What an ingest leaves in a project: the live scores, the recorded rejects, the estimates."""
    with Project.open(path, readonly=True) as p:
        assert_verified(p)
        live = p.db.conn.execute("SELECT source_key, score_raw FROM live ORDER BY source_key").fetchall()
        rejects = p.db.conn.execute("SELECT location, reason, payload FROM rejects ORDER BY id").fetchall()
        return live, rejects, p.estimates()


@pytest.mark.parametrize(("method", "defer"), [("easl", False), ("da", False), ("aware", False), ("easl", True)])
def test_slices_give_the_project_report_and_rejects_of_one_transaction(tmp_path, method, defer):
    csv = _annotations(tmp_path / "a.csv")
    one, sliced = _project(tmp_path / "one.easl", method), _project(tmp_path / "sliced.easl", method)
    with Project.open(one) as p:
        a = p.ingest_chunks(iter_table(csv, CHUNK), source=csv, skip_invalid=True)
    pauses = []
    with Project.open(sliced) as p:
        b = p.ingest_slices(
            lambda: iter_table(csv, CHUNK),
            source=csv,
            rows=SLICE,
            skip_invalid=True,
            pause=lambda: pauses.append(1),
            defer_live=defer,
        )
    counts = ("n_rows", "new", "duplicate", "superseded", "rejected")
    assert [getattr(a, c) for c in counts] == [getattr(b, c) for c in counts]
    assert a.superseded > 0 and a.duplicate > 0 and a.rejected > 2  # the file has every kind of row
    assert any("conflicts with an earlier row" in r for r in a.rejects["reason"])
    pd.testing.assert_frame_equal(a.rejects, b.rejects)
    live_a, rejects_a, estimates_a = _figures(one)
    live_b, rejects_b, estimates_b = _figures(sliced)
    assert live_a == live_b and rejects_a == rejects_b
    pd.testing.assert_frame_equal(estimates_a, estimates_b)
    assert b.transactions == len(pauses) + 1 >= 3


def test_a_bad_row_refuses_the_whole_file_before_any_slice_and_lists_every_bad_row(tmp_path):
    csv = _annotations(tmp_path / "a.csv")
    path = _project(tmp_path / "p.easl")
    with Project.open(path) as p:
        a = p.ingest_chunks(iter_table(csv, CHUNK), source=csv, skip_invalid=True)
    path = _project(tmp_path / "q.easl")
    before = dump(path)
    with Project.open(path) as p, pytest.raises(InvalidRows) as refused:
        p.ingest_slices(lambda: iter_table(csv, CHUNK), source=csv, rows=SLICE)
    assert dump(path) == before
    assert len(refused.value.messages) == a.rejected
    assert sorted(refused.value.messages) == sorted(
        f"{r.location}: {r.field}: {r.reason}" for r in a.rejects.itertuples()
    )


def test_another_writer_takes_the_lock_between_slices(tmp_path):
    csv = _annotations(tmp_path / "a.csv", bad=False)
    path = _project(tmp_path / "p.easl")
    got = []

    def pause() -> None:  # another process's writer, which waits for nobody (as the webhook writer)
        with Project.open(path) as other, other.transaction(max_wait_s=0):
            k = len(got)
            other.ingest([{"item_id": "i039", "score": 1 + k % 5, "annotator": f"other{k}"}], source="other")
            got.append(k)

    with Project.open(path) as p:
        report = p.ingest_slices(lambda: iter_table(csv, CHUNK), source=csv, rows=SLICE, pause=pause)
    assert len(got) == report.transactions - 1 >= 3
    with Project.open(path, readonly=True) as p:
        assert_verified(p)
        others = p.db.conn.execute("SELECT COUNT(*) FROM observations WHERE source = 'other'").fetchone()[0]
        keys = p.db.conn.execute("SELECT COUNT(*) FROM live").fetchone()[0]
    assert others == len(got) and keys == 120 + report.new + len(got)


def test_the_wal_stays_the_size_of_one_slice_while_readers_read_all_along(tmp_path):
    """Readers that never stop (the service's connections) keep a passive checkpoint from finishing, so the WAL
    would grow with every slice; the ingest checkpoints it whole after each slice."""
    csv = tmp_path / "a.csv"
    rows = pd.DataFrame(
        {"item_id": [f"i{k % 40:03d}" for k in range(6000)], "annotator": [f"c{k}" for k in range(6000)]}
    )
    rows.assign(score=1 + np.arange(6000) % 5).to_csv(csv, index=False)
    path = _project(tmp_path / "p.easl")
    stop, sizes = threading.Event(), []

    def read_all_along() -> None:
        with Project.open(path, readonly=True) as reader:
            while not stop.is_set():
                with reader.db.reading() as conn:
                    conn.execute("SELECT COUNT(*) FROM live").fetchone()
                    time.sleep(0.002)

    readers = [threading.Thread(target=read_all_along) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        with Project.open(path) as p:
            p.ingest_slices(
                lambda: iter_table(str(csv), 500),
                source=str(csv),
                rows=500,
                pause=lambda: sizes.append(os.path.getsize(f"{path}-wal")),
            )
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert len(sizes) >= 10
    assert max(sizes) <= 2 * sizes[0], sizes


KILLED = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from easl_toolkit.core.store import Project
from easl_toolkit.core.tables import iter_table
pauses = []
def pause():
    pauses.append(1)
    if len(pauses) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
with Project.open({path!r}) as p:
    p.ingest_slices(lambda: iter_table({csv!r}, {chunk}), source={csv!r}, rows={rows}, pause=pause)
"""


def test_a_killed_ingest_keeps_whole_slices_and_the_same_ingest_completes_it(tmp_path):
    csv = _annotations(tmp_path / "a.csv", bad=False)
    whole, path = _project(tmp_path / "whole.easl"), _project(tmp_path / "p.easl")
    with Project.open(whole) as p:
        p.ingest_chunks(iter_table(csv, CHUNK), source=csv)
    code = KILLED.format(repo=REPO, path=path, csv=csv, chunk=CHUNK, rows=SLICE)
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    live_killed = _figures(path)[0]
    live_whole = _figures(whole)[0]
    assert 120 < len(live_killed) < len(live_whole)  # three whole slices, verified
    with Project.open(path) as p:
        again = p.ingest_slices(lambda: iter_table(csv, CHUNK), source=csv, rows=SLICE)
    assert again.duplicate > 0
    assert _figures(path)[0] == live_whole
    pd.testing.assert_frame_equal(_figures(path)[2], _figures(whole)[2])


def test_easl_ingest_commit_every_writes_what_one_transaction_writes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(easl_toolkit.core.tables, "CHUNK_ROWS", CHUNK)
    csv = _annotations(tmp_path / "a.csv")
    one, sliced = _project(tmp_path / "one.easl"), _project(tmp_path / "sliced.easl")
    out = {}
    for path, extra in ((one, []), (sliced, ["--commit-every", str(SLICE)])):
        args = ["ingest", path, csv, "--skip-invalid", "--rejects", f"{path}.rejects.csv", *extra]
        assert main(args) == 0
        out[path] = capsys.readouterr()
        assert main(["export", path, "--output", f"{path}.csv"]) == 0
        capsys.readouterr()
    assert out[one].out.replace("one.easl", "") == out[sliced].out.replace("sliced.easl", "")
    assert re.search(r"ingested it in ([3-9]|\d\d) transactions", out[sliced].err), out[sliced].err
    for suffix in (".rejects.csv", ".csv"):
        with open(one + suffix, "rb") as x, open(sliced + suffix, "rb") as y:
            assert x.read() == y.read()
    assert main(["verify", sliced]) == 0


def test_commit_every_refuses_methods_that_compare_whole_hits_in_order(tmp_path, capsys):
    path = str(tmp_path / "ra.easl")
    Project.create(path, make_items(8), Hyper(method="ra", hit_size=4, seed=1)).close()
    csv = tmp_path / "a.csv"
    pd.DataFrame({"item_id": ["i000"], "score": [50], "hit_id": ["h1"]}).to_csv(csv, index=False)
    assert main(["ingest", path, str(csv), "--commit-every", "10"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --commit-every: the method 'ra' compares") and "Traceback" not in err


def test_a_large_file_into_a_project_linked_to_label_studio_is_ingested_in_slices(tmp_path, monkeypatch, capsys):
    import easl_toolkit.core.store.deferred
    import easl_toolkit.tui.commands.ingest
    from easl_toolkit.easl_plugin import bookkeeping as bk

    monkeypatch.setattr(easl_toolkit.core.tables, "CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(easl_toolkit.core.store.deferred, "LARGE_INPUT_BYTES", 1000)
    monkeypatch.setattr(easl_toolkit.tui.commands.ingest, "SLICE_ROWS", SLICE)
    monkeypatch.setattr(easl_toolkit.tui.commands.ingest, "PAUSE_S", 0.0)
    csv = _annotations(tmp_path / "a.csv", bad=False)
    plain, linked = _project(tmp_path / "plain.easl"), _project(tmp_path / "linked.easl")
    with Project.open(linked) as p:
        bk.set_meta(p, {bk.KEY_PROJECT_ID: "7"})
    assert main(["ingest", plain, csv]) == 0
    assert "transactions" not in capsys.readouterr().err
    assert main(["ingest", linked, csv]) == 0
    assert re.search(r"ingested it in ([3-9]|\d\d) transactions", capsys.readouterr().err)
    assert _figures(plain)[0] == _figures(linked)[0]


def test_the_help_of_commit_every_names_the_size_from_which_a_file_is_large():
    import easl_toolkit.core.store.deferred
    import easl_toolkit.tui.commands.ingest

    assert easl_toolkit.tui.commands.ingest.LARGE_MB * 2**20 == easl_toolkit.core.store.deferred.LARGE_INPUT_BYTES
