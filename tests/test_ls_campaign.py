"""The campaign inside a real Label Studio (predictions and columns, the aware project's Label Studio surfaces, bursts).

One Label Studio server for the module (tests/ls_server.py). `easl serve` and `easl ls setup` run as
subprocesses; annotators are real users of the organisation posting through Label Studio's API, so Label Studio
itself delivers the webhooks and calls the ML backend.

- predictions: every task carries the current estimates and 95% intervals (model version = iteration) as one
  text bound to no control (it pre-fills no slider), kept out of the labelling stream; they are replaced when
  the next iteration starts, and "Retrieve Predictions" (the Data Manager action) fetches the same figures from
  the backend's /predict; an annotation that sends the prediction back is flagged by `easl ls status`;
- the Data Manager's tabs hide the internal task fields, and all but the project manager's tab hide the
  estimates and the annotations' results;
- `easl ls status` names the annotator of an open HIT once Label Studio lists a draft of theirs;
- `easl ls setup --stop-at` sets an aware project's stop target and refuses other methods, before touching
  Label Studio;
- a burst of 30 concurrent annotation submissions through Label Studio loses nothing and doubles nothing, and
  `easl ls status` shows the same annotator diagnostics as `easl status --annotators`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import requests

from easl_toolkit.core.store import Project
from easl_toolkit.core.store.inputs import read_design
from tests.ls_helpers import (
    Backend,
    drained,
    easl,
    expected_live,
    live_by_annotation,
    ls_tasks,
    project_status,
    slider_result,
)
from tests.ls_server import create_annotator, free_port, module_sdk, module_server, wait_for  # noqa: F401

pytestmark = pytest.mark.labelstudio

HIT_SIZE = 5
INTERNAL = {"tasks:data.hit_id", "tasks:data.permutation", "tasks:data.item_ids"}
PRIVATE = {"tasks:predictions_results", "tasks:predictions_score", "tasks:predictions_model_versions"}
PRIVATE |= {"tasks:annotations_results"}  # the estimates and other annotators' scores
CONTROLS = {f"score_{j}" for j in range(HIT_SIZE)}


@pytest.fixture(scope="module")
def people(ls):
    return [create_annotator(ls, f"rater{k}@example.com", f"pw-rater-{k}-{ls.token[:8]}") for k in range(3)]


def api(ls, method: str, path: str, token: str | None = None, **kw) -> requests.Response:
    r = requests.request(
        method, f"{ls.url}{path}", headers={"Authorization": f"Token {token or ls.token}"}, timeout=60, **kw
    )
    assert r.status_code < 400, f"{method} {path}: HTTP {r.status_code} {r.text[:300]}"
    return r


def new_project(tmp: Path, name: str, n_items: int, *init_args: str, env: dict) -> Path:
    items = tmp / f"{name}.csv"
    items.write_text("id,text\n" + "".join(f"item{i:03d},statement {i}\n" for i in range(n_items)))
    project = tmp / f"{name}.easl"
    easl("init", str(project), "--items", str(items), "--hit-size", str(HIT_SIZE), "--seed", "3", *init_args, env=env)
    return project


def setup(project: Path, ls, backend: Backend, *extra: str, env: dict, check: bool = True):
    args = ("ls", "setup", str(project), "--url", ls.url, "--backend-url", backend.url, "--json", *extra)
    return easl(*args, env=env, check=check)


def estimates(path: Path) -> dict[str, tuple[float, float, float]]:
    with Project.open(path, readonly=True) as p:
        e = p.estimates()
    return {
        str(i): (float(a), float(lo), float(hi)) for i, a, lo, hi in zip(e.item_id, e.estimate, e.ci_low, e.ci_high)
    }


def predictions_match(ls, pid: int, path: Path, version: str) -> bool:
    """Every task has exactly one prediction, of ``version``, carrying the project's current figures as one text
    bound to no control (a line per item, in the order shown)."""
    figures = estimates(path)
    for t in api(ls, "GET", "/api/tasks", params={"project": pid, "fields": "all", "page_size": 500}).json()["tasks"]:
        preds = t.get("predictions") or []
        if len(preds) != 1 or preds[0]["model_version"] != version:
            return False
        if t["predictions_score"] != pytest.approx(preds[0]["score"]):  # the Data Manager's column
            return False
        (result,) = preds[0]["result"]
        if result["from_name"] != "easl_estimates" or result["from_name"] in CONTROLS:
            return False
        want = []
        for item in t["data"]["item_ids"]:
            est, lo, hi = (round(x, 1) for x in figures[item])
            want.append(f"{item}: {est} [{lo}, {hi}], ")
        got = result["value"]["text"]
        if len(got) != len(want) or not all(g.startswith(w) for g, w in zip(got, want)):
            return False
    return True


def shown_values(ls, task: dict) -> list[float]:
    """The estimates a task's prediction shows, in the order its items are shown."""
    (pred,) = api(ls, "GET", f"/api/tasks/{task['id']}").json()["predictions"]
    return [float(line.split(": ", 1)[1].split(" ", 1)[0]) for line in pred["result"][0]["value"]["text"]]


