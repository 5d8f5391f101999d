"""Applying Label Studio annotations and deletions to the project (used by the event worker and reconciliation).

Every function is idempotent: the engine's source key is ``(annotation_id, item_id)`` with the Label Studio
annotation id, so the same annotation applied twice changes nothing, a changed one supersedes, and a retraction of
something no longer live retracts nothing (``core/store``, README "The project file").

Deletions are final (tombstones): a deleted annotation id is recorded with the time of its deletion (external ids
of kind :data:`DELETED`: the later of the time the deletion was applied and the time stamp of the version that was
live), and a later delivery of that annotation (a replayed ``ANNOTATION_CREATED``, an ``ANNOTATION_UPDATED`` that
arrives late, a reconciliation that lists it) is refused and recorded as a reject with the reason, unless it is a
newer version: its ``updated_at`` (else ``created_at``) later than the tombstone. A newer version lifts the
tombstone and is applied as usual. Deleting twice keeps the first tombstone. Annotations of deleted tasks need no
tombstone: their HIT is withdrawn for good, and the store refuses scores for it.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass
from typing import cast

from easl_toolkit.core.errors import EaslError, InvalidRows
from easl_toolkit.core.store import Prepared, Project, now
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.events import convert_annotation, id_value
from easl_toolkit.label_config.layouts import Layout

DELETED = "ls.deleted"  #: external ids: a deleted Label Studio annotation id -> its tombstone (time, ISO 8601 UTC)


class IngestOutcome(enum.StrEnum):
    """What applying one annotation did (a ``str`` enum: ``IngestOutcome.INGESTED == "ingested"``)."""

    INGESTED = "ingested"  #: its scores are live now
    UNCHANGED = "unchanged"  #: its scores were live already (reconciliation)
    SKIPPED = "skipped"  #: a skipped task: nothing to score (earlier scores of it are retracted)
    REJECTED = "rejected"  #: invalid: recorded in ``rejects`` with the reason (earlier scores are retracted)

    def __str__(self) -> str:
        return self.value


def _user_id(annotation: dict) -> str | None:
    """The Label Studio user id of an annotation's author (``events.id_value``), or None."""
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("id")
    uid = id_value(who)
    return None if uid is None else str(uid)


def learn_annotators(project: Project, client, annotations: list[dict]) -> list[tuple[str, str]]:
    """The ``(user id, e-mail)`` of every Label Studio user who completed one of ``annotations`` and is not known
    yet, asked of Label Studio (``client``; none when None or when Label Studio cannot tell). Reads only: the
    caller records them (``project.map_external(bk.USER, pairs)``, under its write gate), and annotations are
    then recorded under their annotator's e-mail, the user id kept beside it in the external ids."""
    if client is None:
        return []
    known = project.external_map(bk.USER)
    found = []
    for uid in sorted({u for u in map(_user_id, annotations) if u is not None and u not in known}):
        try:
            email = client.users.get(int(uid)).email
        except EaslError:
            continue
        if isinstance(email, str) and email:
            found.append((uid, email))
    return found


def _named(rows: list[dict], people: dict[str, str]) -> list[dict]:
    """Rows with ``ls:<id>`` annotators renamed to the user's e-mail where it is known."""
    for r in rows:
        who = str(r.get("annotator", ""))
        if who.startswith("ls:") and who[3:] in people:
            r["annotator"] = people[who[3:]]
    return rows


def _location(task: dict, annotation: dict) -> str:
    return f"label-studio task {task.get('id')} annotation {annotation.get('id')}"


def _reason(exc: EaslError) -> str:
    """The reject reason for an annotation the engine refused: the bad rows' own sentences."""
    return "; ".join(exc.messages) if isinstance(exc, InvalidRows) and exc.messages else str(exc)


def _reject(project: Project, task: dict, annotation: dict, reason: str) -> None:
    project.add_reject(source=bk.SOURCE, location=_location(task, annotation), reason=reason, payload=annotation)


def _instant(text: object) -> dt.datetime | None:
    """An ISO 8601 time stamp as an aware UTC time (a naive one is taken as UTC); None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        t = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def _version(annotation: dict) -> object:
    """The time stamp of an annotation's version as Label Studio gives it: ``updated_at``, else ``created_at``."""
    return annotation.get("updated_at") or annotation.get("created_at")


