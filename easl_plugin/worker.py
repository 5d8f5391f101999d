"""The background worker of ``easl serve``: drains the durable event queue, reconciles, pushes the next HITs.

Three loops, each with its own connection to the project file and its own Label Studio client; ``easl serve`` runs
them in a child process (``worker_process.py``), tests may run them as threads of this one:

1. the queue (``_run``): apply the pending events in arrival order (``events`` table), marking each ``done`` (or
   ``failed`` with the error, so one bad event never blocks the queue; applying is idempotent, so an event applied
   but not yet marked when the process died is harmlessly applied again on restart); then, once the first
   reconciliation is done (it repairs an interrupted push), top the queue up to its measured depth
   (``queue.QueueMeter``, ``push.push_batch`` with the HITs chosen ahead, ``queue.Ahead``; or ``push_streaming``)
   and push the open HITs that have no task; then sleep until the event writer signals a commit;
2. the maintenance (``_maintain``), when a Label Studio project is configured (``easl ls setup`` writes ``ls.*``
   keys to ``meta``, before or after the service starts) and an API key is available: reconcile on start, every
   ``reconcile_interval_s`` and on ``START_TRAINING``; keep the project's description (the campaign's progress
   and the annotators' note) current; when the iteration changed, at most once per ``reconcile_interval_s``,
   replace every task's prediction (``campaign.sync_predictions``). Nothing here ever holds up a push;
3. the predictions of new tasks (``_predict_owed``): each task the queue created gets its prediction right after
   the import (``campaign.predict_new``), never interleaved with a replacement of every prediction.

While webhooks keep arriving the queue batches them (``_pace``), and every write transaction goes through the
write gate shared with the webhook writer (``writer.py``), which spills to a journal rather than wait for it. While
another process (``easl ingest``) holds the file's write lock, the worker's transactions wait for it (SQLite's busy
timeout, then a retry every 2 s) and the events stay pending: acknowledged, on disk, applied once the lock is free.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from easl_toolkit.core.store import Event, Project
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.campaign import predict_new, seconds_since, sync_predictions
from easl_toolkit.easl_plugin.client import LabelStudioClient, LabelStudioError
from easl_toolkit.easl_plugin.events import deleted_annotation_ids, deleted_task_ids
from easl_toolkit.easl_plugin.ingest import (
    IngestOutcome,
    apply_annotation,
    commit_annotations,
    delete_annotations,
    delete_tasks,
    learn_annotators,
    prepare_annotations,
)
from easl_toolkit.easl_plugin.push import annotator_note, progress_text, push_batch, push_streaming
from easl_toolkit.easl_plugin.queue import Ahead, QueueMeter, QueuePlan
from easl_toolkit.easl_plugin.reconcile import reconcile
from easl_toolkit.label_config.layouts import Layout

log = logging.getLogger("easl.serve")
ANNOTATION_KINDS = ("ANNOTATION_CREATED", "ANNOTATION_UPDATED")
QUIET_S = 0.15  # apply queued events once no webhook arrived for this long ...
MAX_DELAY_S = 2.0  # ... or at the latest this long after the worker woke up
DESCRIPTION_EVERY_S = 5.0  # the project's description is updated at most this often (unless its note changes)


@dataclass(frozen=True)
class LinkedProject:
    """The Label Studio side of a project, as recorded by ``easl ls setup``."""

    url: str
    project_id: int
    layout: Layout

    @classmethod
    def read(cls, project: Project) -> LinkedProject | None:
        """From ``meta``; None before ``easl ls setup`` ran."""
        pid, url, layout = (project.get_meta(k) for k in (bk.KEY_PROJECT_ID, bk.KEY_URL, bk.KEY_LAYOUT))
        if pid is None or url is None or layout is None:
            return None
        return cls(url=url, project_id=int(pid), layout=Layout.from_dict(json.loads(layout)))


def _foreign(payload: dict, linked: LinkedProject) -> str | None:
    """The queue note of an event of another Label Studio project than the linked one (its id in ``project``, an
    object's ``id`` or the task's ``project``); None for the linked project's own events."""
    p = payload.get("project")
    if isinstance(p, dict):
        p = p.get("id")
    task = payload.get("task")
    if not isinstance(p, int) and isinstance(task, dict) and isinstance(task.get("project"), int):
        p = task["project"]
    if isinstance(p, int) and p != linked.project_id:
        return f"ignored: event of Label Studio project {p}, this project file is linked to {linked.project_id}"
    return None


