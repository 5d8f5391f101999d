"""The campaign inside Label Studio: estimates as predictions that pre-fill nothing, a Data Manager that shows
annotators neither estimates nor other annotators' scores, closed or removed stale tasks, who holds an open task,
and annotations that repeat a prediction.

**Predictions bound to no control.** Every task carries, as one Label Studio prediction, the current estimate,
95% interval and number of scores of each of its items, as one text result (``from_name`` :data:`ESTIMATES`,
``type`` ``textarea``) that no control of the label config is named after. Label Studio 1.23.2 pre-fills an
annotation from a prediction in two places: the labelling stream, when the project's ``show_collab_predictions``
is on (it is kept off, so the stream's tasks come without predictions), and the Data Manager, whenever a task
without annotations is opened and has a prediction, whatever the project's settings (the front end's
``addAnnotationFromPrediction``). Both copy the prediction's results into the new annotation after dropping
every result whose ``from_name`` is not a control of the config (``fixBrokenAnnotation``), so a result bound to
no control pre-fills nothing: the sliders start unset wherever the task is opened. Turning
``show_collab_predictions`` off alone does not do it (the Data Manager ignores it), nor does a project
``model_version`` that no prediction has (the Data Manager then takes the first prediction). Task data fields
(the other place the figures could live) would cost one request per task at every update, where predictions
are replaced in two.

The prediction's ``model_version`` is the iteration (``iteration-<k>``, :func:`model_version`); its ``score`` is
the mean certainty of the task's items, ``1 - mean((ci_high - ci_low) / (score_max - score_min))`` (0: nothing
known, 1: every interval a point). Estimates and intervals are ``Project.estimates()``: for EASL the Beta
posterior's mean and its central 95% interval (Sakaguchi & Van Durme 2018, eq 24-25). The worker replaces every
task's prediction when the figures change (:func:`sync_predictions`), and the ML backend's ``/predict``
answers with the same figures (:func:`predictions_for_tasks`). What each task's prediction said, and when, is kept
(``ls.predictions_shown``), so that :func:`repeated_predictions` can flag an annotation whose scores equal a
prediction its task carried before it was made.

**Data Manager tabs** (:func:`arrange_tabs`). The task data's ``hit_id``, ``permutation`` and ``item_ids`` are
bookkeeping and hidden in every tab. The estimates (prediction columns) and the annotations' results (other
annotators' scores) are hidden in every tab but one, :data:`ESTIMATES_TAB`, placed last, where the project
manager reads each item's estimate, interval and count. Label Studio Community cannot hide more: every member of
the organisation may open that tab, show a hidden column in any tab (tabs are shared, not per user), open any
task with its annotations and predictions, or read them through the API. README, "What annotators can see".

**Stale tasks.** A re-issued HIT's older task is deleted when nobody touched it (no draft, no annotation: it was
never worked on, and a copy left in place would count as done in Label Studio's progress), and closed otherwise
(:func:`close_tasks`: ``overlap`` 0, so Label Studio serves it to nobody and counts it as labelled; a late
annotation on it is still accepted).

**Holders.** Label Studio 1.23 keeps task locks to itself (no API lists them); it does list a task's drafts
(saved about 5 s after an annotator changes something) and annotations, with their users. :func:`task_holders`
names, for each task, the annotator of its newest draft or annotation and when Label Studio last saw activity on
it (:func:`last_activity`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.store import Project, now
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.label_config.layouts import Layout, task_data

if TYPE_CHECKING:
    from easl_toolkit.easl_plugin.client import LabelStudioClient

INTERNAL_FIELDS = ("hit_id", "permutation", "item_ids")  #: task data the Data Manager does not show
#: Data Manager columns hidden in every tab but :data:`ESTIMATES_TAB`: the estimates and other annotators' scores
ANNOTATOR_HIDDEN = ("predictions_results", "predictions_score", "predictions_model_versions", "annotations_results")
ESTIMATES_TAB = "Estimates (project manager)"  #: the one tab that shows the estimates
ESTIMATES = "easl_estimates"  #: ``from_name`` of the predictions' result: no control of any config has this name
HOLDER_UNKNOWN = (
    "Label Studio does not say who opened a task (its task locks have no API); an annotator is known once "
    "Label Studio saved a draft of theirs or they submitted on the HIT's current task"
)
SHOWN_KEPT = 4  #: predictions remembered per task for :func:`repeated_predictions`
REPEAT_TOLERANCE = 0.5  #: a score within this of the prediction repeats it (half the sliders' step of 1)


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

    def rows(self, item_ids: list[str]) -> tuple[list[str], NDArray[np.float64], NDArray[np.int64]]:
        """The items of ``item_ids`` that the project has, with their ``(estimate, ci_low, ci_high)`` rows and
        counts."""
        pos = self.index.get_indexer(item_ids) if item_ids else np.zeros(0, dtype=np.int64)
        found = pos >= 0
        return [i for i, f in zip(item_ids, found) if f], self.values[pos[found]], self.counts[pos[found]]

    def prediction(self, item_ids: list[str], layout: Layout) -> dict[str, Any]:
        """One prediction for a task showing ``item_ids`` (in the order shown): ``result`` (one text bound to no
        control, one line per item: ``<item>: <estimate> [<ci_low>, <ci_high>], <n> scores``), ``score``,
        ``model_version`` (module docstring)."""
        items, rows, counts = self.rows(item_ids)
        widths = rows[:, 2] - rows[:, 1]
        score = float(1.0 - widths.mean() / self.span) if widths.size and self.span > 0 else 0.0
        shown = [[round(x, 1) for x in row] for row in rows.tolist()]  # the task's few items only
        lines = [f"{i}: {e} [{lo}, {hi}], {n} scores" for i, (e, lo, hi), n in zip(items, shown, counts.tolist())]
        result = (
            # the value first: the Data Manager's cell shows the result's beginning
            [{"value": {"text": lines}, "from_name": ESTIMATES, "to_name": layout_object(layout), "type": "textarea"}]
            if lines
            else []
        )
        return {"result": result, "score": round(score, 4), "model_version": self.version}

    def shown(self, item_ids: list[str]) -> dict[str, float]:
        """Item id -> the estimate a prediction shows for it (rounded to 0.1 as in :meth:`prediction`)."""
        items, rows, _ = self.rows(item_ids)
        return {i: round(float(e), 1) for i, e in zip(items, rows[:, 0].tolist())}


def layout_object(layout: Layout) -> str:
    """The object tag a task's results point to (``to_name``): the first text, or the ranked list."""
    return "items" if layout.kind == "ranking" else "text_0"


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