def tombstone_refusal(annotation: dict, tombstone: str | None) -> str | None:
    """The reason to refuse ``annotation`` because of its ``tombstone`` (module docstring), or None: no tombstone,
    or a version later than it."""
    if tombstone is None:
        return None
    version, dead = _instant(_version(annotation)), _instant(tombstone)
    if version is not None and dead is not None and version > dead:
        return None
    given = _version(annotation)
    what = f"its version of {given}" if isinstance(given, str) else "it carries no version time"
    return (
        f"annotation {annotation.get('id')} was deleted (tombstone {tombstone}) and {what} is not newer: "
        "a replayed or late delivery, refused"
    )


def apply_annotation(
    project: Project, layout: Layout, annotation: dict, task: dict, live: dict[str, dict[str, float]] | None = None
) -> IngestOutcome:
    """Validate one annotation and ingest its scores; returns the :class:`IngestOutcome`.

    A skipped task (``was_cancelled``) adds nothing; an annotation later changed into a skip or into something
    invalid has its earlier scores retracted (the annotator withdrew them). Rejections are recorded with their
    reasons in ``rejects``. ``live`` (annotation id -> {item_id: score}), when given, lets unchanged annotations
    be recognised without touching the log (reconciliation). A deleted annotation is refused unless this is a newer
    version (``tombstone_refusal``).
    """
    aid = str(annotation["id"])
    task_id = task.get("id")
    tombstone = project.local_id(DELETED, aid)
    refusal = tombstone_refusal(annotation, tombstone)
    if refusal is not None:
        _reject(project, task, annotation, refusal)
        return IngestOutcome.REJECTED
    if tombstone is not None:  # a newer version than the deletion: the annotation lives again
        project.unmap_external(DELETED, [aid])
    project.map_external(bk.ANNOTATION, [(aid, task_id)])
    hit_id = (task.get("data") or {}).get("hit_id") if isinstance(task.get("data"), dict) else None
    if isinstance(hit_id, str) and task_id is not None:
        project.map_external(bk.TASK, [(task_id, hit_id)])
    conv = convert_annotation(annotation, task, layout)
    was_live = live is None or aid in live
    if conv.skipped:
        if was_live:
            project.retract([aid], source=bk.SOURCE)
        return IngestOutcome.SKIPPED
    if conv.reasons:
        _reject(project, task, annotation, "; ".join(conv.reasons))
        if was_live:
            project.retract([aid], source=bk.SOURCE)
        return IngestOutcome.REJECTED
    if live is not None and live.get(aid) == {r["item_id"]: float(r["score"]) for r in conv.rows}:
        return IngestOutcome.UNCHANGED
    try:
        project.ingest(_named(conv.rows, project.external_map(bk.USER)), source=bk.SOURCE)
    except EaslError as exc:
        _reject(project, task, annotation, _reason(exc))
        if was_live:
            project.retract([aid], source=bk.SOURCE)
        return IngestOutcome.REJECTED
    return IngestOutcome.INGESTED


@dataclass
class AnnotationPlan:
    """What :func:`prepare_annotations` worked out without writing: outcomes known already, the id maps to record,
    the pairs to apply one by one (skips, invalid), and the valid scores of all the others, validated."""

    pairs: list[tuple[dict, dict]]
    live: dict[str, dict[str, float]] | None
    outcomes: list[IngestOutcome | None]
    ann_map: list[tuple[str, object]]
    task_map: list[tuple[object, str]]
    single: list[int]
    good: list[int]
    prepared: Prepared | None


def prepare_annotations(
    project: Project, layout: Layout, pairs: list[tuple[dict, dict]], live: dict[str, dict[str, float]] | None = None
) -> AnnotationPlan:
    """The read-only half of :func:`apply_annotations`: convert every annotation and validate the scores of the
    valid ones in one batch (``Project.prepare``, under a read snapshot), so that the write half holds the
    project's write lock only to append."""
    outcomes: list[IngestOutcome | None] = [None] * len(pairs)
    ann_map, task_map, rows, good, single = [], [], [], [], []
    people = project.external_map(bk.USER)
    tombstones = project.external_map(DELETED)
    for k, (ann, task) in enumerate(pairs):
        aid = str(ann["id"])
        if aid in tombstones:  # refused, or a newer version that lifts the tombstone: one by one
            single.append(k)
            continue
        raw_data = task.get("data")
        data: dict = raw_data if isinstance(raw_data, dict) else {}
        ann_map.append((aid, task.get("id")))
        if isinstance(data.get("hit_id"), str) and task.get("id") is not None:
            task_map.append((task["id"], data["hit_id"]))
        conv = convert_annotation(ann, task, layout)
        if conv.skipped or conv.reasons:
            single.append(k)
        elif live is not None and live.get(aid) == {r["item_id"]: float(r["score"]) for r in conv.rows}:
            outcomes[k] = IngestOutcome.UNCHANGED
        else:
            good.append(k)
            rows.extend(_named(conv.rows, people))
    prepared = project.prepare(rows, source=bk.SOURCE) if rows else None
    return AnnotationPlan(
        pairs=pairs,
        live=live,
        outcomes=outcomes,
        ann_map=ann_map,
        task_map=task_map,
        single=single,
        good=good,
        prepared=prepared,
    )


