"""Label Studio webhook payloads: parsing, validation, and conversion of annotations to engine rows.

Label Studio does not validate results (a score of 150 or an unknown control name is accepted;
``docs/design.md`` section 7.4), so every annotation is checked here before it reaches the engine:
control names, result types, the score range, completeness (each item of the HIT scored exactly once) and the
task data that ties the task to a HIT. An annotation is taken or rejected whole: a HIT submission is one unit
(bounded RA and TrueSkill need every score of a HIT; Sakaguchi & Van Durme 2018, eq 13).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from easl_toolkit.label_config.layouts import Layout

HANDLED_ACTIONS = ("ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED", "TASKS_DELETED", "START_TRAINING")
MAX_ID = 2**63 - 1  #: the largest id accepted (Label Studio's ids are database integers: 64-bit at most)
_DIGITS = re.compile(r"[0-9]{1,19}")  # ASCII digits only: str.isdigit() also accepts "²" and other scripts' digits


class PayloadError(ValueError):
    """A webhook body that cannot be queued; ``str(exc)`` is the reason sent back with HTTP 400."""


def parse_webhook(body: bytes) -> dict:
    """Decode a webhook body: a JSON object with a string ``action``.

    Raises ``PayloadError`` with the reason when the body is not UTF-8 JSON, not an object, or has no action.
    """
    try:
        payload = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PayloadError(f"body is not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise PayloadError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except ValueError as exc:  # e.g. an integer of more digits than int() converts (4,300)
        raise PayloadError(f"malformed JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise PayloadError(f"expected a JSON object, got {type(payload).__name__}")
    action = payload.get("action")
    if not isinstance(action, str) or not action:
        raise PayloadError("field 'action' is missing or not a string")
    return payload


def id_value(value: object) -> int | None:
    """``value`` as a Label Studio id: an integer in ``[0, MAX_ID]``, given as a JSON integer or as a string of at
    most 19 ASCII digits; None for anything else (booleans, fractions, "²", a 5,000-digit string, "-3")."""
    if isinstance(value, str):
        value = int(value) if _DIGITS.fullmatch(value) else None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_ID else None


def _ids(payload: dict, key: str) -> list[int]:
    rows = payload.get(key)
    if not isinstance(rows, list):
        raise PayloadError(f"{payload.get('action')}: field {key!r} must be a list")
    out = []
    for k, r in enumerate(rows):
        v = id_value(r.get("id") if isinstance(r, dict) else r)
        if v is None:
            raise PayloadError(
                f"{payload.get('action')}: {key}[{k}] has no integer 'id' (0 to {MAX_ID}, as a number or its "
                "ASCII digits)"
            )
        out.append(v)
    return out


def deleted_annotation_ids(payload: dict) -> list[int]:
    """Annotation ids of an ``ANNOTATIONS_DELETED`` payload (``{"annotations": [{"id": 3}, ...]}``)."""
    return _ids(payload, "annotations")


def deleted_task_ids(payload: dict) -> list[int]:
    """Task ids of a ``TASKS_DELETED`` payload (``{"tasks": [{"id": 20}, ...]}``)."""
    return _ids(payload, "tasks")


def _is_int(value: object) -> bool:
    """An integer id: ``int`` but not ``bool`` (``True`` is an ``int`` to Python, not an id to Label Studio), within
    ``[0, MAX_ID]``."""
    return isinstance(value, int) and id_value(value) is not None


MAX_TEXT_ID = 254  #: longest text id accepted (a project id or an annotator's e-mail; RFC 5321 allows 254)


def _is_id(value: object) -> bool:
    """An id as Label Studio may send it: an integer or a string of at most ``MAX_TEXT_ID`` characters (never an
    object, array, boolean or number with a fraction)."""
    return _is_int(value) or (isinstance(value, str) and len(value) <= MAX_TEXT_ID)


def check_event(payload: dict) -> None:
    """Reject, before queueing, a handled event whose structure is unusable (so the sender gets 400 at once).

    Ids are checked for type and size: annotation and task ids must be integers from 0 to ``MAX_ID``; deleted ids
    the same, or strings of their ASCII digits; the project id (a number, or an object with ``id``) and the
    annotator (``completed_by``: an id, or an object with ``id``/``email``) must be such integers or strings of at
    most ``MAX_TEXT_ID`` characters where present.
    """
    action = payload["action"]
    project = payload.get("project")
    pid = project.get("id") if isinstance(project, dict) else project
    if pid is not None and not _is_id(pid):
        raise PayloadError(f"{action}: field 'project' must be an id (an integer or a string) or an object with one")
    if action in ("ANNOTATION_CREATED", "ANNOTATION_UPDATED"):
        ann, task = payload.get("annotation"), payload.get("task")
        if not isinstance(ann, dict) or not _is_int(ann.get("id")):
            raise PayloadError(f"{action}: field 'annotation' must be an object with an integer 'id' (0 to {MAX_ID})")
        if not isinstance(task, dict) or not _is_int(task.get("id")):
            raise PayloadError(f"{action}: field 'task' must be an object with an integer 'id' (0 to {MAX_ID})")
        who = ann.get("completed_by")
        who_id = who.get("id", who.get("email")) if isinstance(who, dict) else who
        if who_id is not None and not _is_id(who_id):
            raise PayloadError(
                f"{action}: annotation field 'completed_by' must be an annotator id (an integer or "
                "a string) or an object with one"
            )
    elif action == "ANNOTATIONS_DELETED":
        deleted_annotation_ids(payload)
    elif action == "TASKS_DELETED":
        deleted_task_ids(payload)


@dataclass
class Conversion:
    """Outcome of converting one annotation: engine rows, or the reasons it was rejected, or a skip."""

    rows: list[dict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    skipped: bool = False


def annotator_of(annotation: dict) -> str:
    """The annotator id: ``completed_by`` (an int, or an object with ``id``/``email`` in some payloads)."""
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("id", who.get("email"))
    return f"ls:{who}" if who is not None else "ls:unknown"


def _score_of(result: dict, layout: Layout) -> tuple[float | None, str | None]:
    value = result.get("value")
    if not isinstance(value, dict) or "number" not in value:
        return None, "has no value.number"
    x = value["number"]
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        return None, f"value {x!r} is not a finite number"
    x = float(x)
    if not layout.score_min <= x <= layout.score_max:
        return None, f"score {x:g} is outside [{layout.score_min:g}, {layout.score_max:g}]"
    return x, None


def convert_annotation(annotation: dict, task: dict, layout: Layout) -> Conversion:
    """Engine rows for one annotation of one task, or the reasons it is rejected.

    Rows carry ``item_id``, ``score`` (project range), ``hit_id``, ``annotator``, ``annotation_id`` (the Label
    Studio annotation id) and ``created_at``. Slider layout: result ``score_j`` scores ``item_ids[j]``. Ranking
    layout: rank r (0 = top) of n scores ``min + (max - min) (n - 1 - r) / (n - 1)``. Pairwise layout: the chosen
    side gets ``max``, the other ``min``.
    """
    if annotation.get("was_cancelled"):
        return Conversion(skipped=True)
    data = task["data"] if isinstance(task.get("data"), dict) else {}
    hit_id, item_ids = data.get("hit_id"), data.get("item_ids")
    if not isinstance(hit_id, str) or not hit_id:
        return Conversion(reasons=[f"task {task.get('id')}: data has no 'hit_id' (not a task pushed by easl)"])
    if not isinstance(item_ids, list) or not item_ids or not all(isinstance(i, str) for i in item_ids):
        return Conversion(reasons=[f"task {task.get('id')}: data.item_ids must be a non-empty list of item ids"])
    results = annotation.get("result")
    if not isinstance(results, list):
        return Conversion(reasons=["result is not a list"])
    scores, reasons = _scores(results, len(item_ids), layout)
    missing = [item_ids[j] for j in range(len(item_ids)) if j not in scores]
    if missing and not reasons:
        reasons.append(f"incomplete: no score for item(s) {', '.join(missing)}")
    if reasons:
        return Conversion(reasons=reasons)
    common = {
        "hit_id": hit_id,
        "annotator": annotator_of(annotation),
        "annotation_id": str(annotation["id"]),
        "created_at": annotation.get("updated_at") or annotation.get("created_at"),
    }
    return Conversion(rows=[{"item_id": i, "score": scores[j], **common} for j, i in enumerate(item_ids)])


def _scores(results: list, n: int, layout: Layout) -> tuple[dict[int, float], list[str]]:
    """Position in the task -> score, from the results of an annotation, and the reasons of the bad results."""
    scores: dict[int, float] = {}
    reasons: list[str] = []
    allowed = set(layout.control_names())
    read = {"slider": _slider, "ranking": _ranking}.get(layout.kind, _choice)
    for k, res in enumerate(results):
        if not isinstance(res, dict):
            reasons.append(f"result[{k}] is not an object")
            continue
        name = res.get("from_name")
        if name not in allowed:
            reasons.append(f"result[{k}]: unknown control {name!r} (expected {', '.join(sorted(allowed))})")
            continue
        why = read(res, k, n, layout, scores)
        if why:
            reasons.append(why)
    return scores, reasons


def _slider(res: dict, k: int, n: int, layout: Layout, scores: dict[int, float]) -> str | None:
    """A slider's result ``score_j`` (the ``k``-th result) into ``scores[j]``; the reason when it is not a score."""
    where = f"result[{k}] ({res['from_name']})"
    if res.get("type") != "number":
        return f"{where}: type {res.get('type')!r}, expected 'number'"
    j = int(res["from_name"].rsplit("_", 1)[1])
    if j >= n:
        return f"{where}: the task shows only {n} items"
    x, why = _score_of(res, layout)
    if why or x is None:
        return f"{where}: {why}"
    if j in scores:
        return f"{where}: item scored twice"
    scores[j] = x
    return None


