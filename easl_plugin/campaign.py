"""The campaign inside Label Studio: estimates as predictions, a Data Manager without internal columns, closed
stale tasks and who holds an open task.

**Predictions** (issue 11 item 6). Every task carries, as one Label Studio prediction, the current estimate of
each of its items on the slider it is shown with (``score_j``), and the item's 95% interval and number of scores
in the result's ``meta.text`` (shown in the Data Manager's prediction columns). The prediction's
``model_version`` is the iteration (``iteration-<k>``, :func:`model_version`); its ``score`` is the mean
certainty of the task's items, ``1 - mean((ci_high - ci_low) / (score_max - score_min))`` (0: nothing known,
1: every interval a point). Estimates and intervals are ``Project.estimates()``: for EASL the Beta posterior's
mean and its central 95% interval (Sakaguchi & Van Durme 2018, eq 24-25).
The project keeps predictions hidden from annotators (``show_collab_predictions`` off), so they never anchor a
score. The worker replaces every task's prediction when the iteration changes (:func:`sync_predictions`), and the
ML backend's ``/predict`` answers with the same figures (:func:`predictions_for_tasks`), so "Retrieve
Predictions" in the Data Manager brings tasks without the current version up to date.

**Data Manager columns.** The task data's ``hit_id``, ``permutation`` and ``item_ids`` are bookkeeping; every
Data Manager tab of the project hides them (:func:`hide_internal_columns`).

**Stale tasks.** A re-issued HIT's older tasks are closed (:func:`close_tasks`: ``overlap`` 0, so Label Studio
counts them as labelled and serves them to nobody), while an annotation posted on one later is still accepted.

**Holders.** Label Studio 1.23 keeps task locks to itself (no API lists them); it does list a task's drafts
(saved as an annotator works on it) and annotations, with their users. :func:`task_holders` names, for each
task, the annotator of its newest draft or annotation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from core.store import Project
from easl_plugin import bookkeeping as bk
from easl_plugin.client import LabelStudioClient, LabelStudioError
from label_config.layouts import Layout, task_data

INTERNAL_FIELDS = ("hit_id", "permutation", "item_ids")  #: task data the Data Manager does not show
HOLDER_UNKNOWN = (
    "Label Studio does not say who opened a task (its task locks have no API); an annotator is known once "
    "Label Studio saved a draft of theirs or they submitted, skipped or had an annotation rejected"
)


def model_version(iteration: int) -> str:
    """The predictions' model version for an iteration: ``iteration-<k>``."""
    return f"iteration-{int(iteration)}"


class Figures:
    """The estimates of a project: estimate, 95% interval and live scores per item (``Project.estimates``),
    looked up by item id through a pandas index (no per-item Python work)."""

    def __init__(self, project: Project) -> None:
        est = project.estimates()
        self.version = model_version(project.iteration())
        self.span = float(project.hyper.score_max - project.hyper.score_min)
        self.index = pd.Index(est["item_id"].astype(str))
        self.values: NDArray[np.float64] = np.column_stack(
            [est[c].to_numpy(dtype=np.float64) for c in ("estimate", "ci_low", "ci_high")]
        )
        self.counts: NDArray[np.int64] = est["n_annotations"].to_numpy(dtype=np.int64)

    def prediction(self, item_ids: list[str], layout: Layout) -> dict[str, Any]:
        """One prediction for a task showing ``item_ids`` (in the order shown): ``result``, ``score``,
        ``model_version`` (module docstring). Only the slider layout has a control per item; the other
        layouts get the figures as the prediction's score alone."""
        pos = self.index.get_indexer(item_ids) if item_ids else np.zeros(0, dtype=np.int64)
        found = pos >= 0
        rows = self.values[pos[found]]
        widths = rows[:, 2] - rows[:, 1]
        score = float(1.0 - widths.mean() / self.span) if widths.size and self.span > 0 else 0.0
        result = []
        if layout.kind == "slider":
            shown = [[round(x, 1) for x in row] for row in rows.tolist()]  # the task's few items only
            for (j, item), (est, lo, hi), n in zip(
                ((j, i) for j, i in enumerate(item_ids) if found[j]), shown, self.counts[pos[found]].tolist()
            ):
                result.append(
                    {
                        "from_name": f"score_{j}",
                        "to_name": f"text_{j}",
                        "type": "number",
                        "value": {"number": est},
                        "meta": {"text": [f"{item}: {est}, 95% interval [{lo}, {hi}], {n} scores"]},
                    }
                )
        return {"result": result, "score": round(score, 4), "model_version": self.version}


def predictions_for_tasks(project: Project, layout: Layout, tasks: list[Any]) -> list[dict[str, Any]]:
    """``/predict``: one prediction per task of Label Studio's request, in its order (a task without our
    ``item_ids`` gets an empty result)."""
    figures = Figures(project)
    out = []
    for t in tasks:
        data = t.get("data") if isinstance(t, dict) else None
        ids = data.get("item_ids") if isinstance(data, dict) else None
        items = [str(i) for i in ids] if isinstance(ids, list) else []
        out.append(figures.prediction(items, layout))
    return out


def shown_items(project: Project, layout: Layout) -> dict[str, list[str]]:
    """HIT id -> its item ids in the order its tasks show them (the same permutation as ``push.tasks_for``)."""
    from easl_plugin.push import hit_rng

    seed = project.hyper.seed
    out: dict[str, list[str]] = {}
    for it in range(project.iteration() + 1):
        for h in project.hits(it):
            hid = str(h["hit_id"])
            out[hid] = task_data(h, layout, hit_rng(seed, hid))["item_ids"]
    return out


