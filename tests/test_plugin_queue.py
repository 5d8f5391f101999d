"""The Label Studio queue without Label Studio: the depth measured from the active annotators, their submission
rate and the backend's cycle; HITs chosen ahead recorded as the top-up would have chosen them; a push that never
waits for a slow reconciliation or a replacement of the predictions (a stand-in client); the annotators' note."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.queue import DEFAULT_CYCLE_S, Ahead, QueueMeter, QueuePlan
from tests.service_helpers import created, link


@pytest.fixture
def project_path(tmp_path) -> str:
    items = pd.DataFrame({"item_id": [f"x{i:02d}" for i in range(40)], "text": [f"text {i}" for i in range(40)]})
    path = tmp_path / "q.easl"
    Project.create(path, items, Hyper(method="easl", hit_size=4, seed=3)).close()
    return str(path)


def test_the_depth_covers_a_burst_of_every_active_annotator_and_the_submissions_of_one_cycle(project_path):
    now = 1_000_000.0
    with Project.open(project_path) as p:
        meter = QueueMeter()
        plan = meter.plan(p, now)
        assert (plan.active, plan.burst, plan.depth, plan.cycle_s) == (0, 0, 1, DEFAULT_CYCLE_S)
        for k in range(5):  # five annotators submitted in the last minute
            meter.submitted(str(k), now - 10 * k)
        plan = meter.plan(p, now)
        assert plan.active == 5 and plan.burst == 5 and plan.depth == 11  # 5 held + 5 free for a burst + 1
        for k in range(115):  # a fast crowd: 120 submissions in the last minute, 2 s per backend cycle
            meter.submitted(str(k % 5), now - (k % 50))
        meter.cycle(3.0)
        plan = meter.plan(p, now)
        assert plan.rate_per_s == 2.0 and plan.cycle_s == 3.0 and plan.burst == 6 and plan.depth == 12
        # an annotator seen only by a draft (the last reconciliation) counts; one seen 6 minutes ago does not
        p.set_meta({bk.KEY_TASK_HOLDERS: json.dumps({"9": {"annotator": "d@x.org", "how": "draft", "at": "2026"}})})
        meter.saw("old", now - 360)
        assert meter.plan(p, now).active == 5
        p.set_meta({bk.KEY_QUEUE_DEPTH: "2"})  # --queue-depth: fixed
        fixed = meter.plan(p, now)
        assert fixed.depth == 2 and fixed.fixed
        assert QueuePlan(**json.loads(fixed.to_json())) == fixed


def test_an_annotator_known_by_id_and_by_e_mail_counts_once(project_path):
    now = 1_000_000.0
    with Project.open(project_path) as p:
        p.map_external(bk.USER, [("7", "ann@x.org")])
        meter = QueueMeter()
        meter.submitted("7", now - 5)
        meter.saw("ann@x.org", now - 1)
        assert meter.plan(p, now).active == 1


def test_hits_chosen_ahead_are_those_the_top_up_would_choose_and_skip_items_opened_meanwhile(tmp_path):
    items = pd.DataFrame({"item_id": [f"x{i:02d}" for i in range(80)], "text": [f"text {i}" for i in range(80)]})
    paths = [tmp_path / "a.easl", tmp_path / "b.easl"]
    for path in paths:
        Project.create(path, items, Hyper(method="easl", hit_size=4, seed=3)).close()
        with Project.open(path) as p:  # the same state: the first batch, half of it done
            hits = p.next_hits()
            for h in hits[:10]:
                ids = [i["item_id"] for i in h["items"]]
                p.ingest(
                    pd.DataFrame({"hit_id": h["hit_id"], "item_id": ids, "score": 50.0, "annotator": "a"}),
                    source="test",
                )
    with Project.open(paths[0]) as a, Project.open(paths[1]) as b:
        ahead = Ahead()
        assert ahead.refill(a, 13) == 3  # 10 open: three more for a queue of 13
        assert ahead.take(a, 3) == 3
        b.top_up_hits(13)
        chosen = lambda p: [sorted(i["item_id"] for i in h["items"]) for h in p.hits(p.iteration())]  # noqa: E731
        assert chosen(a) == chosen(b)  # recorded ahead or chosen now: the same HITs
        assert a.open_item_mask()[1] == 13
        # another top-up recorded meanwhile (another iteration): the plan is dropped, nothing is recorded
        ahead.refill(a, 15)
        rows = ahead.rows.copy()
        a.add_hits(rows[:1, :2])
        n_open = a.open_item_mask()[1]
        assert ahead.take(a, 2) == 0 and a.open_item_mask()[1] == n_open
        # an item of a HIT chosen ahead opened meanwhile: that HIT is left out, the others are recorded
        ahead.refill(a, n_open + 2)
        first, second = ahead.rows[0].copy(), ahead.rows[1].copy()
        a.add_hits(first[None, :1])
        ahead.iteration = a.iteration()  # as if in the same iteration
        assert ahead.take(a, 2) == 1
        assert set(second.tolist()) <= set(a.open_item_mask()[0].nonzero()[0].tolist())
        assert ahead.take(a, 1) == 0  # used once
    with Project.open(paths[0], readonly=True) as a:
        assert a.verify()["ok"]


class _Slow:
    """A stand-in Label Studio: every listing (reconciliation) and every prediction action takes ``delay_s``;
    imports are fast. Records when tasks were imported."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.url = "http://127.0.0.1:1"
        self.imports: list[float] = []
        self.held: list[dict] = []  # the tasks imported
        self.next_id = 1000
        self.lock = threading.Lock()
        self.projects = SimpleNamespace(
            update=lambda *a, **k: None,
            get=lambda *a, **k: SimpleNamespace(total_predictions_number=10**6, model_version="x"),
        )
        self.webhooks = SimpleNamespace(list=lambda **k: [])
        self.ml = SimpleNamespace(list=lambda **k: [])
        self.actions = SimpleNamespace(create=lambda **k: time.sleep(self.delay_s))
        self.predictions = SimpleNamespace(create=lambda **k: None, list=lambda **k: [])
        self.tasks = SimpleNamespace(update=lambda *a, **k: None, delete=lambda *a, **k: None)
        self.users = SimpleNamespace(get=lambda *a, **k: SimpleNamespace(email="a@x.org"))

    def export_all(self, pid: int) -> list[dict]:
        with self.lock:
            listed = [dict(t) for t in self.held]
        time.sleep(self.delay_s)
        return listed

    def import_tasks(self, pid: int, tasks: list[dict]) -> list[int]:
        with self.lock:
            ids = list(range(self.next_id, self.next_id + len(tasks)))
            self.next_id += len(tasks)
            self.imports.append(time.monotonic())
            self.held += [{"id": i, "data": t["data"], "annotations": [], "drafts": []} for i, t in zip(ids, tasks)]
        return ids


