"""Pushing the engine's open HITs to Label Studio as tasks.

Batch mode (the paper's Algorithm 1): ``Project.next_hits()`` returns the open HITs of the current iteration and
starts the next iteration once every HIT of the current one is complete; each open HIT without a task becomes one.
Streaming mode keeps ``N`` HITs open: when fewer are open, new HITs are selected with the items of the open
HITs excluded (``select_hits(..., exclude=)``), so no item is ever in two open HITs.

Crash safety: the HIT ids about to be imported are written to ``meta`` (``ls.push_pending``) before the import and
cleared with the task map after it; a crash in between is repaired by reconciliation (which maps tasks to HITs by
the ``hit_id`` in their data and deletes unannotated duplicates) before anything is pushed again.
"""

from __future__ import annotations

import contextlib
import json
import zlib

import numpy as np

from core.store import Project
from easl_plugin import bookkeeping as bk
from easl_plugin.campaign import close_tasks
from easl_plugin.client import LabelStudioClient
from label_config.layouts import Layout, task_data


def hit_rng(seed: int, hit_id: str) -> np.random.Generator:
    """The generator that shuffles one HIT's display order: seeded by the project seed and the HIT id, so the
    order is reproducible and independent of when the HIT is pushed."""
    return np.random.default_rng([int(seed), zlib.crc32(hit_id.encode("utf-8"))])


def tasks_for(hits: list[dict], layout: Layout, seed: int) -> list[dict]:
    """Label Studio task bodies for HIT records (``{"data": ..., "meta": {"source": "easl"}}``)."""
    return [{"data": task_data(h, layout, hit_rng(seed, str(h["hit_id"]))), "meta": {"source": "easl"}} for h in hits]


def push(project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout, hits: list[dict]) -> int:
    """Import ``hits`` that have no task yet; returns how many tasks were created."""
    mapped = set(bk.id_map(project, bk.TASK).values())
    todo = [h for h in hits if str(h["hit_id"]) not in mapped]
    if not todo:
        return 0
    bk.set_meta(project, {bk.KEY_PUSH_PENDING: json.dumps([str(h["hit_id"]) for h in todo])})
    ids = client.import_tasks(ls_project_id, tasks_for(todo, layout, project.hyper.seed))
    bk.put_ids(project, bk.TASK, zip(ids, [str(h["hit_id"]) for h in todo]))
    bk.set_meta(project, {bk.KEY_PUSH_PENDING: None})
    return len(todo)


def push_batch(project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout, gate=None) -> int:
    """Batch mode: push the current iteration's open HITs (starting the next iteration when it is complete).
    ``gate`` (the service's write gate) is held while the next iteration is selected."""
    with gate if gate is not None else contextlib.nullcontext():
        hits = project.next_hits()
    return push(project, client, ls_project_id, layout, hits)


def progress_text(project: Project) -> str:
    """The Label Studio project's description: the campaign's progress for the project manager (iteration, HITs,
    annotations, and the convergence figure: the mean posterior variance of the items, on the 0-1 scale)."""
    s = project.status()
    return (
        f"EASL campaign: iteration {int(s['iteration'])}, {int(s['n_hits_complete'])} of "
        f"{int(s['n_hits_open']) + int(s['n_hits_complete'])} HITs done, {int(s['n_observations'])} scores so "
        f"far; mean posterior variance {float(s['mean_variance']):.4f} (max {float(s['max_variance']):.4f}; "
        "lower is more certain)."
    )


def _age_s(stamp: object, now: float) -> float:
    from datetime import datetime

    try:
        return now - datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def reissue_stalled(
    project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout, tasks: list[dict], timeout_s: float
) -> list[str]:
    """Re-issue the open HITs that stalled as a fresh Label Studio task each; returns their HIT ids.

    A HIT stalls when its newest task (``tasks``: the project's tasks with their annotations, as listed by the
    reconciliation) is older than ``timeout_s`` without an annotation (an annotator opened it and left: Label
    Studio keeps it locked for them), or has an annotation although the HIT is still open (it was skipped or
    rejected: Label Studio counts the task as completed and shows it to nobody). The old task is closed
    (``campaign.close_tasks``: offered to nobody any more) but left in place, so a late annotation on it is still
    accepted; both tasks map to the HIT, and reconciliation keeps them both.
    """
    import time

    now = time.time()
    newest: dict[str, dict] = {}
    for t in tasks:
        hit_id = (t.get("data") or {}).get("hit_id") if isinstance(t.get("data"), dict) else None
        if isinstance(hit_id, str) and (hit_id not in newest or int(t["id"]) > int(newest[hit_id]["id"])):
            newest[hit_id] = t
    open_ids = set(project.open_hit_times())
    stalled = []
    for hit_id, t in newest.items():
        if hit_id not in open_ids:
            continue
        done = any(isinstance(a, dict) for a in t.get("annotations") or [])
        if done or _age_s(t.get("created_at"), now) > timeout_s:
            stalled.append(hit_id)
    if not stalled:
        return []
    hits = [h for h in project.open_hits(every_iteration=True) if str(h["hit_id"]) in set(stalled)]
    body = tasks_for(hits, layout, project.hyper.seed)
    for b in body:
        b["meta"]["reissued"] = True
    ids = client.import_tasks(ls_project_id, body)
    bk.put_ids(project, bk.TASK, zip(ids, [str(h["hit_id"]) for h in hits]))
    again = {str(h["hit_id"]) for h in hits}
    stale = [
        int(t["id"])
        for t in tasks
        if (t.get("data") or {}).get("hit_id") in again and t.get("overlap") != 0 and int(t["id"]) not in ids
    ]
    close_tasks(client, stale)
    return [str(h["hit_id"]) for h in hits]