def hit_rng(seed: int, hit_id: str) -> np.random.Generator:
    """The generator that shuffles one HIT's display order: seeded by the project seed and the HIT id, so the
    order is reproducible and independent of when the HIT is pushed."""
    return np.random.default_rng([int(seed), zlib.crc32(hit_id.encode("utf-8"))])


def tasks_for(hits: list[dict], layout: Layout, seed: int) -> list[dict]:
    """Label Studio task bodies for HIT records (``{"data": ..., "meta": {"source": "easl"}}``)."""
    return [{"data": task_data(h, layout, hit_rng(seed, str(h["hit_id"]))), "meta": {"source": "easl"}} for h in hits]


def shown_items(project: Project, layout: Layout) -> dict[str, list[str]]:
    """HIT id -> its item ids in the order its tasks show them (the same permutation as :func:`tasks_for`)."""
    seed = project.hyper.seed
    out: dict[str, list[str]] = {}
    for it in range(project.iteration() + 1):
        for h in project.hits(it):
            hid = str(h["hit_id"])
            out[hid] = task_data(h, layout, hit_rng(seed, hid))["item_ids"]
    return out


def sync_predictions(
    project: Project,
    client: LabelStudioClient,
    pid: int,
    layout: Layout,
    *,
    refresh_backends: bool = True,
    via_backend: bool = True,
    gate=None,
) -> int:
    """Replace the predictions of every task of the project with the current figures and make their version the
    project's. Label Studio 1.23.2 checks predictions against the label config when they are imported in bulk
    (``/import/predictions``, tasks with predictions) and drops those bound to no control, but not those its ML
    backend returns nor those created one by one (``POST /api/predictions``). So, with an ML backend connected,
    one call deletes the predictions and one has Label Studio ask the backend's ``/predict`` for all of them
    (the same figures, :func:`predictions_for_tasks`); without one, or when it could not answer, they are created
    one per task. What each task's prediction shows is remembered (:func:`remember_shown`). With
    ``refresh_backends``, Label Studio reads its ML backends' model version again; without ``via_backend``
    (``easl ls setup``, before it has repaired the backend's credentials), the backend is not asked; ``gate``
    (the service's write gate) is held while the project file is written. Returns how many tasks were given a
    prediction."""
    with _one_sync_at_a_time(project.path):
        return _sync_predictions(project, client, pid, layout, refresh_backends, via_backend, gate)