def commit_annotations(project: Project, layout: Layout, plan: AnnotationPlan) -> list[IngestOutcome]:
    """The write half of :func:`apply_annotations` (one transaction); returns the outcomes."""
    outcomes = list(plan.outcomes)
    pairs, live = plan.pairs, plan.live
    single, good, prepared, ann_map = plan.single, plan.good, plan.prepared, plan.ann_map
    with project.transaction():
        dead = project.external_map(DELETED)
        if any(str(pairs[k][0]["id"]) in dead for k in good):  # deleted since the plan was made: one by one
            single, good, prepared = single + good, [], None
            ann_map = [(a, t) for a, t in ann_map if a not in dead]
        project.map_external(bk.ANNOTATION, ann_map)
        project.map_external(bk.TASK, plan.task_map)
        for k in single:
            outcomes[k] = apply_annotation(project, layout, pairs[k][0], pairs[k][1], live)
        if prepared is not None:
            try:
                project.ingest(prepared, source=bk.SOURCE)
                for k in good:
                    outcomes[k] = IngestOutcome.INGESTED
            except EaslError:
                for k in good:
                    outcomes[k] = apply_annotation(project, layout, pairs[k][0], pairs[k][1], live)
    return cast(list[IngestOutcome], outcomes)  # every pair got its outcome above


def apply_annotations(
    project: Project, layout: Layout, pairs: list[tuple[dict, dict]], live: dict[str, dict[str, float]] | None = None
) -> list[IngestOutcome]:
    """``apply_annotation`` for many ``(annotation, task)`` pairs with one ``Project.ingest`` call for all the valid
    ones (one validation and one state update instead of one per annotation). Pairs must have distinct annotation
    ids. Skips and rejects are handled one by one; if the combined batch is refused (e.g. a HIT withdrawn in the
    meantime), each annotation is retried alone so that only the bad ones are rejected. Returns the outcomes.
    Equals ``commit_annotations(project, layout, prepare_annotations(project, layout, pairs, live))``.
    """
    return commit_annotations(project, layout, prepare_annotations(project, layout, pairs, live))


def delete_annotations(project: Project, annotation_ids: list[int], *, at: str | None = None) -> int:
    """Retract the scores of deleted annotations and record their tombstones (module docstring; an id deleted
    before keeps its first one); one transaction. Returns the number of observations retracted.

    ``at`` (ISO 8601) is when they were known to be deleted, by default now. A reconciliation should pass the time
    its listing of Label Studio started: an annotation created after that instant and applied meanwhile is missing
    from the listing without being deleted, and its next delivery, newer than ``at``, then still counts."""
    if not annotation_ids:
        return 0
    ids = sorted({str(a) for a in annotation_ids})
    with project.transaction():
        versions = project.live_versions(ids)
        n = project.retract(ids, source=bk.SOURCE)
        project.unmap_external(bk.ANNOTATION, ids)
        known = project.external_map(DELETED)
        deleted_at = _instant(at) or cast(dt.datetime, _instant(now()))
        fresh = []
        for aid in (a for a in ids if a not in known):
            live_at = _instant(versions.get(aid))
            stamp = live_at if live_at is not None and live_at > deleted_at else deleted_at
            fresh.append((aid, stamp.isoformat(timespec="microseconds")))
        project.map_external(DELETED, fresh)
    return int(n)


def delete_tasks(project: Project, task_ids: list[int]) -> int:
    """Withdraw the HITs of deleted tasks (their scores are retracted and they stop counting toward completion).

    Label Studio sends only ``TASKS_DELETED`` for a deleted task, never ``ANNOTATIONS_DELETED``
    (``docs/design.md`` section 7.3), so the task -> HIT map in ``external_ids`` is what finds them.
    """
    n = 0
    for tid in task_ids:
        hit_id = project.local_id(bk.TASK, tid)
        if hit_id is None:
            continue
        n += int(project.retract_hit(hit_id, source=bk.SOURCE))
        project.unmap_external(bk.TASK, [tid])
    return n