def test_predictions_columns_holders_and_stop_at_refusal(ls, sdk, people, tmp_path):
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    # the paper's EASL on purpose: --stop-at and the annotator diagnostics are refused for it
    project = new_project(tmp_path, "pred", 20, "--method", "easl", "--question", "How true?", env=env)
    # the paper's batches (--queue-depth 0), so that the next iteration below is whole
    backend = Backend(project, free_port(), env, tmp_path / "serve.log", "--queue-depth", "0")
    backend.start()
    try:
        # --stop-at does not apply to the method easl: refused with the reason, before Label Studio is touched
        n_projects = len(api(ls, "GET", "/api/projects").json()["results"])
        refused = setup(project, ls, backend, "--stop-at", "0.9", env=env, check=False)
        assert refused.returncode == 1 and "--stop-at 0.9 is refused: it needs the method aware" in refused.stderr
        assert len(api(ls, "GET", "/api/projects").json()["results"]) == n_projects
        info = json.loads(setup(project, ls, backend, env=env).stdout)
        pid = info["ls_project_id"]
        assert info["connection"] == "ml-backend" and info["stop_at"] is None
        # the Data Manager's tabs hide the internal fields, in the table and beside the labelling stream; the
        # first tab (where the Data Manager opens) hides the estimates and annotation results too, the last one
        # shows them to the project manager
        views = api(ls, "GET", "/api/dm/views", params={"project": pid}).json()
        assert [v["data"]["title"] for v in views] == ["Tasks", "Estimates (project manager)"]
        for v, hidden in zip(views, (INTERNAL | PRIVATE, INTERNAL)):
            assert all(set(v["data"]["hiddenColumns"][k]) == hidden for k in ("explore", "labeling"))
        # every task carries iteration 0's figures (the prior: every item at the same estimate)
        # (the running backend replaces them once more as soon as the setup has linked the project)
        wait_for(lambda: predictions_match(ls, pid, project, "iteration-0"), "iteration 0's predictions", 30)
        # ... hidden from annotators: the labelling stream gives them the task without predictions
        nxt = api(ls, "GET", f"/api/projects/{pid}/next", token=people[0].token).json()
        assert nxt["id"] and nxt.get("predictions") == []
        # an annotator starts on a task: Label Studio keeps their draft, and `easl ls status` names them
        held = nxt["id"]
        api(ls, "POST", f"/api/tasks/{held}/drafts", token=people[0].token, json={"result": [], "lead_time": 2})

        def holders():
            out = json.loads(easl("ls", "status", str(project), "--json", env=env).stdout)
            by_task = {h["task_id"]: h for h in out["open_hits"]}
            return by_task if by_task[held]["annotator"] == people[0].email else None

        by_task = wait_for(holders, "the draft's annotator in easl ls status", 30)
        plain = json.loads(easl("ls", "status", str(project), "--json", env=env).stdout)
        assert plain["annotators"] is None and plain["stop"] is None and "aware" in plain["annotators_reason"]
        assert by_task[held]["annotator_source"].startswith("draft at ")
        others = [h for t, h in by_task.items() if t != held]
        assert others and all(h["annotator"] is None and "task locks" in h["annotator_reason"] for h in others)
        # the next iteration: every task's prediction is replaced by the new figures
        rng = np.random.default_rng(4)
        copied = None
        for k, t in enumerate(ls_tasks(sdk, pid)):
            who = people[k % len(people)]
            result = slider_result(t.data["item_ids"], rng)
            if k == 1:  # one annotator sends back the estimates the task's prediction shows
                for r, value in zip(result, shown_values(ls, {"id": t.id})):
                    r["value"]["number"] = value
            a = api(ls, "POST", f"/api/tasks/{t.id}/annotations", token=who.token, json={"result": result}).json()
            copied = a["id"] if k == 1 else copied
        wait_for(lambda: project_status(project)["iteration"] == 1 and len(ls_tasks(sdk, pid)) == 8, "iteration 1")
        wait_for(lambda: predictions_match(ls, pid, project, "iteration-1"), "iteration 1's predictions", 30)
        first = estimates(project)
        assert len({round(v[0], 1) for v in first.values()}) > 1  # the figures moved with the scores
        # `easl ls status` flags the annotation that repeats its task's prediction, and no other
        link = json.loads(easl("ls", "status", str(project), "--json", env=env).stdout)
        assert [r["annotation_id"] for r in link["repeated_predictions"]] == [str(copied)]
        text = easl("ls", "status", str(project), env={**env, "COLUMNS": "200"}).stdout
        assert "annotations equal to a prediction their task carried: 1" in text
        # "Retrieve Predictions" in the Data Manager: Label Studio asks the backend's /predict for the figures
        every = {"selectedItems": {"all": True, "excluded": []}}
        api(ls, "POST", "/api/dm/actions", params={"id": "delete_tasks_predictions", "project": pid}, json=every)
        assert all(not t.predictions for t in ls_tasks(sdk, pid))
        api(ls, "POST", "/api/dm/actions", params={"id": "retrieve_tasks_predictions", "project": pid}, json=every)
        assert predictions_match(ls, pid, project, "iteration-1")
        (ml,) = sdk.ml.list(project=pid)
        assert ml.model_version == "iteration-1"
    finally:
        backend.stop()