def predict_new(
    project: Project,
    client: LabelStudioClient,
    layout: Layout,
    task_ids: list[int],
    gate=None,
    *,
    check: bool = True,
) -> int:
    """Give each of ``task_ids`` (tasks the queue just created) the current prediction of its HIT, unless it has
    one already (with ``check``: a replacement of every prediction, :func:`sync_predictions`, that ran since the
    tasks were created may have given it one); under the same lock as :func:`sync_predictions`, so the two never
    interleave. Returns how many were posted."""
    with _one_sync_at_a_time(project.path):
        tasks = project.external_map(bk.TASK)
        hits = {str(h["hit_id"]): h for h in project.open_hits(every_iteration=True)}
        seed, figures = project.hyper.seed, Figures(project)
        body, shown = [], {}
        for tid in task_ids:
            hit = hits.get(tasks.get(str(tid), ""))
            if hit is None or (check and list(client.predictions.list(task=int(tid)))):
                continue  # closed meanwhile, or given its prediction already
            items = task_data(hit, layout, hit_rng(seed, str(hit["hit_id"])))["item_ids"]
            body.append({"task": int(tid), **figures.prediction(items, layout)})
            shown[str(tid)] = figures.shown(items)
        post_predictions(client, body)
        if shown:
            with gate if gate is not None else contextlib.nullcontext():
                remember_shown(project, shown)
        return len(body)


@contextlib.contextmanager
def _one_sync_at_a_time(project_path: str) -> Iterator[None]:
    """Serialise :func:`sync_predictions` across processes (``easl ls setup`` beside a running ``easl serve``): two
    delete-then-create passes that interleave would leave a task with two predictions, or none. An advisory lock on
    ``<project>.ls-sync.lock``, released by the kernel if its holder dies."""
    with open(f"{project_path}.ls-sync.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _sync_predictions(
    project: Project,
    client: LabelStudioClient,
    pid: int,
    layout: Layout,
    refresh_backends: bool,
    via_backend: bool,
    gate=None,
) -> int:
    tasks = project.external_map(bk.TASK)  # task id -> HIT id
    if not tasks:
        return 0
    figures = Figures(project)
    shown = shown_items(project, layout)
    body = [{"task": int(tid), **figures.prediction(shown[hid], layout)} for tid, hid in tasks.items() if hid in shown]
    _every_task(client, "delete_tasks_predictions", pid)
    backends = client.ml.list(project=pid) if via_backend else []
    for m in backends if refresh_backends else []:
        client.ml.get(int(m.id))  # Label Studio reads the backend's model version (its /setup)
    if backends:
        _every_task(client, "retrieve_tasks_predictions", pid)
    if not backends or int(client.projects.get(pid).total_predictions_number or 0) < len(body):
        # no backend, or it could not answer (not running, refused): one by one
        _every_task(client, "delete_tasks_predictions", pid)
        post_predictions(client, body)
    with gate if gate is not None else contextlib.nullcontext():
        remember_shown(project, {tid: figures.shown(shown[hid]) for tid, hid in tasks.items() if hid in shown})
    # the Data Manager's "Prediction score" averages the predictions of the current model version: the project's,
    # or its ML backends' (which Label Studio reads from /setup when it looks at a backend). The queue's top-ups
    # start iterations while the backend answers: its predictions may carry a later iteration than these figures
    from easl_toolkit.easl_plugin.client import LabelStudioError

    later = model_version(project.iteration())
    try:
        set_model_version(client, pid, figures.version, wait_s=0.0 if later != figures.version else 10.0)
    except LabelStudioError:
        if later == figures.version:
            raise
        set_model_version(client, pid, later)
    return len(body)


def _every_task(client: LabelStudioClient, action: str, pid: int) -> None:
    """Run a Data Manager action on every task of the project."""
    client.actions.create(id=action, project=pid, selected_items={"all": True, "excluded": []})


def post_predictions(client: LabelStudioClient, body: list[dict[str, Any]]) -> None:
    """Create predictions one by one (``POST /api/predictions``: not checked against the label config)."""
    for b in body:
        client.predictions.create(**b)