def _ranking(res: dict, k: int, n: int, layout: Layout, scores: dict[int, float]) -> str | None:
    """A ranking (``value.ranker``: the ids ``i<j>`` from the top) into scores; the reason when it is not one."""
    value = res.get("value")
    rank = value.get("ranker", {}) if isinstance(value, dict) else {}
    order = next(iter(rank.values()), None) if isinstance(rank, dict) else None
    ids = [f"i{j}" for j in range(n)]
    if not isinstance(order, list) or sorted(map(str, order)) != sorted(ids):
        return f"result[{k}] (rank): ranking must list each of {ids} exactly once"
    span = layout.score_max - layout.score_min
    for r, ident in enumerate(order):
        scores[ids.index(str(ident))] = layout.score_min + span * (n - 1 - r) / (n - 1)
    return None


def _choice(res: dict, k: int, n: int, layout: Layout, scores: dict[int, float]) -> str | None:
    """A pairwise choice (``value.selected``: left or right) into scores; the reason when it is not one."""
    value = res.get("value")
    sel = value.get("selected") if isinstance(value, dict) else None
    if sel not in ("left", "right"):
        return f"result[{k}] (choice): selected must be 'left' or 'right', got {sel!r}"
    low, high = layout.score_min, layout.score_max
    scores[0], scores[1] = (high, low) if sel == "left" else (low, high)
    return None