def test_a_push_never_waits_for_a_slow_reconciliation_or_prediction_refresh(project_path, monkeypatch):
    """Label Studio takes 4 s to list the project and to replace the predictions: an annotation that completes a
    HIT is still followed by its top-up within a second, while the reconciliation runs."""
    from easl_toolkit.easl_plugin import worker as worker_module

    fake = _Slow(4.0)
    monkeypatch.setattr(worker_module, "LabelStudioClient", lambda url, key: fake)
    link(project_path)
    with Project.open(project_path) as p:
        hits = p.next_hits()
        p.set_meta({bk.KEY_QUEUE_DEPTH: str(len(hits))})
    w = worker_module.Worker(project_path, api_key="k" * 40, reconcile_interval_s=1.0)
    w.start()
    try:
        deadline = time.monotonic() + 30
        while len(fake.held) < len(hits):  # the first reconciliation (4 s), then the first batch pushed
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.5)  # the next reconciliation (every second, 4 s long) is under way
        with Project.open(project_path) as p:
            task = {v: k for k, v in p.external_map(bk.TASK).items()}[hits[0]["hit_id"]]
            bk.enqueue(p, [("ANNOTATION_CREATED", json.dumps(created(hits[0], 1, int(task), [1, 2, 3, 4])))])
        sent = time.monotonic()
        w.notify()
        while not fake.imports or fake.imports[-1] < sent:
            assert time.monotonic() - sent < 3.0, "the top-up waited for the reconciliation"
            time.sleep(0.02)
        assert fake.imports[-1] - sent < 1.5
    finally:
        w.stop()
    with Project.open(project_path, readonly=True) as p:
        assert p.open_item_mask()[1] == len(hits) and np.isfinite(p.status()["mean_variance"])


def test_the_description_tells_annotators_why_no_task_is_free_and_when_the_work_is_done(project_path):
    from easl_toolkit.easl_plugin.push import MOMENT_WITHOUT_TASKS, annotator_note, progress_text

    with Project.open(project_path) as p:
        p.next_hits()  # every item in an open HIT: nothing can be topped up
        p.set_meta({bk.KEY_QUEUE_DEPTH: "20"})
        assert progress_text(p).startswith(MOMENT_WITHOUT_TASKS)
        assert "No More Tasks" in MOMENT_WITHOUT_TASKS and "Label All Tasks" in MOMENT_WITHOUT_TASKS
        p.set_meta({bk.KEY_QUEUE_DEPTH: "0"})  # the paper's batches: always said
        assert annotator_note(p, p.n_open_hits()) == MOMENT_WITHOUT_TASKS
        p.set_meta({bk.KEY_QUEUE_DEPTH: "5"})  # the queue is full: nothing to say
        assert annotator_note(p, p.n_open_hits()) == ""


def test_a_closed_copy_nobody_worked_on_is_deleted_once_closed_for_the_timeout(project_path):
    """Re-issue closes a HIT's old task (someone may have it open); the sweep deletes, and unmaps, an old task
    nobody worked on once Label Studio's ``updated_at`` (the closing) is ``--hit-timeout`` old; never the newest
    task of a HIT, one with a draft, or one closed too recently."""
    from easl_toolkit.easl_plugin.push import sweep_closed_copies

    deleted: list[str] = []
    client = SimpleNamespace(tasks=SimpleNamespace(delete=deleted.append))
    long_ago, just_now = "2020-01-01T00:00:00Z", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def task(tid: int, hit: str, updated: str, drafts=()) -> dict:
        return {"id": tid, "data": {"hit_id": hit}, "updated_at": updated, "drafts": list(drafts), "annotations": []}

    with Project.open(project_path) as p:
        a, b, c = (h["hit_id"] for h in p.next_hits()[:3])
        p.map_external(bk.TASK, [("1", a), ("2", a), ("3", b), ("4", b), ("5", c), ("6", c)])
        tasks = [
            task(1, a, long_ago),  # an old copy nobody worked on, closed long ago: deleted
            task(2, a, long_ago),  # the newest task of its HIT: kept
            task(3, b, long_ago, [{"user": 1, "updated_at": long_ago}]),  # worked on: kept (a late submit counts)
            task(4, b, long_ago),
            task(5, c, just_now),  # closed a moment ago: kept for now
            task(6, c, just_now),
        ]
        assert sweep_closed_copies(p, client, tasks, 600.0) == 1
        assert deleted == ["1"] and "1" not in p.external_map(bk.TASK) and "3" in p.external_map(bk.TASK)
