"""Reconciliation: bring the project file in line with what Label Studio holds.

Label Studio posts each webhook once with no retry, and nothing is posted while the backend is down
(``docs/design.md`` section 7.4, "Delivery"), so the service lists the project's tasks and annotations
on start, periodically and on ``START_TRAINING``, and applies what it missed:

- every annotation of every task is applied (``ingest.apply_annotation``; unchanged ones are recognised against
  the live ratings and cost nothing);
- live annotations that Label Studio no longer has are retracted (deleted while we were away);
- HITs whose task has gone are withdrawn (``retract_hit``);
- tasks are mapped to HITs by the ``hit_id`` in their data (repairing a push interrupted between the import and
  the bookkeeping); an unannotated second task of the same HIT is deleted;
- who last worked on each open HIT's tasks (drafts and annotations, ``campaign.task_holders``) and when each task
  was last active are kept for ``easl ls status``;
- the project's webhooks to an easl backend are listed and recorded (``webhooks.record_hooks``), for
  ``easl ls status`` to warn on a stale one;
- with a ``--hit-timeout``, stalled HITs are re-issued (``push.reissue_stalled``: by inactivity, never a HIT
  nobody worked on unless it holds the campaign up).

Idempotent: a second run right after the first changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import pandas as pd

from easl_toolkit.core.store import Project, now
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.campaign import task_holders
from easl_toolkit.easl_plugin.ingest import (
    IngestOutcome,
    commit_annotations,
    delete_annotations,
    delete_tasks,
    learn_annotators,
    prepare_annotations,
)
from easl_toolkit.easl_plugin.push import reissue_stalled, sweep_closed_copies
from easl_toolkit.easl_plugin.webhooks import list_hooks, record_hooks
from easl_toolkit.label_config.layouts import Layout

if TYPE_CHECKING:
    from easl_toolkit.easl_plugin.client import LabelStudioClient

log = logging.getLogger("easl.serve")


@dataclass
class ReconcileReport:
    """What one reconciliation did."""

    tasks: int = 0
    annotations: int = 0
    ingested: int = 0
    skipped: int = 0
    rejected: int = 0
    retracted_annotations: int = 0
    withdrawn_tasks: int = 0
    duplicate_tasks_deleted: int = 0
    reissued_hits: int = 0
    closed_copies_deleted: int = 0


def live_scores(project: Project) -> dict[str, dict[str, float]]:
    """Live Label Studio ratings: annotation id -> {item_id: score} (from ``Project.ratings()``)."""
    r = project.ratings()
    if r.empty:
        return {}
    r = r[r["annotation_id"].notna()]
    out: dict[str, dict[str, float]] = {}
    for aid, item, score in zip(
        r["annotation_id"].astype(str), r["item_id"].astype(str), pd.to_numeric(r["score"]).astype(float)
    ):
        out.setdefault(aid, {})[item] = score
    return out


def reconcile(
    project: Project,
    client: LabelStudioClient,
    ls_project_id: int,
    layout: Layout,
    gate: AbstractContextManager | None = None,
    hit_timeout_s: float | None = None,
) -> ReconcileReport:
    """List the Label Studio project and apply every difference (see the module docstring); with
    ``hit_timeout_s``, then re-issue the HITs that stalled (``push.reissue_stalled``). ``gate`` (the service's
    write gate) is held around the writes, never around the calls to Label Studio."""
    gate = gate if gate is not None else contextlib.nullcontext()
    rep = ReconcileReport()
    # read before the listing: a task the queue maps, or an annotation a webhook brings, while Label Studio lists
    # is then in the listing, never taken for gone
    live = live_scores(project)
    task_map = project.external_map(bk.TASK)  # task id -> hit id
    tasks = client.export_all(ls_project_id)
    present, pairs = _map_tasks(project, client, tasks, task_map, gate, rep)
    _apply(project, client, layout, pairs, live, gate, rep)
    _withdraw_gone(project, live, {str(a["id"]) for a, _ in pairs}, task_map, present, gate, rep)
    if hit_timeout_s is not None:
        live_tasks = [t for t in tasks if str(t["id"]) in present]
        again = reissue_stalled(project, client, ls_project_id, layout, live_tasks, hit_timeout_s)
        rep.reissued_hits = len(again)
        if again:
            log.info("re-issued %d stalled HIT(s) as new tasks: %s", len(again), ", ".join(again))
        with gate:
            rep.closed_copies_deleted = sweep_closed_copies(project, client, live_tasks, hit_timeout_s)
    open_hits, mapped = set(project.open_hit_times()), project.external_map(bk.TASK)
    holders = task_holders([t for t in tasks if mapped.get(str(t["id"])) in open_hits], project.external_map(bk.USER))
    listed = {str(t["id"]) for t in tasks}
    for tid, hit_id in mapped.items():  # tasks created since the listing (re-issued): idle on the same clock
        if hit_id in open_hits and tid not in listed:
            holders[tid] = {"created_at": now()}
    hooks = list_hooks(client, ls_project_id, project)
    with gate:
        record_hooks(project, hooks)
        project.set_meta(
            {
                bk.KEY_LAST_RECONCILIATION: now(),
                bk.KEY_RECONCILIATION_REPORT: _json(asdict(rep)),
                bk.KEY_TASK_HOLDERS: _json(holders),
            }
        )
    if rep.ingested or rep.retracted_annotations or rep.withdrawn_tasks or rep.duplicate_tasks_deleted:
        log.info("reconciliation applied missed changes: %s", asdict(rep))
    return rep


def _map_tasks(
    project: Project,
    client: LabelStudioClient,
    tasks: list[dict],
    task_map: dict[str, str],
    gate: AbstractContextManager,
    rep: ReconcileReport,
) -> tuple[set[str], list[tuple[dict, dict]]]:
    """Map our tasks (those with a ``hit_id`` in their data) to their HITs, deleting an unannotated second task
    of a HIT that has one (an interrupted push). Returns the task ids present and every ``(annotation, task)``."""
    hit_task: dict[str, str] = {}
    for t in sorted(task_map):
        hit_task.setdefault(task_map[t], t)
    present: set[str] = set()
    listed = {str(x["id"]) for x in tasks}
    pairs: list[tuple[dict, dict]] = []
    for task in tasks:
        hit_id = task["data"].get("hit_id") if isinstance(task.get("data"), dict) else None
        if not isinstance(hit_id, str):
            continue  # not one of ours
        tid = str(task["id"])
        rep.tasks += 1
        annotations = [a for a in task.get("annotations") or [] if isinstance(a, dict) and "id" in a]
        owner = hit_task.get(hit_id)
        if owner is not None and owner != tid and owner in listed and tid not in task_map and not annotations:
            client.tasks.delete(tid)
            rep.duplicate_tasks_deleted += 1
            continue
        present.add(tid)
        if tid not in task_map:
            with gate:
                project.map_external(bk.TASK, [(tid, hit_id)])
            task_map[tid] = hit_id
            hit_task.setdefault(hit_id, tid)
        rep.annotations += len(annotations)
        pairs += [(dict(ann, task=task["id"]), task) for ann in annotations]
    return present, pairs


def _apply(
    project: Project,
    client: LabelStudioClient,
    layout: Layout,
    pairs: list[tuple[dict, dict]],
    live: dict[str, dict[str, float]],
    gate: AbstractContextManager,
    rep: ReconcileReport,
) -> None:
    """Learn the new annotators, then apply every annotation: validated outside the write gate (reads only),
    written under it."""
    people = learn_annotators(project, client, [a for a, _ in pairs])
    if people:
        with gate:
            project.map_external(bk.USER, people)
    plan = prepare_annotations(project, layout, pairs, live)
    with gate:
        outcomes = commit_annotations(project, layout, plan)
    rep.ingested = outcomes.count(IngestOutcome.INGESTED)
    rep.skipped = outcomes.count(IngestOutcome.SKIPPED)
    rep.rejected = outcomes.count(IngestOutcome.REJECTED)


def _withdraw_gone(
    project: Project,
    live: dict[str, dict[str, float]],
    seen: set[str],
    task_map: dict[str, str],
    present: set[str],
    gate: AbstractContextManager,
    rep: ReconcileReport,
) -> None:
    """Retract the live annotations Label Studio no longer lists, and withdraw the HITs of tasks that are gone
    (the annotations of a gone task go with it)."""
    gone_tasks = [t for t in task_map if t not in present]
    gone_task_hits = {task_map[t] for t in gone_tasks}
    hit_of_annotation = _annotation_hits(project)
    loose = [a for a in live if a not in seen and hit_of_annotation.get(a) not in gone_task_hits]
    with gate:
        if loose:
            rep.retracted_annotations = delete_annotations(project, [int(a) for a in loose if a.isdigit()])
        if gone_tasks:
            delete_tasks(project, [int(t) for t in gone_tasks])
            rep.withdrawn_tasks = len(gone_tasks)


def _annotation_hits(project: Project) -> dict[str, str]:
    r = project.ratings()
    if r.empty:
        return {}
    r = r[r["annotation_id"].notna()]
    return dict(zip(r["annotation_id"].astype(str), r["hit_id"].astype(str)))


def _json(d: dict) -> str:
    return json.dumps(d, sort_keys=True)