def _annotator(text: str) -> str | None:
    """The Label Studio user id of an annotation event's author (None when it does not say)."""
    try:
        who = json.loads(text)["annotation"].get("completed_by")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    who = who.get("id") if isinstance(who, dict) else who
    return None if who is None else str(who)


def apply_event(project: Project, linked: LinkedProject, kind: str, payload: dict) -> str | None:
    """Apply one queued event; returns a note for the queue row (None when applied normally).

    ``START_TRAINING`` is handled by the worker (it requests a reconciliation).
    """
    foreign = _foreign(payload, linked)
    if foreign is not None:
        return foreign
    if kind in ("ANNOTATION_CREATED", "ANNOTATION_UPDATED"):
        ann, task = payload["annotation"], payload["task"]
        out = apply_annotation(project, linked.layout, ann, task)
        return None if out is IngestOutcome.INGESTED else str(out)
    if kind == "ANNOTATIONS_DELETED":
        delete_annotations(project, deleted_annotation_ids(payload))
        return None
    if kind == "TASKS_DELETED":
        delete_tasks(project, deleted_task_ids(payload))
        return None
    return "ignored"


class Worker:
    """The worker loop, as a thread (``start``) or in a child process (``worker_process.py`` calls ``_run``).

    Parameters
    ----------
    project_path : str
    api_key : str or None
        Label Studio key (``LABEL_STUDIO_API_KEY``); without it events are still applied but nothing is pushed.
    streaming : int
        0 for batch mode, else the number of HITs to keep open.
    reconcile_interval_s : float
    """

    def __init__(
        self,
        project_path: str,
        *,
        api_key: str | None,
        streaming: int = 0,
        reconcile_interval_s: float = 60.0,
        url_override: str | None = None,
        gate: threading.Lock | None = None,
        acks_waiting=lambda: False,
    ) -> None:
        self.project_path = project_path
        self._api_key = api_key
        self.streaming = int(streaming)
        self.reconcile_interval_s = float(reconcile_interval_s)
        self.url_override = url_override
        self.gate = gate or threading.Lock()  # shared with the webhook writer: one writer of the file at a time
        self.acks_waiting = acks_waiting
        self.last_ack = lambda: 0.0  # time.monotonic() of the last acknowledged webhook
        self.wake = threading.Event()
        self.reconcile_requested = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="easl-worker", daemon=True)
        self._clients: dict[str, LabelStudioClient] = {}
        self._errors: dict[str, str] = {}  # the current problem of each loop
        self.last_error: str | None = None
        self.reconciled = threading.Event()  # the first reconciliation is done: pushing may start
        self._maint_wake = threading.Event()
        self._owed: list[tuple[int, int]] = []  # tasks created by the queue that wait for their prediction (and
        # how many replacements of every prediction had started when each was created)
        self._syncs = 0  # replacements of every prediction started so far
        self._syncing = False  # one is under way
        self._description_at = float("-inf")
        self._note: str | None = None  # what the description last told the annotators
        self._owed_lock = threading.Lock()
        self._owed_wake = threading.Event()
        self.meter = QueueMeter()
        self.oldest: float | None = None  # when the oldest annotation event applied since the last push arrived
        self.plan: QueuePlan | None = None
        self.ahead = Ahead()
        self.linked: LinkedProject | None = None
        self.pushed_total = 0
        self.applied_total = 0
        self.last_push_at: float | None = None
        self._description: str | None = None
        self._predicted: int | None = None  # the iteration whose figures the tasks' predictions carry
        self._predicted_at = float("-inf")  # time.monotonic() of that replacement
        self._predict_retry_at = float("-inf")  # after a failed replacement, not before this time
        self.on_progress: Callable[[Worker], None] | None = None  # after each step (worker_process.py)

    def start(self) -> None:
        """Start the thread (reconciles first when linked)."""
        self.reconcile_requested.set()
        self._thread.start()

    def stop(self) -> None:
        """Finish the current step and end the thread (and its helper threads)."""
        self._stop.set()
        self.wake.set()
        self._maint_wake.set()
        self._thread.join(60)

    def notify(self) -> None:
        """Called after events were committed: wake the worker."""
        self.wake.set()

    def _client_for(self, linked: LinkedProject, role: str = "queue") -> LabelStudioClient | None:
        """The Label Studio client of one of the worker's loops (each loop its own connection pool)."""
        if not self._api_key:
            return None
        url = (self.url_override or linked.url).rstrip("/")
        client = self._clients.get(role)
        if client is None or client.url != url:
            client = self._clients[role] = LabelStudioClient(url, self._api_key)
        return client

    def _guard(self, role: str, step: Callable[[], object]) -> bool:
        """Run one step of a loop; on a failure log it (each distinct problem once), wait and return False."""
        try:
            step()
        except (LabelStudioError, sqlite3.OperationalError) as exc:
            # Label Studio unreachable or the file busy: keep the events, retry shortly
            if str(exc) != self._errors.get(role):  # log each distinct problem once, not every retry
                if "locked" in str(exc).lower():
                    log.info("worker: another process is writing the project file; events wait (retrying every 2 s)")
                else:
                    log.warning("worker (%s): %s (retrying every 2 s)", role, exc)
            self._errors[role] = self.last_error = str(exc)
            self._stop.wait(2.0)
            return False
        except Exception as exc:  # never let the worker die; the next loop retries
            self._errors[role] = self.last_error = f"{exc.__class__.__name__}: {exc}"
            log.exception("worker step (%s) failed (retrying in 5 s)", role)
            self._stop.wait(5.0)
            return False
        if self._errors.pop(role, None) is not None:
            log.info("worker (%s): recovered", role)
        self.last_error = next(iter(self._errors.values()), None)
        return True

    def _run(self) -> None:
        """The queue loop (apply events, top the queue up), with the maintenance and prediction loops beside it in
        threads of their own, so that a push never waits behind a reconciliation or a replacement of the
        predictions."""
        helpers = [
            threading.Thread(target=self._maintain, name="easl-maintain", daemon=True),
            threading.Thread(target=self._predict_owed, name="easl-predict", daemon=True),
        ]
        for t in helpers:
            t.start()
        project = bk.open_project(self.project_path)
        self.meter.seed(project, time.time())
        try:
            while not self._stop.is_set():
                self.wake.clear()
                self._guard("queue", lambda: self._queue_step(project))
                if self.on_progress is not None:
                    self.on_progress(self)
                self.wake.wait(1.0 if self.linked is None else 5.0)
        finally:
            self._stop.set()
            self._maint_wake.set()
            self._owed_wake.set()
            for t in helpers:
                t.join(60)
            project.close()

    def _queue_step(self, project: Project) -> None:
        self.linked = LinkedProject.read(project)
        if self.linked is None:
            return
        self._pace()
        self.drain(project, self.linked)
        oldest, self.oldest = self.oldest, None
        client = self._client_for(self.linked)
        if client is not None and self.reconciled.is_set():  # after the first reconciliation (crash repair)
            self.push(project, client, self.linked, oldest)

    def _maintain(self) -> None:
        """The maintenance loop: reconcile on start, every ``reconcile_interval_s`` and on request; keep the
        project's description and the tasks' predictions current."""
        project = bk.open_project(self.project_path)
        next_reconcile = 0.0
        try:
            while not self._stop.is_set():
                self._maint_wake.clear()
                linked = LinkedProject.read(project)
                client = self._client_for(linked, "maintain") if linked is not None else None
                if linked is not None and client is not None:
                    due = self.reconcile_requested.is_set() or time.monotonic() >= next_reconcile
                    if due:
                        self.reconcile_requested.clear()
                        if self._guard("maintain", partial(self._reconcile, project, client, linked)):
                            next_reconcile = time.monotonic() + self.reconcile_interval_s
                            self.reconciled.set()
                            self.wake.set()  # the queue may push now
                    self._guard("maintain", partial(self._refresh, project, client, linked))
                wait = max(0.05, min(1.0, next_reconcile - time.monotonic()))
                if not self.reconcile_requested.is_set():
                    self._maint_wake.wait(wait)
        finally:
            project.close()

    def _reconcile(self, project: Project, client: LabelStudioClient, linked: LinkedProject) -> None:
        hit_timeout = project.get_meta(bk.KEY_HIT_TIMEOUT)
        reconcile(
            project,
            client,
            linked.project_id,
            linked.layout,
            self.gate,
            hit_timeout_s=float(hit_timeout or bk.DEFAULT_HIT_TIMEOUT_S),
        )

    def _pace(self) -> None:
        """While webhooks keep arriving, apply them in batches at most every ``MAX_DELAY_S`` seconds; apply at
        once after ``QUIET_S`` seconds without one. Each batch holds the file's write lock (and the interpreter)
        for tens of milliseconds, so spacing them keeps webhook acknowledgements fast under load."""
        first = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            idle = now - self.last_ack()
            if idle >= QUIET_S or now - first >= MAX_DELAY_S:
                return
            self._stop.wait(min(QUIET_S - idle, MAX_DELAY_S - (now - first), 0.05))

    def drain(self, project: Project, linked: LinkedProject) -> int:
        """Apply every pending event in arrival order; returns how many were processed.

        Consecutive annotation events (created/updated) are applied as one run: the last version of each
        annotation wins (as it would applied one by one) and all are ingested with one ``Project.ingest``, in one
        transaction with their ``done`` marks. Other events are applied one per transaction. Each transaction is
        taken through the write gate shared with the webhook writer, and only while no acknowledgement is
        waiting, so webhook acknowledgements are not held up behind the engine (``service.py``).
        """
        n = 0
        while not self._stop.is_set():
            batch = project.events("pending", limit=512)
            if not batch:
                return n
            self._measure(batch)
            i = 0
            while i < len(batch):
                j = i + 1
                if batch[i].kind in ANNOTATION_KINDS:
                    while j < len(batch) and batch[j].kind in ANNOTATION_KINDS:
                        j += 1
                    self._apply_run(project, linked, batch[i:j])  # takes the gate for its writes only
                else:
                    self._with_gate(lambda ev=batch[i]: self._apply_one(project, linked, ev.id, ev.kind, ev.payload))
                n += j - i
                self.applied_total += j - i
                i = j
        return n

    def _measure(self, batch: list[Event]) -> None:
        """Count the submissions of a batch of events for the queue's depth (``queue.QueueMeter``) and keep when
        the oldest arrived (``self.oldest``, for the measured cycle)."""
        now = time.time()
        for ev in batch:
            if ev.kind != "ANNOTATION_CREATED":
                continue
            age = seconds_since(ev.received_at, now)
            at = now if age is None else now - age
            self.oldest = at if self.oldest is None else min(self.oldest, at)
            who = _annotator(ev.payload)
            self.meter.submitted(who, at)

    def _with_gate(self, fn) -> None:
        deadline = time.monotonic() + 0.5
        while self.acks_waiting() and time.monotonic() < deadline:
            time.sleep(0.0005)  # let queued webhook acknowledgements commit first
        with self.gate:
            fn()

    def _apply_one(self, project: Project, linked: LinkedProject, event_id: int, kind: str, text: str) -> None:
        try:
            with project.transaction():  # the event's effects and its 'done' mark commit together
                payload = json.loads(text)
                note: str | None
                if kind == "START_TRAINING":
                    self.reconcile_requested.set()
                    self._maint_wake.set()
                    note = "reconciliation requested"
                else:
                    note = apply_event(project, linked, kind, payload)
                project.finish_event(event_id, note=note)
        except sqlite3.OperationalError:
            raise  # transient (locked file): leave the event pending
        except Exception as exc:  # one bad event must never block the queue: record why and go on
            log.error("event %d (%s) failed: %s", event_id, kind, exc)
            project.finish_event(event_id, failed=True, note=f"{exc.__class__.__name__}: {exc}")

    def _apply_run(self, project: Project, linked: LinkedProject, run: list[Event]) -> None:
        """Apply a run of annotation events: parse, convert and validate outside the write gate (reads only),
        then write through the gate (``ingest.commit_annotations``; validation is repeated inside only if a HIT
        named by the run was created or withdrawn in between)."""
        notes: dict[int, str | None] = {}
        failed: dict[int, str] = {}
        latest: dict[str, tuple[int, dict]] = {}
        for event_id, kind, text, *_ in run:
            try:
                payload = json.loads(text)
                aid, _ = str(payload["annotation"]["id"]), payload["task"]["id"]
            except (ValueError, KeyError, TypeError) as exc:
                log.error("event %d (%s) failed: %s", event_id, kind, exc)
                failed[event_id] = f"{exc.__class__.__name__}: {exc}"
                continue
            foreign = _foreign(payload, linked)
            if foreign is not None:
                notes[event_id] = foreign
                continue
            if aid in latest:
                notes[latest[aid][0]] = f"superseded by event {event_id}"
            latest[aid] = (event_id, payload)
        order = list(latest.values())
        try:
            people = learn_annotators(project, self._client_for(linked), [p["annotation"] for _, p in order])
            if people:
                self._with_gate(lambda: project.map_external(bk.USER, people))
            plan = prepare_annotations(project, linked.layout, [(p["annotation"], p["task"]) for _, p in order])
            self._with_gate(lambda: self._apply_latest(project, linked, order, plan, notes, failed))
        except sqlite3.OperationalError:
            raise
        except Exception as exc:  # unexpected: fall back to one event per transaction, which records failures
            log.error("annotation batch failed (%s); applying its events one by one", exc)
            for ev in run:
                self._with_gate(lambda ev=ev: self._apply_one(project, linked, ev.id, ev.kind, ev.payload))

    def _apply_latest(self, project, linked, order, plan, notes, failed) -> None:
        with project.transaction():
            outcomes = commit_annotations(project, linked.layout, plan)
            for (event_id, _), out in zip(order, outcomes):
                notes[event_id] = None if out is IngestOutcome.INGESTED else str(out)
            for event_id, note in notes.items():
                project.finish_event(event_id, note=note)
            for event_id, err in failed.items():
                project.finish_event(event_id, failed=True, note=err)

    def push(
        self, project: Project, client: LabelStudioClient, linked: LinkedProject, oldest: float | None = None
    ) -> int:
        """Top the queue up and push open HITs without a task (batch or streaming mode); hand the new tasks to the
        prediction loop and choose the next top-up ahead (``queue.py``). ``oldest``: when the oldest webhook this
        cycle applied arrived (``time.time()``), for the measured cycle."""
        plan = self.meter.plan(project, time.time())
        if plan != self.plan:
            with self.gate:
                project.set_meta({bk.KEY_QUEUE_PLAN: plan.to_json()})
            self.plan = plan
        if self.streaming > 0:
            ids = push_streaming(project, client, linked.project_id, linked.layout, self.streaming, self.gate)
        else:
            ids = push_batch(
                project, client, linked.project_id, linked.layout, self.gate, depth=plan.depth, ahead=self.ahead
            )
        if ids:
            if oldest is not None:
                self.meter.cycle(time.time() - oldest)
            with self._owed_lock:
                # a replacement under way may give them their prediction: then they are checked (-1)
                self._owed.extend((i, -1 if self._syncing else self._syncs) for i in ids)
            self._owed_wake.set()
            self.pushed_total += len(ids)
            self.last_push_at = time.time()
            log.info("pushed %d task(s) to Label Studio project %d", len(ids), linked.project_id)
            self._maint_wake.set()  # the description (and, once due, the predictions)
        if self.streaming == 0 and plan.depth > 0 and (ids or self.ahead.iteration != project.iteration()):
            self.ahead.refill(project, plan.depth + plan.burst)
        return len(ids)

    def _refresh(self, project: Project, client: LabelStudioClient, linked: LinkedProject) -> None:
        """The project's description (the campaign's progress) and, when the iteration changed and at most once
        per ``reconcile_interval_s``, every task's prediction (``campaign.sync_predictions``)."""
        text = progress_text(project)
        now = time.monotonic()
        note = annotator_note(project, project.open_item_mask()[1])
        # the description shows the campaign's progress in Label Studio: at most every DESCRIPTION_EVERY_S seconds
        # (Label Studio serves the annotators meanwhile), at once when what it tells the annotators changes
        recent = now - self._description_at < DESCRIPTION_EVERY_S
        if text != self._description and (not recent or note != self._note):
            client.projects.update(linked.project_id, description=text)
            self._description, self._description_at, self._note = text, now, note
        iteration = project.iteration()
        now = time.monotonic()
        due = now - self._predicted_at >= self.reconcile_interval_s and now >= self._predict_retry_at
        if iteration != self._predicted and due:
            self._syncs += 1
            self._syncing = True
            try:
                sync_predictions(project, client, linked.project_id, linked.layout, gate=self.gate)
                self._predicted, self._predicted_at = iteration, now
            except LabelStudioError as exc:  # the figures are for the manager's eyes: never hold up the loop
                log.warning("could not replace the tasks' predictions (retrying in %.0f s): %s", 30.0, exc)
                self._predict_retry_at = now + 30.0
            finally:
                self._syncing = False

    def _predict_owed(self) -> None:
        """The prediction loop: give each task the queue created its prediction at once (``campaign.predict_new``),
        between replacements of every prediction, never beside one."""
        project = bk.open_project(self.project_path)
        try:
            while not self._stop.is_set():
                self._owed_wake.wait(1.0)
                self._owed_wake.clear()
                with self._owed_lock:
                    todo, self._owed = self._owed, []
                linked = LinkedProject.read(project) if todo else None
                client = self._client_for(linked, "predict") if linked is not None else None
                if not todo or linked is None or client is None:
                    continue
                # a replacement of every prediction started since a task was created may have given it one
                step = partial(
                    predict_new,
                    project,
                    client,
                    linked.layout,
                    [i for i, _ in todo],
                    self.gate,
                    check=any(n != self._syncs for _, n in todo),
                )
                if not self._guard("predict", step):
                    with self._owed_lock:
                        self._owed = todo + self._owed  # again at the next turn
        finally:
            project.close()