def test_burst_of_concurrent_annotations_loses_and_doubles_nothing(ls, sdk, people, tmp_path):
    """With a real Label Studio: 30 annotators' submissions at once (each one a webhook Label
    Studio posts inside the submit request, 1 s timeout, no retry), then 10 concurrent updates. Every
    annotation Label Studio holds is in the project exactly once, acknowledged or reconciled. The project is
    aware, so this is also where `easl ls setup --stop-at` and `easl ls status`'s annotators are checked."""
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    project = new_project(tmp_path, "burst", 150, "--method", "aware", env=env)
    backend = Backend(project, free_port(), env, tmp_path / "serve.log")
    backend.start()
    try:
        info = json.loads(setup(project, ls, backend, "--stop-at", "0.8", "--connect", "webhook", env=env).stdout)
        pid = info["ls_project_id"]
        assert info["stop_at"] == 0.8
        with Project.open(project, readonly=True) as p:
            assert p.hyper.stop_at == 0.8 and p.status().stop["target"] == 0.8
        tasks = ls_tasks(sdk, pid)
        assert len(tasks) == 30
        rng = np.random.default_rng(13)
        bodies = [(t.id, slider_result(t.data["item_ids"], rng), people[k % 3]) for k, t in enumerate(tasks)]

        def submit(job):
            """One annotator's submit. Label Studio's server (Django's, a listen backlog of 10) may drop a
            connection under the burst: the annotator then looks whether the submission arrived, and submits
            again only if it did not (as a person would after an error)."""
            tid, result, who = job
            for _ in range(5):
                try:
                    return api(ls, "POST", f"/api/tasks/{tid}/annotations", token=who.token, json={"result": result})
                except requests.ConnectionError:
                    mine = [
                        a
                        for a in api(ls, "GET", f"/api/tasks/{tid}/annotations", token=who.token).json()
                        if a["completed_by"] == who.user_id
                    ]
                    if mine:
                        return mine[0]
            raise AssertionError(f"task {tid}: Label Studio refused five submissions")

        with ThreadPoolExecutor(30) as pool:
            created = [a if isinstance(a, dict) else a.json() for a in pool.map(submit, bodies)]
        assert len({a["id"] for a in created}) == 30

        def update(a):
            tid = a["task"]
            item_ids = next(t.data["item_ids"] for t in tasks if t.id == tid)
            who = next(p for p in people if p.user_id == a["completed_by"])
            new = slider_result(item_ids, np.random.default_rng(a["id"]))
            api(ls, "PATCH", f"/api/annotations/{a['id']}", token=who.token, json={"result": new})

        with ThreadPoolExecutor(10) as pool:  # within Label Studio's backlog
            list(pool.map(update, created[:10]))

        def settled():
            return drained(project) and live_by_annotation(project) == expected_live(sdk, pid)

        wait_for(settled, "every annotation in the project", 90)
        want = expected_live(sdk, pid)
        # every submission an annotator saw accepted is in the project; Label Studio may hold a few more (a
        # submission whose connection it dropped after storing it, then made again): those count too
        assert {str(a["id"]) for a in created} <= set(want)
        with Project.open(project, readonly=True) as p:
            r = p.ratings()
            events = p.events("done") + p.events("pending")
        # nothing doubled: one live score per (annotation, item), as many as Label Studio holds
        assert len(r) == sum(len(v) for v in want.values()) == len(want) * HIT_SIZE
        assert not r.duplicated(["annotation_id", "item_id"]).any()
        assert set(r["annotation_id"].astype(str)) == set(want)
        acknowledged = {json.loads(e.payload)["annotation"]["id"] for e in events if e.kind == "ANNOTATION_CREATED"}
        print(
            f"burst: Label Studio holds {len(want)} annotations of 30 submissions; {len(acknowledged)} of them "
            "acknowledged by webhook, the rest reconciled"
        )
        assert easl("verify", str(project)).stdout.startswith("ok")
        # the annotator diagnostics of the aware fit, as `easl status --annotators` shows them
        link = json.loads(easl("ls", "status", str(project), "--json", env=env).stdout)
        plain = json.loads(easl("status", str(project), "--annotators", "--json", env=env).stdout)
        assert link["annotators"] == plain["annotators"]
        assert {a["annotator"] for a in link["annotators"]} == {p.email for p in people}
        assert link["stop"]["target"] == 0.8
        text = easl("ls", "status", str(project), env={**env, "COLUMNS": "200"}).stdout
        assert "rater0@example.com" in text and "stop target 0.8" in text
    finally:
        backend.stop()