def remember_shown(project: Project, shown: dict[str, dict[str, float]]) -> None:
    """Add, for each task id of ``shown``, the estimates its prediction now shows (item id -> value) with the time
    (``core.store.now``) to ``ls.predictions_shown``: the last :data:`SHOWN_KEPT` per task, a new entry only when
    the figures changed."""
    raw = project.get_meta(bk.KEY_PREDICTIONS_SHOWN)
    kept: dict[str, list] = json.loads(raw) if raw else {}
    at = now()
    for tid, values in shown.items():
        past = kept.get(tid) or []
        if not past or past[-1][1] != values:
            kept[tid] = [*past, [at, values]][-SHOWN_KEPT:]
    project.set_meta({bk.KEY_PREDICTIONS_SHOWN: json.dumps(kept, sort_keys=True)})


def repeated_predictions(project: Project) -> list[dict[str, Any]]:
    """Annotations whose every score equals (within :data:`REPEAT_TOLERANCE`) what a prediction of their task
    showed before the annotation reached the project: ``{"annotation_id", "task_id", "hit_id", "annotator",
    "prediction_at"}`` each. Such an annotation may have been copied from the estimates (a pre-filled slider
    submitted as it was, or a value read in the Data Manager) rather than judged."""
    raw = project.get_meta(bk.KEY_PREDICTIONS_SHOWN)
    if not raw:
        return []
    kept: dict[str, list] = json.loads(raw)
    tasks = project.external_map(bk.ANNOTATION)  # annotation id -> task id
    r = project.ratings()
    r = r[r["annotation_id"].notna()]
    out = []
    for aid, rows in r.groupby(r["annotation_id"].astype(str), sort=False):
        tid = tasks.get(aid)
        made = str(rows["created_at"].min())
        scores = dict(zip(rows["item_id"].astype(str), rows["score"].astype(float)))
        for at, values in kept.get(str(tid), []) if tid is not None else []:
            if at < made and scores.keys() <= values.keys() and _repeats(scores, values):
                annotator = rows["annotator"].iloc[0]
                out.append(
                    {
                        "annotation_id": aid,
                        "task_id": tid,
                        "hit_id": str(rows["hit_id"].iloc[0]),
                        "annotator": None if annotator is None else str(annotator),
                        "prediction_at": at,
                    }
                )
                break
    return out


def _repeats(scores: dict[str, float], values: dict[str, float]) -> bool:
    return all(abs(s - values[i]) <= REPEAT_TOLERANCE for i, s in scores.items())


def set_model_version(client: LabelStudioClient, pid: int, version: str, *, wait_s: float = 10.0) -> None:
    """Make ``version`` the project's model version, if it is not already. Label Studio accepts a version only
    once it exists as a live model (an ML backend's) or as imported predictions; the predictions just imported may
    not be visible yet on a loaded server (seen in CI: "Model version doesn't exist either as live model or as
    static predictions" right after the import), so that refusal is retried for up to ``wait_s`` seconds."""
    from easl_toolkit.easl_plugin.client import LabelStudioError

    if client.projects.get(pid).model_version == version:
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            client.projects.update(pid, model_version=version)
            return
        except LabelStudioError as exc:
            if "Model version" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def arrange_tabs(client: LabelStudioClient, pid: int) -> int:
    """Make the project's Data Manager tabs as the module docstring says: :data:`INTERNAL_FIELDS` hidden in
    every tab, :data:`ANNOTATOR_HIDDEN` in every tab but :data:`ESTIMATES_TAB`; creates the first tab ("Tasks",
    which the Data Manager opens with) when there is none and the estimates tab (last) when it is missing. Returns
    how many tabs were created or changed."""
    internal = [f"tasks:data.{f}" for f in INTERNAL_FIELDS]
    private = internal + [f"tasks:{c}" for c in ANNOTATOR_HIDDEN]
    views = [{"id": v.id, "data": v.data} for v in client.views.list(project=pid)]
    changed = 0
    if not views:
        views = [_new_tab(client, pid, "Tasks", private)]
        changed += 1
    for v in views:
        data: dict[str, Any] = dict(v.get("data") or {})
        wanted = internal if data.get("title") == ESTIMATES_TAB else private
        hidden: dict[str, Any] = dict(data.get("hiddenColumns") or {})
        if data.get("title") == ESTIMATES_TAB:  # the estimates shown, whatever was hidden there before
            hidden = {k: [c for c in hidden.get(k) or [] if c not in private or c in internal] for k in hidden}
        new = {k: sorted(set(hidden.get(k) or []) | set(wanted)) for k in ("explore", "labeling")}
        if new == {k: sorted((v.get("data") or {}).get("hiddenColumns", {}).get(k) or []) for k in new}:
            continue
        data["hiddenColumns"] = {**hidden, **new}
        client.views.update(str(v["id"]), project=pid, data=data)
        changed += 1
    if not any((v.get("data") or {}).get("title") == ESTIMATES_TAB for v in views):
        _new_tab(client, pid, ESTIMATES_TAB, internal)
        changed += 1
    return changed


