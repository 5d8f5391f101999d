"""Pushing the engine's open HITs to Label Studio as tasks: a queue that never runs dry, and re-issue by inactivity.

**The queue** (:func:`push_batch`, the default of ``easl serve``). When no HIT is open, the next iteration of the
paper's Algorithm 1 starts (``Project.next_hits()``: the first iteration covers every item once). Whenever fewer
HITs are open than the queue's depth (:func:`queue_depth`: ``--queue-depth``, by default measured from the active
annotators, their submission rate and the backend's cycle, ``queue.py``), new HITs are recorded (those chosen
ahead, ``queue.Ahead``, then ``Project.top_up_hits``: Algorithm 1 with one anchor per HIT, the highest-variance
free item, partners by match quality) and pushed, so an annotator who submits the last task of a batch is given
the next task in the same labelling stream. When the queue cannot be filled (every remaining item waits on an
open HIT), the project's description says so to the annotators (:func:`annotator_note`).
Items already in open HITs are excluded from the new HITs: no item is in two open HITs, and an item's next
score waits until its open HIT is done or withdrawn. ``--queue-depth 0`` keeps the paper's batches alone (the
next iteration only once every HIT of the current one is done).

**Streaming mode** (:func:`push_streaming`, ``--streaming N``) keeps N HITs open from the start: instead of waiting
for every HIT of an iteration (Algorithm 1 of Sakaguchi & Van Durme 2018), it re-selects as soon as a HIT
completes, from the current posterior, by the store's one HIT-choosing function (``core.store.hits.choose_hits``,
the batches' own, with one anchor per HIT and every item of every open HIT excluded). Each top-up is recorded as a
new (small) iteration (``Project.top_up_hits``, one transaction), so the HIT bookkeeping, validation and
``easl verify`` apply unchanged.

**Re-issue** (:func:`reissue_stalled`). A HIT's newest task is re-issued as a fresh task when

- it has an annotation although the HIT is still open (skipped, or rejected by validation): at once;
- somebody worked on it (Label Studio lists a draft of theirs) and nothing happened on it for ``--hit-timeout``
  seconds (its last activity: ``campaign.last_activity``);
- nobody visibly worked on it (Label Studio 1.23 shows no task locks, so an annotator who opened it and left
  cannot be seen), it was created or re-issued more than ``--hit-timeout`` ago and it holds the campaign up: fewer
  HITs are open than the queue needs and no new HIT can be chosen (too few free items, the stopping rule, or
  ``--queue-depth 0``).

A HIT nobody worked on and that holds nothing up is never re-issued. Idle time starts at the first draft, never at
a task's creation: Label Studio shows no task locks, so a task nobody changed anything on may still be open in
someone's browser. The old task of a re-issued HIT is therefore closed, not deleted (``campaign.close_tasks``: its
holder may still submit, and that late annotation counts; the closed copy counts as labelled in Label Studio's
progress); a closed copy nobody worked on is deleted once it was closed for ``--hit-timeout`` more
(:func:`sweep_closed_copies`). The fresh task carries the HIT's current prediction.

Crash safety: the HIT ids about to be imported are written to ``meta`` (``ls.push_pending``) before the import and
cleared with the task map after it; a crash in between is repaired by reconciliation (which maps tasks to HITs by
the ``hit_id`` in their data and deletes unannotated duplicates) before anything is pushed again.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import TYPE_CHECKING

from easl_toolkit.core.store import Project
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.campaign import (
    Figures,
    close_tasks,
    last_activity,
    post_predictions,
    remember_shown,
    seconds_since,
    tasks_for,
    touched,
)
from easl_toolkit.easl_plugin.queue import Ahead, QueuePlan
from easl_toolkit.label_config.layouts import Layout

if TYPE_CHECKING:
    from easl_toolkit.easl_plugin.client import LabelStudioClient


def push(
    project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout, hits: list[dict], gate=None
) -> list[int]:
    """Import ``hits`` that have no task yet; returns the ids of the tasks created. ``gate`` (the service's write
    gate) is held for the bookkeeping writes, never around the call to Label Studio."""
    gate = gate if gate is not None else contextlib.nullcontext()
    mapped = set(project.external_map(bk.TASK).values())
    todo = [h for h in hits if str(h["hit_id"]) not in mapped]
    if not todo:
        return []
    with gate:
        project.set_meta({bk.KEY_PUSH_PENDING: json.dumps([str(h["hit_id"]) for h in todo])})
    ids = client.import_tasks(ls_project_id, tasks_for(todo, layout, project.hyper.seed))
    with gate:
        project.map_external(bk.TASK, zip(ids, [str(h["hit_id"]) for h in todo]))
        project.set_meta({bk.KEY_PUSH_PENDING: None})
    return [int(i) for i in ids]


def active_annotators(project: Project, window_s: float = bk.ACTIVE_WINDOW_S) -> int:
    """How many annotators scored (live ratings) or saved a draft (``ls.task_holders``) in the last ``window_s``
    seconds."""
    now = time.time()
    r = project.ratings()
    who = {
        str(a)
        for a, at in zip(r["annotator"], r["created_at"])
        if a is not None and (seconds_since(at, now) or window_s + 1) <= window_s
    }
    raw = project.get_meta(bk.KEY_TASK_HOLDERS)
    for h in (json.loads(raw) if raw else {}).values():
        if h.get("how") == "draft" and (seconds_since(h.get("at"), now) or window_s + 1) <= window_s:
            who.add(str(h["annotator"]))
    return len(who)


def queue_depth(project: Project) -> int:
    """The open HITs the queue keeps: ``--queue-depth`` (``ls.queue_depth``; 0 = the paper's batches alone), else
    the depth ``easl serve`` last measured (``ls.queue``, ``queue.QueuePlan``), else :func:`active_annotators`
    + 1."""
    raw = project.get_meta(bk.KEY_QUEUE_DEPTH)
    if raw is not None:
        return int(raw)
    plan = QueuePlan.read(project)
    return plan.depth if plan is not None else active_annotators(project) + 1


def push_batch(
    project: Project,
    client: LabelStudioClient,
    ls_project_id: int,
    layout: Layout,
    gate=None,
    *,
    depth: int | None = None,
    ahead: Ahead | None = None,
) -> list[int]:
    """The queue (module docstring): start the next iteration when no HIT is open, top up to ``depth`` (default
    :func:`queue_depth`) from the HITs chosen ahead (``ahead``) and, for what they miss, from a choice made now,
    and push every open HIT without a task. ``gate`` (the service's write gate) is held while HITs are recorded.
    Returns the ids of the tasks created."""
    depth = queue_depth(project) if depth is None else depth
    with gate if gate is not None else contextlib.nullcontext():
        n_open = project.open_item_mask()[1]
        if depth == 0 or n_open == 0:
            project.next_hits()
        elif depth > n_open:
            got = ahead.take(project, depth - n_open) if ahead is not None else 0
            if got < depth - n_open:
                project.top_up_hits(depth)
    return push(project, client, ls_project_id, layout, project.open_hits(every_iteration=True), gate)


def push_streaming(
    project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout, n_target: int, gate=None
) -> list[int]:
    """Streaming mode (module docstring): top up to ``n_target`` open HITs and push every open HIT without a task;
    returns the ids of the tasks created. ``gate`` (the service's write gate) is held while the new HITs are
    chosen."""
    with gate if gate is not None else contextlib.nullcontext():
        project.top_up_hits(n_target)
    return push(project, client, ls_project_id, layout, project.open_hits(every_iteration=True), gate)


def open_needed(project: Project, depth: int) -> int:
    """How many open HITs the annotators need right now, for the re-issue of untouched HITs that hold the campaign
    up: ``--queue-depth`` when it was given (``depth`` > 0), else one per active annotator and one more for the
    next one to ask (``queue.QueuePlan.active`` as ``easl serve`` last measured it, or
    :func:`active_annotators`). Not the measured depth: its margin for bursts is no one waiting."""
    plan = QueuePlan.read(project)
    if depth > 0 and (plan is None or plan.fixed):
        return depth
    return (plan.active if plan is not None else active_annotators(project)) + 1


def can_top_up(project: Project, depth: int) -> bool:
    """Whether a new HIT could be chosen now: the queue is on (``depth`` > 0), a HIT's worth of items is in no open
    HIT, and an aware project's stopping rule is not met."""
    if depth <= 0:
        return False
    mask, _ = project.open_item_mask()
    if int((~mask).sum()) < project.hyper.hit_size:
        return False
    stop = project.status().stop
    return not (stop and stop.get("reached"))


def progress_text(project: Project) -> str:
    """The Label Studio project's description: the campaign's progress for the project manager (HITs issued and
    open in every iteration, since the queue's top-ups are small iterations; annotations; the convergence figure:
    the mean posterior variance of the items, on the 0-1 scale)."""
    s = project.status()
    n_open = len(project.open_hit_times())
    return annotator_note(project, n_open) + (
        f"EASL campaign: {int(s['n_hits_total']) - n_open} HITs done, {n_open} open (iteration "
        f"{int(s['iteration'])}), {int(s['n_observations'])} scores so far; mean posterior variance "
        f"{float(s['mean_variance']):.4f} (max {float(s['max_variance']):.4f}; lower is more certain)."
    )


CAMPAIGN_DONE = "The campaign is complete: there are no more tasks. Thank you! "
MOMENT_WITHOUT_TASKS = (
    'If Label Studio says "No More Tasks": every item still to be scored is in a task another annotator has open '
    "right now. Wait a minute and press Label All Tasks again; new tasks appear as those are submitted. "
)


def annotator_note(project: Project, n_open: int) -> str:
    """What the project's description tells annotators first: that the campaign is complete (an aware project's
    stopping rule is met), or, when the queue cannot be topped up to its depth (every remaining item waits on an
    open HIT) or keeps the paper's batches (``--queue-depth 0``), why Label Studio may say "No More Tasks" for a
    moment and what to do; nothing otherwise."""
    stop = project.status().stop
    if stop and stop.get("reached") and n_open == 0:
        return CAMPAIGN_DONE
    depth = queue_depth(project)
    if depth == 0 or (n_open < depth and not can_top_up(project, depth)):
        return MOMENT_WITHOUT_TASKS
    return ""


def stalled_hits(project: Project, tasks: list[dict], timeout_s: float, now: float) -> dict[str, str]:
    """Open HIT id -> why its newest task (``tasks``: the project's tasks with drafts and annotations, as listed
    by the reconciliation) is re-issued: ``"annotated"``, ``"abandoned"`` or ``"holding up"`` (module
    docstring)."""
    newest: dict[str, dict] = {}
    for t in tasks:
        hit_id = (t.get("data") or {}).get("hit_id") if isinstance(t.get("data"), dict) else None
        if isinstance(hit_id, str) and (hit_id not in newest or int(t["id"]) > int(newest[hit_id]["id"])):
            newest[hit_id] = t
    open_ids = set(project.open_hit_times())
    why: dict[str, str] = {}
    idle_untouched: list[tuple[float, str]] = []
    for hit_id, t in newest.items():
        if hit_id not in open_ids:
            continue
        if any(isinstance(a, dict) for a in t.get("annotations") or []):
            why[hit_id] = "annotated"
        elif touched(t):
            if (seconds_since(last_activity(t), now) or 0.0) > timeout_s:  # idle since the last draft
                why[hit_id] = "abandoned"
        else:  # nobody visibly opened it: the time since it was created or re-issued
            waiting = seconds_since(t.get("created_at"), now) or 0.0
            if waiting > timeout_s:
                idle_untouched.append((waiting, hit_id))
    if idle_untouched:
        depth = queue_depth(project)
        if len(open_ids) < open_needed(project, depth) and not can_top_up(project, depth):
            for _, hit_id in sorted(idle_untouched, reverse=True):
                why[hit_id] = "holding up"
    return why


def reissue_stalled(
    project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout, tasks: list[dict], timeout_s: float
) -> list[str]:
    """Re-issue the stalled open HITs (:func:`stalled_hits`) as a fresh Label Studio task each, carrying the HIT's
    current prediction; delete the old task when nobody worked on it, close it otherwise. Returns the HIT ids."""
    why = stalled_hits(project, tasks, timeout_s, time.time())
    if not why:
        return []
    hits = [h for h in project.open_hits(every_iteration=True) if str(h["hit_id"]) in why]
    body = tasks_for(hits, layout, project.hyper.seed)
    for b in body:
        b["meta"]["reissued"] = True
    ids = client.import_tasks(ls_project_id, body)
    project.map_external(bk.TASK, zip(ids, [str(h["hit_id"]) for h in hits]))
    figures = Figures(project)
    post_predictions(
        client,
        [
            {"task": i, "project": int(ls_project_id), **figures.prediction(b["data"]["item_ids"], layout)}
            for i, b in zip(ids, body)
        ],
    )
    remember_shown(project, {str(i): figures.shown(b["data"]["item_ids"]) for i, b in zip(ids, body)})
    again = {str(h["hit_id"]) for h in hits}
    stale = [
        t
        for t in tasks
        if (t.get("data") or {}).get("hit_id") in again and t.get("overlap") != 0 and int(t["id"]) not in ids
    ]
    # closed, never deleted at once: an annotator may have it open (Label Studio shows no locks) and still submit
    close_tasks(client, [int(t["id"]) for t in stale])
    return [str(h["hit_id"]) for h in hits]


def sweep_closed_copies(project: Project, client: LabelStudioClient, tasks: list[dict], timeout_s: float) -> int:
    """Delete the closed copies of re-issued HITs (tasks older than their HIT's newest) that nobody worked on (no
    draft, no annotation) and that were closed (Label Studio's ``updated_at``) more than ``timeout_s`` seconds
    ago: whoever had one open has gone, and Label Studio's progress would count it as labelled. Returns how many
    were deleted."""
    now = time.time()
    newest: dict[str, int] = {}
    for t in tasks:
        hit_id = (t.get("data") or {}).get("hit_id") if isinstance(t.get("data"), dict) else None
        if isinstance(hit_id, str):
            newest[hit_id] = max(newest.get(hit_id, 0), int(t["id"]))
    gone = [  # not the newest task of its HIT: a re-issue closed it (Label Studio's export leaves out ``overlap``)
        str(t["id"])
        for t in tasks
        if not touched(t)
        and int(t["id"]) != newest.get(str((t.get("data") or {}).get("hit_id")), int(t["id"]))
        and (seconds_since(t.get("updated_at"), now) or 0.0) > timeout_s
    ]
    if gone:  # unmapped first: Label Studio's TASKS_DELETED for them then withdraws nothing
        project.unmap_external(bk.TASK, gone)
        for tid in gone:
            client.tasks.delete(tid)
    return len(gone)