def test_an_evaluation_campaign_runs_in_label_studio_without_showing_system_scores(ls, sdk, people, tmp_path):
    """An evaluation campaign (`easl init --systems`) served to Label Studio: the tasks carry no system score (in
    their data or anywhere an annotator sees), annotations come in through Label Studio's webhooks, no top-up mixes
    into an iteration (each iteration is drawn whole, with its design recorded), the next iteration is pushed once
    one is complete, and `easl ls status` shows the campaign's metrics."""
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    n = 40
    truth = np.linspace(0, 100, n)
    items = tmp_path / "responses.csv"
    system = np.round(truth + np.random.default_rng(1).normal(0, 10, n), 2)
    items.write_text("id,text,scorer\n" + "".join(f"item{i:03d},response {i},{system[i]}\n" for i in range(n)))
    project = tmp_path / "eval.easl"
    easl("init", str(project), "--items", str(items), "--systems", "scorer", "--hit-size", str(HIT_SIZE),
         "--hits-per-iteration", "3", "--seed", "3", "--question", "How good?", env=env)  # fmt: skip
    backend = Backend(project, free_port(), env, tmp_path / "serve.log")
    backend.start()
    try:
        pid = json.loads(setup(project, ls, backend, env=env).stdout)["ls_project_id"]
        rng = np.random.default_rng(5)
        for iteration in range(2):
            with Project.open(project, readonly=True) as p:
                open_ids = {h["hit_id"] for h in p.open_hits(every_iteration=True)}
                assert open_ids and {h["iteration"] for h in p.open_hits(every_iteration=True)} == {iteration}

            def imported(want=open_ids):  # the backend imports an iteration's tasks right after it starts
                tasks = ls_tasks(sdk, pid)
                return tasks if want <= {t.data["hit_id"] for t in tasks} else None

            tasks = wait_for(imported, f"iteration {iteration}'s tasks in Label Studio", 60)
            pending = [t for t in tasks if t.data["hit_id"] in open_ids]
            for t in tasks:  # the system's scores are nowhere in a task
                assert "scorer" not in t.data and not any(str(s) in json.dumps(t.data) for s in system[:3])
            for k, t in enumerate(pending):
                ids = t.data["item_ids"]
                result = [
                    {"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number",
                     "value": {"number": float(np.clip(round(truth[int(i[4:])] + rng.normal(0, 8)), 0, 100))}}
                    for j, i in enumerate(ids)
                ]  # fmt: skip
                api(ls, "POST", f"/api/tasks/{t.id}/annotations", token=people[k % 3].token, json={"result": result})
            wait_for(lambda it=iteration: project_status(project)["iteration"] == it + 1, f"iteration {iteration + 1}")
        with sqlite3.connect(project) as conn:  # each iteration was drawn with recorded probabilities
            assert all(read_design(conn, it)["p_first"].size == n for it in (0, 1, 2))
        status = project_status(project)
        assert status["method"] == "campaign" and "scorer" in status["stop"]["systems"]
        shown = easl("ls", "status", str(project), env={**env, "COLUMNS": "200"}).stdout
        assert "estimates with 95% intervals" in shown and "scorer" in shown
    finally:
        backend.stop()
