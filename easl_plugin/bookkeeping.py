"""What the plugin's records in the project file mean for Label Studio: the ``ls.*`` names and their meaning.

The records themselves are the store's (``core/store/records.py``, one API and one rule per table): the event
queue, rejects, external ids and meta. This module names the plugin's part of them:

- rejects of source :data:`SOURCE` are Label Studio annotations that failed validation;
- external ids of kind :data:`TASK` map a Label Studio task id to the HIT it shows; of kind :data:`ANNOTATION`, an
  annotation id to its task id. An id is never remapped (Label Studio never reuses an id);
- ``meta`` keys ``ls.*`` (below) hold the link to the Label Studio project and the reconciliation record;
- :func:`status_figures` says what "last reconciliation" means in ``easl status``.

The few functions below are one-line calls of the store under the plugin's names, for the plugin's callers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from easl_toolkit.core.store import Project, now

__all__ = [
    "SOURCE",
    "TASK",
    "ANNOTATION",
    "USER",
    "KEY_PROJECT_ID",
    "KEY_URL",
    "KEY_LAYOUT",
    "KEY_LAST_RECONCILIATION",
    "KEY_RECONCILIATION_REPORT",
    "KEY_PUSH_PENDING",
    "KEY_HIT_TIMEOUT",
    "DEFAULT_HIT_TIMEOUT_S",
    "KEY_WEBHOOK_TOKEN",
    "KEY_TASK_HOLDERS",
    "KEY_QUEUE_DEPTH",
    "KEY_PREDICTIONS_SHOWN",
    "KEY_BACKEND_URL",
    "KEY_QUEUE_PLAN",
    "KEY_WEBHOOKS",
    "ACTIVE_WINDOW_S",
    "now",
    "open_project",
    "enqueue",
    "move_journal",
    "status_figures",
    "get_meta",
    "set_meta",
    "id_map",
    "put_ids",
    "queue_counts",
]

SOURCE = "label-studio"  #: source of the plugin's observations and rejects
TASK = "ls.task"  #: external ids: Label Studio task id -> HIT id
ANNOTATION = "ls.annotation"  #: external ids: Label Studio annotation id -> task id
USER = "ls.user"  #: external ids: Label Studio user id -> the user's e-mail
KEY_PROJECT_ID = "ls.project_id"  #: the linked Label Studio project
KEY_URL = "ls.url"  #: its server
KEY_LAYOUT = "ls.layout"  #: the label layout (JSON, ``label_config.layouts.Layout``)
KEY_LAST_RECONCILIATION = "ls.last_reconciliation"  #: when the last reconciliation finished
KEY_RECONCILIATION_REPORT = "ls.last_reconciliation_report"  #: what it applied (JSON)
KEY_PUSH_PENDING = "ls.push_pending"  #: HIT ids being imported as tasks (cleared after the import)
KEY_HIT_TIMEOUT = "ls.hit_timeout_s"  #: seconds of inactivity after which an open task is re-issued (easl serve)
DEFAULT_HIT_TIMEOUT_S = 1800.0
KEY_QUEUE_DEPTH = "ls.queue_depth"  #: open HITs to keep (easl serve --queue-depth; absent: measured, queue.py)
ACTIVE_WINDOW_S = 300.0  #: an annotator is active who scored or saved a draft this many seconds ago at most
KEY_WEBHOOK_TOKEN = "ls.webhook_token"  #: the random token Label Studio's webhook sends (webhook delivery only)
KEY_TASK_HOLDERS = "ls.task_holders"  #: open task id -> who last worked on it and when it was last active (JSON)
KEY_PREDICTIONS_SHOWN = "ls.predictions_shown"  #: task id -> the estimates its predictions showed, and when (JSON)
KEY_QUEUE_PLAN = "ls.queue"  #: the queue's depth and what it was measured from (JSON, easl_plugin/queue.py)
KEY_BACKEND_URL = "ls.backend_url"  #: where Label Studio reaches easl serve (easl ls setup --backend-url)
KEY_WEBHOOKS = "ls.webhooks"  #: the project's webhooks to an easl backend, as last listed (JSON, webhooks.py)


def open_project(path: str) -> Project:
    """Open the project file for this thread (each thread keeps its own connection)."""
    return Project.open(path)


def enqueue(project: Project, events: list[tuple[str, str]]) -> list[int]:
    """Queue webhook ``(kind, payload JSON)`` events as ``pending`` in one transaction; returns their ids."""
    return project.add_events(events)


def move_journal(project: Project, records: list[dict]) -> list[int]:
    """Queue journaled events (``easl_plugin.journal``) in order, skipping those a previous move committed (up to
    the uid in ``meta`` ``ls.journal_moved``); one transaction. Returns the new event ids."""
    from easl_toolkit.easl_plugin.journal import MOVED_KEY

    with project.transaction():
        moved = project.get_meta(MOVED_KEY)
        uids = [r["uid"] for r in records]
        start = uids.index(moved) + 1 if moved in uids else 0
        todo = records[start:]
        ids = project.add_events(cast(Any, [(r["kind"], r["payload"], r["received_at"]) for r in todo]))
        if todo:
            project.set_meta({MOVED_KEY: records[-1]["uid"]})
    return ids


def status_figures(project: Project) -> dict[str, str | None]:
    """The plugin's figures in ``easl status``: ``last_reconciliation`` (when the worker last brought the file in
    line with Label Studio), null with ``last_reconciliation_reason`` when it never did."""
    value = project.get_meta(KEY_LAST_RECONCILIATION)
    out: dict[str, str | None] = {"last_reconciliation": value}
    if value is None:
        out["last_reconciliation_reason"] = "no reconciliation with Label Studio recorded"
    return out


def get_meta(project: Project, key: str) -> str | None:
    """``project.get_meta(key)``."""
    return project.get_meta(key)


def set_meta(project: Project, values: dict[str, str | None]) -> None:
    """``project.set_meta(values)`` (None deletes a key)."""
    project.set_meta(values)


def id_map(project: Project, kind: str) -> dict[str, str]:
    """``project.external_map(kind)``."""
    return project.external_map(kind)


def put_ids(project: Project, kind: str, pairs: Iterable[tuple[object, object]]) -> None:
    """``project.map_external(kind, pairs)``."""
    project.map_external(kind, pairs)


def queue_counts(project: Project) -> dict[str, int]:
    """``project.event_counts()``."""
    return project.event_counts()