def sync_predictions(
    project: Project, client: LabelStudioClient, pid: int, layout: Layout, *, refresh_backends: bool = True
) -> int:
    """Replace the predictions of every task of the project with the current figures (one call deletes them,
    one imports the new ones) and make their version the project's; with ``refresh_backends``, have Label
    Studio read its ML backends' model version again (``easl ls setup`` does that itself once their
    credentials are repaired). Returns how many predictions were imported."""
    tasks = project.external_map(bk.TASK)  # task id -> HIT id
    if not tasks:
        return 0
    figures = Figures(project)
    shown = shown_items(project, layout)
    body = [{"task": int(tid), **figures.prediction(shown[hid], layout)} for tid, hid in tasks.items() if hid in shown]
    client.request(
        "POST",
        "/api/dm/actions",
        params={"id": "delete_tasks_predictions", "project": int(pid)},
        json={"selectedItems": {"all": True, "excluded": []}},
    )
    for start in range(0, len(body), 500):
        client.request("POST", f"/api/projects/{int(pid)}/import/predictions", json=body[start : start + 500])
    # the Data Manager's "Prediction score" averages the predictions of the current model version: the project's,
    # or its ML backends' (which Label Studio reads from /setup when it looks at a backend)
    set_model_version(client, pid, figures.version)
    for m in client.ml_backends(pid) if refresh_backends else []:
        client.ml_backend(int(m["id"]))
    return len(body)


def set_model_version(client: LabelStudioClient, pid: int, version: str, *, wait_s: float = 10.0) -> None:
    """Make ``version`` the project's model version, if it is not already. Label Studio accepts a version only
    once it exists as a live model (an ML backend's) or as imported predictions; the predictions just imported may
    not be visible yet on a loaded server (seen in CI: "Model version doesn't exist either as live model or as
    static predictions" right after the import), so that refusal is retried for up to ``wait_s`` seconds."""
    if client.project(pid).get("model_version") == version:
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            client.update_project(pid, model_version=version)
            return
        except LabelStudioError as exc:
            if "Model version" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def hide_internal_columns(client: LabelStudioClient, pid: int) -> int:
    """Hide :data:`INTERNAL_FIELDS` in every Data Manager tab of the project (creating the first tab when there
    is none, which the Data Manager then opens with); returns how many tabs were changed."""
    wanted = [f"tasks:data.{f}" for f in INTERNAL_FIELDS]
    views = [v for v in client.request("GET", "/api/dm/views", params={"project": int(pid)}) or [] if v]
    if not views:
        first = {"title": "Campaign", "hiddenColumns": {"explore": wanted, "labeling": wanted}}
        client.request("POST", "/api/dm/views", json={"project": int(pid), "data": first})
        return 1
    changed = 0
    for v in views:
        data: dict[str, Any] = dict(v.get("data") or {})
        hidden: dict[str, Any] = dict(data.get("hiddenColumns") or {})
        new = {k: sorted(set(hidden.get(k) or []) | set(wanted)) for k in ("explore", "labeling")}
        if all(set(wanted) <= set(hidden.get(k) or []) for k in new):
            continue
        data["hiddenColumns"] = {**hidden, **new}
        client.request("PATCH", f"/api/dm/views/{int(v['id'])}", json={"project": int(pid), "data": data})
        changed += 1
    return changed


def close_tasks(client: LabelStudioClient, task_ids: Iterable[int]) -> list[int]:
    """Close stale tasks: ``overlap`` 0, so Label Studio counts each as labelled and offers it to nobody; an
    annotation posted on one later is still accepted (and applied). Returns the ids closed."""
    done = []
    for tid in task_ids:
        client.request("PATCH", f"/api/tasks/{int(tid)}", json={"overlap": 0, "is_labeled": True})
        done.append(int(tid))
    return done


def _stamp(x: dict) -> str:
    return str(x.get("updated_at") or x.get("created_at") or "")


def task_holders(tasks: list[dict], people: dict[str, str]) -> dict[str, dict[str, str]]:
    """Task id -> ``{"annotator", "how", "at"}``: the user of the task's newest draft or annotation, as listed
    by Label Studio's export (``tasks``, drafts included); ``people`` maps Label Studio user ids to e-mails."""
    out: dict[str, dict[str, str]] = {}
    for t in tasks:
        marks = []
        for d in t.get("drafts") or []:
            if isinstance(d, dict) and d.get("user"):
                marks.append((_stamp(d), str(d["user"]), "draft"))
        for a in t.get("annotations") or []:
            if isinstance(a, dict) and a.get("completed_by") is not None:
                who = a["completed_by"]
                who = who.get("email") or who.get("id") if isinstance(who, dict) else who
                how = "skipped" if a.get("was_cancelled") else "annotation"
                marks.append((_stamp(a), people.get(str(who), str(who)), how))
        if marks:
            at, who, how = max(marks)
            out[str(t["id"])] = {"annotator": who, "how": how, "at": at}
    return out


def current_version(project_path: str) -> str:
    """``/setup``: the model version of the project's current iteration (:func:`model_version`)."""
    with Project.open(project_path, readonly=True) as project:
        return model_version(project.iteration())


def predict_response(project_path: str, body: object) -> dict[str, Any]:
    """``/predict``: ``{"results": [one prediction per task], "model_version": ...}`` with the current figures;
    no results before ``easl ls setup`` linked the project (no layout yet)."""
    tasks = body.get("tasks") if isinstance(body, dict) else None
    tasks = tasks if isinstance(tasks, list) else []
    with Project.open(project_path, readonly=True) as project:
        raw = project.get_meta(bk.KEY_LAYOUT)
        version = model_version(project.iteration())
        if raw is None or not tasks:
            return {"results": [], "model_version": version}
        return {
            "results": predictions_for_tasks(project, Layout.from_dict(json.loads(raw)), tasks),
            "model_version": version,
        }