def _new_tab(client: LabelStudioClient, pid: int, title: str, hidden: list[str]) -> dict:
    data = {"title": title, "hiddenColumns": {"explore": hidden, "labeling": hidden}}
    v = client.views.create(project=pid, data=data)
    return {"id": v.id, "data": v.data}


def close_tasks(client: LabelStudioClient, task_ids: Iterable[int]) -> list[int]:
    """Close stale tasks: ``overlap`` 0, so Label Studio counts each as labelled and offers it to nobody; an
    annotation posted on one later is still accepted (and applied). Returns the ids closed."""
    done = []
    for tid in task_ids:
        client.tasks.update(str(int(tid)), overlap=0, is_labeled=True)
        done.append(int(tid))
    return done


def _stamp(x: dict) -> str:
    return str(x.get("updated_at") or x.get("created_at") or "")


def seconds_since(stamp: object, now: float) -> float | None:
    """Seconds from a Label Studio (or ``core.store.now``) ISO time stamp to ``now`` (``time.time()``); None when
    the stamp cannot be read. The one clock of ``--hit-timeout`` and of ``easl ls status``'s "idle"."""
    from datetime import datetime

    try:
        return now - datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def last_activity(task: dict) -> str | None:
    """When an annotator was last seen working on a task, as far as Label Studio shows: the newest of its drafts'
    and annotations' saves (ISO time stamp, as Label Studio lists it); None when it has neither. Label Studio shows
    no task locks, so a task nobody changed anything on has no activity: its idle clock starts at the first draft,
    never at its creation."""
    marks = [_stamp(d) for d in task.get("drafts") or [] if isinstance(d, dict)]
    marks += [_stamp(a) for a in task.get("annotations") or [] if isinstance(a, dict)]
    marks = [m for m in marks if m]
    return max(marks, key=lambda m: -(seconds_since(m, 0.0) or float("inf"))) if marks else None  # the latest


def touched(task: dict) -> bool:
    """Whether anybody worked on a task, as far as Label Studio shows: it has a draft or an annotation."""
    return any(isinstance(x, dict) for x in (task.get("drafts") or []) + (task.get("annotations") or []))


def task_holders(tasks: list[dict], people: dict[str, str]) -> dict[str, dict[str, str]]:
    """Task id -> ``{"created_at"}`` (when the task was created or re-issued), plus ``"active_at"``
    (:func:`last_activity`) and ``"annotator", "how", "at"`` when the task has a draft or an annotation: the user
    of the newest one, as listed by Label Studio's export (``tasks``, drafts included); ``people`` maps Label
    Studio user ids to e-mails."""
    out: dict[str, dict[str, str]] = {}
    for t in tasks:
        marks = []
        for d in t.get("drafts") or []:
            if isinstance(d, dict) and d.get("user"):
                marks.append((_stamp(d), people.get(str(d["user"]), str(d["user"])), "draft"))
        for a in t.get("annotations") or []:
            if isinstance(a, dict) and a.get("completed_by") is not None:
                who = a["completed_by"]
                who = who.get("email") or who.get("id") if isinstance(who, dict) else who
                how = "skipped" if a.get("was_cancelled") else "annotation"
                marks.append((_stamp(a), people.get(str(who), str(who)), how))
        row = {"created_at": str(t.get("created_at") or "")}
        active = last_activity(t)
        if active is not None:
            row["active_at"] = active
        if marks:
            at, who, how = max(marks)
            row.update({"annotator": who, "how": how, "at": at})
        out[str(t["id"])] = row
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
