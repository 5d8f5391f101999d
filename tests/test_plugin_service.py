"""The plugin's web app, durable queue, worker and streaming selection on a real project file (no Label Studio:
these parts need none; tests/test_ls_plugin.py runs the whole loop against a real server)."""

from __future__ import annotations

import base64
import json

import pandas as pd
import pytest
import requests

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.auth import SECRET_HEADER
from easl_toolkit.easl_plugin.service import ServiceConfig, build_app
from easl_toolkit.easl_plugin.worker import Worker
from tests.ls_server import free_port
from tests.service_helpers import AUTH, HOOK, Client, all_events, created, give_token, link

N = 20


def _project(tmp_path, method: str = "easl") -> str:
    items = pd.DataFrame({"item_id": [f"x{i:02d}" for i in range(N)], "text": [f"text {i}" for i in range(N)]})
    path = tmp_path / "p.easl"
    Project.create(path, items, Hyper(method=method, hit_size=4, seed=3)).close()
    give_token(path)
    return str(path)


@pytest.fixture
def project_path(tmp_path):
    return _project(tmp_path)


@pytest.fixture(params=["easl", "aware"])
def any_method_project_path(tmp_path, request):
    """The same project with the paper's method and with the annotator-aware one: the worker's apply path and the
    streaming top-up must not depend on the model."""
    return _project(tmp_path, request.param)


# ------------------------------------------------------------------------------------------------------ web app


def test_endpoints_auth_secret_limits_and_durable_queue(project_path):
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"), webhook_secret="top", max_body_bytes=4000)
    commits = []
    app = build_app(cfg, on_event=lambda: commits.append(1))
    with Client(app) as c:
        assert c.get("/health").json()["status"] == "UP"
        assert c.post("/setup", json={"project": "3.123"}).status_code == 401
        assert c.post("/setup", json={"project": "3.123"}, headers=AUTH).json()["model_version"]
        bad = {"Authorization": "Basic " + base64.b64encode(b"ann:nope").decode()}
        assert c.post("/setup", json={}, headers=bad).status_code == 401
        assert c.post("/predict", json={"tasks": [{"id": 1}]}, headers=AUTH).json()["results"] == []
        assert c.get("/versions", headers=AUTH).json()["versions"]
        hook = {**AUTH, SECRET_HEADER: "top"}
        assert c.post("/webhook", json={"action": "START_TRAINING"}, headers=AUTH).status_code == 401
        assert (
            c.post("/webhook", json={"action": "START_TRAINING"}, headers={**AUTH, SECRET_HEADER: "x"}).status_code
            == 401
        )
        r = c.post("/webhook", content=b"{oops", headers=hook)
        assert r.status_code == 400 and r.json()["error"].startswith("malformed JSON at line 1 column 2")
        r = c.post("/webhook", content=b"x" * 5000, headers=hook)
        assert r.status_code == 413
        r = c.post("/webhook", json={"action": "PROJECT_UPDATED"}, headers=hook)
        assert r.json() == {"status": "ignored", "action": "PROJECT_UPDATED"}
        r = c.post("/webhook", json={"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 9}]}, headers=hook)
        assert r.status_code == 200 and r.json()["status"] == "queued"
        event_id = r.json()["event_id"]
        # acknowledged means committed: another connection sees it at once
        with Project.open(project_path, readonly=True) as p:
            rows = [(e.kind, e.status, e.payload) for e in all_events(p)]
        assert [(k, st, json.loads(t)) for k, st, t in rows] == [
            ("ANNOTATIONS_DELETED", "pending", {"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 9}]})
        ]
        assert event_id == 1 and commits
    with Project.open(project_path, readonly=True) as p:  # nothing else was queued
        assert bk.queue_counts(p) == {"pending": 1, "done": 0, "failed": 0}


def test_many_concurrent_webhooks_are_all_queued_once(project_path):
    import concurrent.futures as cf

    app = build_app(ServiceConfig(project_path=project_path))
    with Client(app) as c:

        def send(k):
            return c.post("/webhook", json={"action": "TASKS_DELETED", "tasks": [{"id": k}]}).json()["event_id"]

        with cf.ThreadPoolExecutor(16) as ex:
            ids = list(ex.map(send, range(200)))
    assert sorted(ids) == list(range(1, 201))
    with Project.open(project_path, readonly=True) as p:
        payloads = [json.loads(e.payload) for e in all_events(p)]
    assert sorted(x["tasks"][0]["id"] for x in payloads) == list(range(200))


# ------------------------------------------------------------------------------------------------------- worker


def test_worker_applies_events_idempotently(any_method_project_path):
    project_path = any_method_project_path
    linked = link(project_path)
    with Project.open(project_path) as p:
        hits = p.open_hits()
        h0, h1, h2 = hits[:3]
        events = [
            created(h0, 1, 100, [10, 20, 30, 40]),
            created(h0, 1, 100, [10, 20, 30, 40]),  # duplicate delivery
            created(h1, 2, 101, [50, 50, 50, 50]),
            created(h1, 2, 101, [60, 60, 60, 60], action="ANNOTATION_UPDATED"),  # supersede
            created(h2, 3, 102, [0, 0, 0, 500]),  # out of range
            {**created(h2, 4, 102, [1, 2, 3, 4]), "annotation": {"id": 4, "was_cancelled": True, "result": []}},
            created(h0, 9, 100, [1, 1, 1, 1], pid=7),  # another LS project
            {"action": "ANNOTATIONS_DELETED", "project": {"id": 42}, "annotations": [{"id": 2}]},
            {"action": "START_TRAINING", "project": {"id": 42}},
            {"action": "ANNOTATION_CREATED", "project": {"id": 42}, "annotation": {}, "task": {}},  # broken
        ]
        bk.enqueue(p, [(e["action"], json.dumps(e)) for e in events])
        worker = Worker(project_path, api_key=None)
        assert worker.drain(p, linked) == len(events)
        assert bk.queue_counts(p) == {"pending": 0, "done": len(events) - 1, "failed": 1}
        notes = [e.note for e in all_events(p)]
        assert notes[:4] == ["superseded by event 2", None, "superseded by event 4", None]
        assert notes[4] == "rejected" and notes[5] == "skipped" and notes[6].startswith("ignored: event of Label")
        assert notes[8] == "reconciliation requested" and worker.reconcile_requested.is_set()
        assert notes[9].startswith("KeyError")
        r = p.ratings()
        assert sorted(r["annotation_id"].unique()) == ["1"]  # 2 deleted, 3 rejected, 4 skipped
        assert sorted(r["score"]) == [10.0, 20.0, 30.0, 40.0]
        assert [x.reason for x in p.rejects(source=bk.SOURCE)[0]] == [
            "result[3] (score_3): score 500 is outside [0, 100]"
        ]
        # the annotation -> task map and task -> HIT map are kept
        assert (
            p.local_id(bk.ANNOTATION, 1) == "100"
            and p.local_id(bk.ANNOTATION, 2) is None
            and p.local_id(bk.TASK, 100) == h0["hit_id"]
        )
        # task deletion withdraws the HIT
        bk.enqueue(p, [("TASKS_DELETED", json.dumps({"action": "TASKS_DELETED", "tasks": [{"id": 100}]}))] * 2)
        worker.drain(p, linked)
        assert {h["hit_id"]: h["status"] for h in p.hits()}[h0["hit_id"]] == "retracted"
        assert p.ratings().empty
        assert p.verify()["ok"]


def test_events_wait_until_the_project_is_linked(project_path):
    """`easl serve` may start before `easl ls setup`: events queue up and are applied once linked."""
    with Project.open(project_path) as p:
        hit = p.open_hits()[0]
        bk.enqueue(p, [("ANNOTATION_CREATED", json.dumps(created(hit, 5, 200, [5, 6, 7, 8])))])
    worker = Worker(project_path, api_key=None, reconcile_interval_s=0.2)
    worker.start()
    try:
        import time

        time.sleep(0.5)
        with Project.open(project_path, readonly=True) as p:
            assert bk.queue_counts(p)["pending"] == 1
        link(project_path)
        worker.notify()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with Project.open(project_path, readonly=True) as p:
                if bk.queue_counts(p)["pending"] == 0:
                    break
            time.sleep(0.05)
    finally:
        worker.stop()
    with Project.open(project_path, readonly=True) as p:
        assert sorted(p.ratings()["score"]) == [5.0, 6.0, 7.0, 8.0]


# ---------------------------------------------------------------------------------------------------- streaming


def test_streaming_top_up_never_puts_an_item_in_two_open_hits(any_method_project_path):
    project_path = any_method_project_path
    with Project.open(project_path) as p:
        hits = p.open_hits()
        assert len(hits) == N // 4
        # annotate three HITs of the covering iteration: 2 remain open
        for k, h in enumerate(hits[:3]):
            p.ingest(
                [
                    {"item_id": it["item_id"], "score": 10.0 * k, "hit_id": h["hit_id"], "annotation_id": str(k)}
                    for it in h["items"]
                ],
                source="test",
            )
        added = p.top_up_hits(4)
        assert added == 2
        mask, n_open = p.open_item_mask()
        assert n_open == 4
        records = p.open_hits(every_iteration=True)
        items = [it["item_id"] for h in records for it in h["items"]]
        assert len(items) == len(set(items)) == mask.sum() == 16
        # no room for another full HIT among the 4 free items once 4 HITs are open: asking for 6 adds one
        assert p.top_up_hits(6) == 1 and p.open_item_mask()[1] == 5
        assert p.top_up_hits(6) == 0  # every item is in an open HIT
        assert p.top_up_hits(2) == 0
        assert p.verify()["ok"]


def test_ls_status_before_and_after_linking(project_path, capsys):
    from easl_toolkit.tui.cli import main

    assert main(["ls", "status", project_path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["linked"] is False and out["linked_reason"] == "not linked yet: run easl ls setup"
    assert out["events"] == {"pending": 0, "done": 0, "failed": 0} and out["rejects"] == []
    link(project_path, pid=9)
    with Project.open(project_path) as p:
        for _ in range(2):  # recorded once
            p.add_reject(
                source=bk.SOURCE,
                location="label-studio task 3 annotation 4",
                reason="result[0] (score_0): score 101 is outside [0, 100]",
                payload={},
            )
    assert main(["ls", "status", project_path]) == 0
    text = capsys.readouterr().out
    assert "linked to Label Studio project 9" in text and "rejected annotations: 1" in text
    assert "task 3 annotation 4: result[0] (score_0): score 101 is outside [0, 100]" in text


# ------------------------------------------------------------------------------------------------------ journal


def test_journal_moves_exactly_once_and_drops_a_torn_line(project_path):
    from easl_toolkit.easl_plugin.journal import MOVED_KEY, Journal, journal_path

    jp = journal_path(project_path)
    j = Journal(jp)
    j.append([("TASKS_DELETED", '{"action": "TASKS_DELETED", "tasks": [{"id": 1}]}')], bk.now())
    j.append(
        [
            ("TASKS_DELETED", '{"action": "TASKS_DELETED", "tasks": [{"id": 2}]}'),
            ("TASKS_DELETED", '{"action": "TASKS_DELETED", "tasks": [{"id": 3}]}'),
        ],
        bk.now(),
    )
    j.close()
    with open(jp, "ab") as f:  # a crash in the middle of writing a fourth (never acknowledged) record
        f.write(b'{"uid": "torn", "kind": "TASKS_DEL')
    j = Journal(jp)  # reopening cuts the torn tail so that new records start on a clean line
    assert j.count == 3
    j.append([("TASKS_DELETED", '{"action": "TASKS_DELETED", "tasks": [{"id": 4}]}')], bk.now())
    records = j.read()
    assert [json.loads(r["payload"])["tasks"][0]["id"] for r in records] == [1, 2, 3, 4]
    with Project.open(project_path) as p:
        assert len(bk.move_journal(p, records)) == 4
        # a crash after the move committed but before the journal was cleared: moving again adds nothing
        assert bk.move_journal(p, records) == []
        assert bk.get_meta(p, MOVED_KEY) == records[-1]["uid"]
        j.clear()
        assert j.read() == [] and j.count == 0
        ids = [json.loads(e.payload)["tasks"][0]["id"] for e in all_events(p)]
    assert ids == [1, 2, 3, 4]
    j.close()


def test_writer_spills_to_the_journal_while_the_file_is_busy(project_path):
    """While the worker holds the write gate, acknowledgements do not wait: events go to the journal and reach
    the events table, in arrival order, once the gate is free."""
    import threading
    import time

    gate = threading.Lock()
    from easl_toolkit.easl_plugin.writer import EventWriter

    writer = EventWriter(project_path, lambda: None, gate=gate)
    app = build_app(ServiceConfig(project_path=project_path), writer=writer)
    with Client(app) as c:
        gate.acquire()
        # a writer that waited for the gate would hold its acknowledgement until this release, 20 s from now
        release = threading.Timer(20.0, gate.release)
        release.start()
        try:
            acks = []
            for k in range(5):  # spaced out, so that the writer is idle with a non-empty journal in between
                acks.append(c.post("/webhook", json={"action": "TASKS_DELETED", "tasks": [{"id": k}]}).json())
                time.sleep(0.1)
            assert all(a["status"] == "queued" and a["journaled"] and a["event_id"] is None for a in acks)
            # the idle writer never waits for the gate: each acknowledgement took about one fsync (milliseconds;
            # more on a loaded machine), far from the 20 s hold of the gate
            assert max(a["ms"] for a in acks) < 5000, [a["ms"] for a in acks]
            with Project.open(project_path, readonly=True) as p:
                assert bk.queue_counts(p)["pending"] == 0
        finally:
            release.cancel()
            if gate.locked():
                gate.release()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with Project.open(project_path, readonly=True) as p:
                if bk.queue_counts(p)["pending"] == 5:
                    break
            time.sleep(0.05)
        r = c.post("/webhook", json={"action": "TASKS_DELETED", "tasks": [{"id": 5}]}).json()
        assert r["journaled"] is False and r["event_id"] == 6
    with Project.open(project_path, readonly=True) as p:
        ids = [json.loads(e.payload)["tasks"][0]["id"] for e in all_events(p)]
    assert ids == [0, 1, 2, 3, 4, 5]


def test_serve_runs_the_worker_in_a_child_that_lives_and_dies_with_it(project_path, tmp_path):
    """`easl serve` as users run it: the worker is a child process; if it dies, the server stops (so that a
    supervisor restarts both) and queued events are kept; on restart the queue is applied."""
    import os
    import signal
    import subprocess
    import sys
    import time

    link(project_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LABEL_STUDIO_API_KEY"}
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 (a server's log, open for its lifetime)
    cmd = [sys.executable, "-m", "easl_toolkit.tui.cli", "serve", project_path, "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        health = None
        while time.monotonic() < deadline and health is None:
            try:
                health = requests.get(f"{url}/status", timeout=1).json()
            except requests.RequestException:
                time.sleep(0.1)
        assert health["worker_alive"] and health["worker_pid"] != proc.pid
        with Project.open(project_path, readonly=True) as p:
            hit = p.open_hits()[0]
        r = requests.post(f"{url}/webhook", json=created(hit, 77, 300, [1, 2, 3, 4]), headers=HOOK, timeout=5)
        assert r.status_code == 200
        deadline = time.monotonic() + 20
        while requests.get(f"{url}/status", timeout=5).json()["events_applied"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        os.kill(health["worker_pid"], signal.SIGKILL)
        assert proc.wait(30) != 0  # the server noticed and stopped in order, reporting failure
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()
    text = (tmp_path / "serve.log").read_text()
    assert "the worker process exited unexpectedly" in text and "Application shutdown complete" in text
    with Project.open(project_path, readonly=True) as p:
        assert sorted(p.ratings()["score"]) == [1.0, 2.0, 3.0, 4.0]


# ------------------------------------------------------------------------------------- the campaign's figures


def test_predict_answers_each_tasks_estimates_and_setup_the_iteration(project_path):
    """`/predict` gives one prediction per task, the task's items' current estimates on their
    sliders and the 95% intervals in the text; `/setup` names the iteration as the model version."""
    link(project_path)
    with Project.open(project_path) as p:
        hit = p.next_hits()[0]
        ids = [it["item_id"] for it in hit["items"]]
        p.ingest(
            [{"item_id": i, "score": s, "hit_id": hit["hit_id"], "annotation_id": "a1"} for i, s in zip(ids, (0, 30))]
            + [
                {"item_id": i, "score": s, "hit_id": hit["hit_id"], "annotation_id": "a1"}
                for i, s in zip(ids[2:], (70, 100))
            ],
            source="test",
        )
        est = p.estimates().set_index("item_id")
    cfg = ServiceConfig(project_path=project_path)
    shown = [ids[3], ids[0], ids[2], ids[1]]
    with Client(build_app(cfg)) as c:
        assert c.post("/setup", json={"project": "3.1"}).json()["model_version"] == "iteration-0"
        body = c.post("/predict", json={"tasks": [{"id": 7, "data": {"item_ids": shown}}, {"id": 8, "data": {}}]})
    first, other = body.json()["results"]
    assert body.json()["model_version"] == first["model_version"] == "iteration-0"
    assert other["result"] == []
    # one text bound to no control (it pre-fills no slider), a line per item in the order shown
    (result,) = first["result"]
    assert result["from_name"] == "easl_estimates" and result["type"] == "textarea"
    for line, item in zip(result["value"]["text"], shown, strict=True):
        est_, lo, hi = (round(float(est.loc[item, c]), 1) for c in ("estimate", "ci_low", "ci_high"))
        assert line == f"{item}: {est_} [{lo}, {hi}], 1 scores"
    widths = (est.loc[shown, "ci_high"] - est.loc[shown, "ci_low"]).to_numpy()
    assert first["score"] == pytest.approx(1 - widths.mean() / 100, abs=1e-4)


def test_task_holders_name_the_newest_draft_or_annotation():
    from easl_toolkit.easl_plugin.campaign import task_holders

    tasks = [
        {"id": 1, "drafts": [{"user": "a@x.org", "updated_at": "2026-01-01T10:00:00Z"}], "annotations": []},
        {
            "id": 2,
            "drafts": [{"user": "a@x.org", "updated_at": "2026-01-01T10:00:00Z"}],
            "annotations": [{"completed_by": 5, "was_cancelled": True, "updated_at": "2026-01-01T11:00:00Z"}],
        },
        {"id": 3, "created_at": "2026-01-01T09:00:00Z", "drafts": [], "annotations": []},
    ]
    out = task_holders(tasks, {"5": "b@x.org"})
    assert out == {
        "1": {
            "annotator": "a@x.org",
            "how": "draft",
            "at": "2026-01-01T10:00:00Z",
            "active_at": "2026-01-01T10:00:00Z",
            "created_at": "",
        },
        "2": {
            "annotator": "b@x.org",
            "how": "skipped",
            "at": "2026-01-01T11:00:00Z",
            "active_at": "2026-01-01T11:00:00Z",
            "created_at": "",
        },
        # nobody worked on it: no activity (Label Studio shows no locks), only when it was created
        "3": {"created_at": "2026-01-01T09:00:00Z"},
    }


def test_an_untouched_task_is_not_idle_and_a_fresh_one_waits_from_its_re_issue():
    """`easl ls status`: a task nobody worked on has no idle time (its clock starts at the first draft, not at
    its creation); its waiting time counts from its creation or re-issue, the same clock right after a re-issue."""
    from easl_toolkit.tui.commands.ls import _idle

    now = 1767265200.0  # 2026-01-01T11:00:00Z
    untouched = _idle({"created_at": "2026-01-01T10:59:00Z"}, "2026-01-01T10:00:00Z", now)
    assert untouched["idle_seconds"] is None and "no task locks" in untouched["idle_reason"]
    assert untouched["waiting_seconds"] == 60.0  # since the re-issue, not since the HIT was chosen
    drafted = _idle({"created_at": "2026-01-01T10:00:00Z", "active_at": "2026-01-01T10:58:00Z"}, None, now)
    assert drafted["idle_seconds"] == 120.0 and drafted["waiting_seconds"] == 3600.0
    assert _idle(None, "2026-01-01T10:30:00Z", now)["waiting_seconds"] == 1800.0  # pushed since the listing


# --------------------------------------------------------------------------------------------------- tombstones


def _drain(p: Project, linked, *events: dict) -> None:
    """Queue ``events`` and let the worker apply them (one drain per call: no coalescing across calls)."""
    bk.enqueue(p, [(e["action"], json.dumps(e)) for e in events])
    Worker(p.path, api_key=None).drain(p, linked)


def _version(body: dict, at: str) -> dict:
    body["annotation"]["updated_at"] = at
    return body


def _deleted(*ids: int) -> dict:
    return {"action": "ANNOTATIONS_DELETED", "project": {"id": 42}, "annotations": [{"id": i} for i in ids]}


def test_a_deleted_annotation_stays_deleted_unless_label_studio_reports_a_newer_version(project_path):
    """Created, deleted, then delivered again (a replay, a late update, a delivery without a version time):
    refused with a reject each, nothing comes back; deleting twice keeps the first tombstone; a version later than
    the deletion lifts the tombstone and is applied."""
    from easl_toolkit.easl_plugin.ingest import DELETED

    linked = link(project_path)
    with Project.open(project_path) as p:
        h0 = p.open_hits()[0]
        first = _version(created(h0, 1, 100, [10, 20, 30, 40]), "2020-01-01T10:00:00Z")
        _drain(p, linked, first, first)  # created twice: applied once
        assert len(p.ratings()) == 4
        _drain(p, linked, _deleted(1))
        tombstone = p.local_id(DELETED, 1)
        assert p.ratings().empty and tombstone is not None
        late = _version(created(h0, 1, 100, [50] * 4, action="ANNOTATION_UPDATED"), "2020-01-01T11:00:00+00:00")
        for body in (first, late, created(h0, 1, 100, [1, 2, 3, 4])):
            _drain(p, linked, body)
            assert p.ratings().empty
        reasons = [r.reason for r in p.rejects(source=bk.SOURCE)[0]]
        assert len(reasons) == 3 and all(f"annotation 1 was deleted (tombstone {tombstone})" in r for r in reasons)
        assert "it carries no version time" in reasons[2]
        assert [e.note for e in all_events(p)][-3:] == ["rejected"] * 3
        _drain(p, linked, _deleted(1))  # deleted twice: the first tombstone stays
        assert p.local_id(DELETED, 1) == tombstone
        newer = _version(created(h0, 1, 100, [60] * 4, action="ANNOTATION_UPDATED"), "2999-01-01T00:00:00Z")
        _drain(p, linked, newer)
        assert sorted(p.ratings()["score"]) == [60.0] * 4 and p.local_id(DELETED, 1) is None
        assert p.verify()["ok"]


def test_a_tombstone_is_not_older_than_the_version_it_deleted(project_path):
    """A Label Studio clock ahead of this one: the tombstone takes the deleted version's time, so a replay of that
    same version is still refused."""
    linked = link(project_path)
    with Project.open(project_path) as p:
        ahead = _version(created(p.open_hits()[0], 3, 100, [10, 20, 30, 40]), "2999-01-01T00:00:00Z")
        _drain(p, linked, ahead, _deleted(3))
        _drain(p, linked, ahead)
        assert p.ratings().empty and p.verify()["ok"]


def test_reconciliation_does_not_bring_back_a_deleted_annotation(project_path):
    """Reconciliation's path (``prepare_annotations`` and ``commit_annotations`` against the live scores) refuses
    a deleted annotation listed again with its old version, and applies the others of the batch."""
    from easl_toolkit.easl_plugin.ingest import IngestOutcome, apply_annotations
    from easl_toolkit.easl_plugin.reconcile import live_scores

    linked = link(project_path)
    with Project.open(project_path) as p:
        h0, h1 = p.open_hits()[:2]
        gone = _version(created(h0, 5, 100, [10, 20, 30, 40]), "2020-01-01T10:00:00Z")
        kept = _version(created(h1, 6, 101, [1, 2, 3, 4]), "2020-01-01T10:00:00Z")
        _drain(p, linked, gone, kept, _deleted(5))
        pairs = [(b["annotation"], b["task"]) for b in (gone, kept)]
        for _ in range(2):  # every reconciliation refuses it again; the reject is recorded once
            with p.transaction():
                outcomes = apply_annotations(p, linked.layout, pairs, live_scores(p))
            assert outcomes == [IngestOutcome.REJECTED, IngestOutcome.UNCHANGED]
        assert sorted(p.ratings()["annotation_id"].unique()) == ["6"]
        assert p.rejects(source=bk.SOURCE)[1] == 1 and p.verify()["ok"]


def test_a_replayed_annotation_of_a_deleted_task_stays_out(project_path):
    linked = link(project_path)
    with Project.open(project_path) as p:
        body = created(p.open_hits()[0], 7, 100, [10, 20, 30, 40])
        _drain(p, linked, body, {"action": "TASKS_DELETED", "project": {"id": 42}, "tasks": [{"id": 100}]})
        _drain(p, linked, body)
        assert p.ratings().empty and "was retracted" in p.rejects(source=bk.SOURCE)[0][0].reason


def test_a_deletion_found_by_a_listing_is_dated_by_the_listing(project_path):
    """A reconciliation passes the time its listing started: an annotation missing from the listing because it
    was made after it comes back with its next delivery, while an older replay stays refused."""
    from easl_toolkit.easl_plugin.ingest import DELETED, delete_annotations

    linked = link(project_path)
    with Project.open(project_path) as p:
        body = _version(created(p.open_hits()[0], 8, 100, [10, 20, 30, 40]), "2030-01-01T10:00:00Z")
        _drain(p, linked, body)
        with p.transaction():
            delete_annotations(p, [8], at="2030-01-01T09:59:59+00:00")
        assert p.ratings().empty and p.local_id(DELETED, 8) == "2030-01-01T10:00:00.000000+00:00"  # the version's time
        _drain(p, linked, _version(created(p.open_hits()[0], 8, 100, [10, 20, 30, 40]), "2030-01-01T09:00:00Z"))
        assert p.ratings().empty
        _drain(p, linked, _version(created(p.open_hits()[0], 8, 100, [11, 20, 30, 40]), "2030-01-01T10:00:01Z"))
        assert sorted(p.ratings()["score"]) == [11.0, 20.0, 30.0, 40.0] and p.verify()["ok"]


def test_stalled_hits_by_inactivity_never_an_untouched_hit_that_holds_nothing_up(tmp_path):
    """Re-issue rules (easl_plugin.push): an annotated open HIT at once; a drafted HIT once idle past the timeout;
    an untouched idle HIT only when it holds the queue up (fewer open than the depth, no free items)."""
    from easl_toolkit.easl_plugin import bookkeeping as bk
    from easl_toolkit.easl_plugin.push import stalled_hits

    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(10)], "text": [f"text {k}" for k in range(10)]})
    path = tmp_path / "p.easl"
    Project.create(path, items, Hyper(method="easl", hit_size=5, seed=3)).close()
    with Project.open(path) as p:
        a, b = sorted(h["hit_id"] for h in p.next_hits())
        old, fresh = "2026-01-01T10:00:00Z", "2026-01-01T10:59:30Z"
        now = 1767265200.0  # 2026-01-01T11:00:00Z

        def task(tid, hit, created, drafts=(), annotations=()):
            return {
                "id": tid,
                "data": {"hit_id": hit},
                "created_at": created,
                "drafts": list(drafts),
                "annotations": list(annotations),
            }

        draft_old = {"user": "x@y.org", "updated_at": old}
        # a: untouched and idle for an hour; b: a draft an hour old -> only b (two HITs open, depth 1)
        assert stalled_hits(p, [task(1, a, old), task(2, b, old, [draft_old])], 600, now) == {b: "abandoned"}
        # b's draft is recent: nothing
        recent = {"user": "x@y.org", "updated_at": fresh}
        assert stalled_hits(p, [task(1, a, old), task(2, b, old, [recent])], 600, now) == {}
        # a skipped or rejected annotation on b's current task: at once, whatever the time
        skipped = {"completed_by": 5, "was_cancelled": True, "updated_at": fresh}
        assert stalled_hits(p, [task(1, a, fresh), task(2, b, fresh, (), [skipped])], 600, now) == {b: "annotated"}
        # the queue wants 3 HITs and no item is free: the idle untouched HIT holds it up
        p.set_meta({bk.KEY_QUEUE_DEPTH: "3"})
        assert stalled_hits(p, [task(1, a, old), task(2, b, fresh)], 600, now) == {a: "holding up"}
        # a draft saved long after the creation: idle since the draft, not since the creation
        assert stalled_hits(p, [task(1, a, fresh), task(2, b, old, [recent])], 600, now) == {}


def test_easl_status_counts_refused_deliveries_apart_from_rejected_rows(project_path, capsys):
    """`easl status`'s "rejected rows" are the scores that failed validation (what `easl ls status` calls rejected
    annotations); refused or malformed webhook deliveries are counted apart."""
    from easl_toolkit.easl_plugin import bookkeeping as bk
    from easl_toolkit.easl_plugin.deliveries import DELIVERY_SOURCE
    from easl_toolkit.tui.cli import main

    with Project.open(project_path) as p:
        p.add_reject(source=bk.SOURCE, location="task 1, annotation 2", reason="score 500 is outside [0, 100]")
        for k in range(2):
            p.add_reject(source=DELIVERY_SOURCE, location=f"refused webhook from 127.0.0.1 #{k}", reason="wrong token")
    assert main(["status", project_path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n_rejected_rows"], out["n_deliveries_refused"], out["n_rejects"]) == (1, 2, 3)
    assert main(["status", project_path]) == 0
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in capsys.readouterr().out.splitlines()
        if line.count("│") == 3
    }
    assert rows["rejected rows (scores that failed validation)"] == "1"
    assert rows["webhook deliveries refused or malformed"] == "2"
