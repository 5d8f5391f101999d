"""The Label Studio plugin against a real Label Studio server (installed and started by tests/ls_server.py).

One server for the whole module (about 30 s to start on a fresh data directory). `easl ls setup` and `easl serve`
run as subprocesses; simulated annotators post annotations through the official SDK, so Label Studio itself
delivers the webhooks to the backend.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import requests

from tests.ls_helpers import (
    REPO,
    Backend,
    drained,
    easl,
    expected_live,
    live_by_annotation,
    ls_tasks,
    project_status,
    slider_result,
)
from tests.ls_server import (  # noqa: F401 (module_server, module_sdk: the fixtures ls and sdk)
    Annotator,
    create_annotator,
    free_port,
    module_sdk,
    module_server,
    wait_for,
)

pytestmark = pytest.mark.labelstudio

N_ITEMS, HIT_SIZE = 30, 5  # 6 HITs per iteration
N_ANNOTATORS = 3
WAIT_S = 60.0


@pytest.fixture(scope="module")
def annotators(ls) -> list[tuple[Annotator, object]]:
    """Distinct Label Studio users of the admin's organisation, each with an SDK client holding its own token."""
    from label_studio_sdk import LabelStudio

    people = [
        create_annotator(ls, f"annotator{k}@example.com", f"pw-annotator-{k}-{ls.token[:8]}")
        for k in range(N_ANNOTATORS)
    ]
    assert len({a.user_id for a in people}) == N_ANNOTATORS and all(a.token != ls.token for a in people)
    return [(a, LabelStudio(base_url=ls.url, api_key=a.token)) for a in people]


@pytest.fixture(scope="module")
def loop(ls, sdk, tmp_path_factory):
    """A project in the loop: serve started first, then `easl ls setup` connects it as ML backend."""
    tmp = tmp_path_factory.mktemp("lsloop")
    items = tmp / "items.csv"
    with open(items, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text"])
        for i in range(N_ITEMS):
            w.writerow([f"item{i:02d}", f"statement number {i}"])
    project = tmp / "p.easl"
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token, "EASL_WEBHOOK_SECRET": "s3cret-shared"}
    easl("init", str(project), "--items", str(items), "--hit-size", str(HIT_SIZE), "--seed", "7", env=env)
    # the paper's batches (no queue top-ups), so that the iterations below are whole; the kill -9 test restarts
    # the backend with the default queue
    backend = Backend(project, free_port(), env, tmp / "serve.log", "--queue-depth", "0")
    backend.start()
    try:
        out = easl(
            "ls",
            "setup",
            str(project),
            "--url",
            ls.url,
            "--title",
            "EASL test loop",
            "--backend-url",
            backend.url,
            "--json",
            env=env,
        )
        info = json.loads(out.stdout)
        yield {
            "project": project,
            "backend": backend,
            "pid": info["ls_project_id"],
            "setup": info,
            "env": env,
            "tmp": tmp,
        }
    finally:
        backend.stop()


def annotate_open_tasks(
    sdk,
    pid: int,
    rng: np.random.Generator,
    *,
    limit: int | None = None,
    people: list[tuple[Annotator, object]] | None = None,
    submitted: dict[str, int] | None = None,
) -> int:
    """Annotate the open tasks: as the admin, or in turn as each of ``people`` (an SDK client per user).

    ``submitted`` collects annotation id -> the user id of who posted it.
    """
    n = 0
    for t in ls_tasks(sdk, pid):
        if t.annotations:
            continue
        who, client = people[n % len(people)] if people else (None, sdk)
        a = client.annotations.create(id=t.id, result=slider_result(t.data["item_ids"], rng))
        if who is not None:
            assert a.completed_by == who.user_id
        if submitted is not None:
            submitted[str(a.id)] = int(a.completed_by)
        n += 1
        if limit is not None and n >= limit:
            break
    return n


def engine_hits(path: Path) -> dict[str, tuple[str, frozenset]]:
    from easl_toolkit.core.store import Project

    with Project.open(path, readonly=True) as p:
        out = {}
        for it in range(p.iteration() + 1):
            for h in p.hits(it):
                out[h["hit_id"]] = (h["status"], frozenset(i["item_id"] for i in h["items"]))
        return out


# --------------------------------------------------------------------------------------------------- client


def test_client_token_kinds(ls):
    from easl_toolkit.easl_plugin.client import LabelStudioClient, LabelStudioError

    legacy = LabelStudioClient(ls.url, ls.token)
    assert legacy.kind == "legacy token" and legacy.users.whoami().email == ls.username
    pat = legacy.tokens.create().token
    client = LabelStudioClient(ls.url, pat)
    assert client.kind == "personal access token" and client.users.whoami().email == ls.username
    assert pat not in repr(client) and ls.token not in repr(legacy)
    with pytest.raises(LabelStudioError, match="personal access token was rejected.*expired, revoked") as e:
        LabelStudioClient(ls.url, pat[:-4] + "AAAA").users.whoami()
    assert pat[:-4] not in str(e.value)
    with pytest.raises(LabelStudioError, match="legacy token was rejected.*shape of a legacy token"):
        LabelStudioClient(ls.url, "0" * 40).users.whoami()
    ttl = client.jwt_settings.get().api_token_ttl_days
    client.jwt_settings.update(api_token_ttl_days=ttl, api_tokens_enabled=True, legacy_api_tokens_enabled=False)
    try:
        with pytest.raises(LabelStudioError, match="legacy token was rejected.*disabled.*personal access token"):
            LabelStudioClient(ls.url, ls.token).users.whoami()
    finally:
        client.jwt_settings.update(api_token_ttl_days=ttl, api_tokens_enabled=True, legacy_api_tokens_enabled=True)
    assert legacy.users.whoami().email == ls.username
    with pytest.raises(LabelStudioError, match="cannot reach Label Studio"):
        LabelStudioClient(f"http://127.0.0.1:{free_port()}", ls.token, timeout=2).users.whoami()


def test_setup_error_names_the_token_kind(ls, tmp_path):
    items = tmp_path / "i.csv"
    items.write_text("id,text\n" + "".join(f"a{i},t{i}\n" for i in range(10)))
    easl("init", str(tmp_path / "q.easl"), "--items", str(items))
    out = easl(
        "ls",
        "setup",
        str(tmp_path / "q.easl"),
        "--url",
        ls.url,
        env={**os.environ, "LABEL_STUDIO_API_KEY": "f" * 40},
        check=False,
    )
    assert out.returncode == 1 and "legacy token was rejected" in out.stderr
    out = easl(
        "ls",
        "setup",
        str(tmp_path / "q.easl"),
        "--url",
        ls.url,
        env={k: v for k, v in os.environ.items() if k != "LABEL_STUDIO_API_KEY"},
        check=False,
    )
    assert out.returncode == 1 and "LABEL_STUDIO_API_KEY" in out.stderr


# ---------------------------------------------------------------------------------------------- the loop


def test_loop_three_iterations(loop, sdk, annotators):
    path, pid = loop["project"], loop["pid"]
    assert loop["setup"]["connection"] == "ml-backend"
    assert loop["setup"]["tasks_imported"] == N_ITEMS // HIT_SIZE
    project = sdk.projects.get(id=pid)
    assert project.show_collab_predictions is False
    rng = np.random.default_rng(11)
    submitted: dict[str, int] = {}  # annotation id -> Label Studio user id of who posted it
    for iteration in range(4):
        wait_for(
            lambda iteration=iteration: (
                project_status(path)["iteration"] == iteration
                and len(ls_tasks(sdk, pid)) == (iteration + 1) * (N_ITEMS // HIT_SIZE)
            ),
            f"iteration {iteration} pushed",
        )
        assert annotate_open_tasks(sdk, pid, rng, people=annotators, submitted=submitted) == N_ITEMS // HIT_SIZE
    wait_for(lambda: project_status(path)["iteration"] == 4 and drained(path), "iteration 4 started")
    status = project_status(path)
    assert status["n_observations"] == 4 * N_ITEMS
    assert status["events"]["failed"] == 0
    # the tasks in Label Studio are exactly the HITs the engine selected, item for item
    tasks = wait_for(lambda: (t := ls_tasks(sdk, pid)) and len(t) == 5 * (N_ITEMS // HIT_SIZE) and t, "push 4")
    ls_hits = {t.data["hit_id"]: frozenset(t.data["item_ids"]) for t in tasks}
    assert len(ls_hits) == len(tasks)
    assert ls_hits == {h: items for h, (_, items) in engine_hits(path).items()}
    for t in tasks:  # shown order = HIT order permuted
        assert sorted(t.data["permutation"]) == list(range(HIT_SIZE))
    assert live_by_annotation(path) == expected_live(sdk, pid)
    # every rating carries the id of the Label Studio user who submitted its HIT
    from easl_toolkit.core.store import Project

    with Project.open(path, readonly=True) as p:
        r = p.ratings()
    by_annotation = {str(a): set() for a in r["annotation_id"]}
    for a, who in zip(r["annotation_id"], r["annotator"]):
        by_annotation[str(a)].add(who)
    email = {a.user_id: a.email for a, _ in annotators}  # annotators are recorded by e-mail
    assert by_annotation == {a: {email[uid]} for a, uid in submitted.items()}
    assert set(r["annotator"]) == {a.email for a, _ in annotators}
    assert sdk.users.whoami().email not in set(r["annotator"])
    out = easl("verify", str(path))
    assert out.stdout.startswith("ok")
    # our own TASKS_CREATED never entered the queue (no feedback loop)
    import sqlite3

    with sqlite3.connect(path) as c:
        kinds = {k for (k,) in c.execute("SELECT DISTINCT kind FROM events")}
    assert kinds == {"ANNOTATION_CREATED"}


def _webhook_payload(sdk, task_id: int, pid: int) -> dict:
    t = sdk.tasks.get(id=task_id)
    a = t.annotations[0]
    a = a if isinstance(a, dict) else a.dict()
    return {
        "action": "ANNOTATION_CREATED",
        "annotation": a,
        "task": {"id": t.id, "data": t.data},
        "project": {"id": pid},
    }


def test_protocol_errors_and_duplicates(loop, sdk):
    path, pid, backend = loop["project"], loop["pid"], loop["backend"]
    hook = f"{backend.url}/webhook"
    secret = {"X-EASL-Secret": loop["env"]["EASL_WEBHOOK_SECRET"]}
    r = requests.post(hook, data=b'{"action": "ANNOTATION_CREATED", ', headers=secret, timeout=5)
    assert r.status_code == 400 and "malformed JSON" in r.json()["error"]
    r = requests.post(hook, json={"action": "ANNOTATION_CREATED"}, headers=secret, timeout=5)
    assert r.status_code == 400 and "'annotation' must be an object" in r.json()["error"]
    r = requests.post(hook, json={"action": "ANNOTATION_CREATED"}, timeout=5)
    assert r.status_code == 401
    r = requests.post(hook, json={"action": "TASKS_CREATED", "tasks": [{"id": 1}]}, headers=secret, timeout=5)
    assert r.status_code == 200 and r.json()["status"] == "ignored"
    assert requests.post(f"{backend.url}/predict", json={"tasks": []}, timeout=5).json()["results"] == []
    assert "versions" in requests.get(f"{backend.url}/versions", timeout=5).json()
    # duplicate deliveries of an annotation already applied change nothing
    annotated = [t for t in ls_tasks(sdk, pid) if t.annotations]
    before = project_status(path)["n_observations"]
    payload = _webhook_payload(sdk, annotated[0].id, pid)
    for _ in range(3):
        r = requests.post(hook, json=payload, headers=secret, timeout=5)
        assert r.status_code == 200 and r.json()["status"] == "queued"
    wait_for(lambda: drained(loop["project"]), "queue drained")
    assert project_status(path)["n_observations"] == before
    assert live_by_annotation(path) == expected_live(sdk, pid)


def test_updates_skips_rejects_deletions(loop, sdk):
    path, pid = loop["project"], loop["pid"]
    rng = np.random.default_rng(5)
    wait_for(lambda: drained(path), "queue drained")
    open_tasks = wait_for(lambda: [t for t in ls_tasks(sdk, pid) if not t.annotations], "open tasks")
    t_skip, t_range, t_unknown, t_del_task = open_tasks[:4]
    before = project_status(path)
    # a skipped task changes nothing
    sdk.annotations.create(id=t_skip.id, result=[], was_cancelled=True)
    # out of range and unknown control: rejected with reasons, nothing ingested
    bad = slider_result(t_range.data["item_ids"], rng)
    bad[2]["value"]["number"] = 150.0
    a_range = sdk.annotations.create(id=t_range.id, result=bad)
    bad2 = slider_result(t_unknown.data["item_ids"], rng)
    bad2[0]["from_name"] = "mystery"
    sdk.annotations.create(id=t_unknown.id, result=bad2)
    wait_for(lambda: project_status(path)["n_rejects"] >= before["n_rejects"] + 2 and drained(path), "rejects")
    from easl_toolkit.core.store import Project

    with Project.open(path, readonly=True) as p:
        reasons = [r.reason for r in p.rejects()[0]]
    assert any("score 150 is outside [0, 100]" in r for r in reasons)
    assert any("unknown control 'mystery'" in r for r in reasons)
    assert project_status(path)["n_observations"] == before["n_observations"]
    # the out-of-range annotation corrected: it is accepted
    sdk.annotations.update(id=a_range.id, result=slider_result(t_range.data["item_ids"], rng))
    wait_for(lambda: str(a_range.id) in live_by_annotation(path), "update accepted")
    # an update supersedes: same number of observations, new scores
    done = [
        t
        for t in ls_tasks(sdk, pid)
        if t.annotations and not t.annotations[0].get("was_cancelled") and t.id != t_range.id and t.id != t_unknown.id
    ]
    upd = done[0].annotations[0]
    new = slider_result(done[0].data["item_ids"], np.random.default_rng(99))
    n_before = project_status(path)["n_observations"]
    sdk.annotations.update(id=upd["id"], result=new)
    want = {done[0].data["item_ids"][j]: r["value"]["number"] for j, r in enumerate(new)}
    wait_for(lambda: live_by_annotation(path).get(str(upd["id"])) == want, "update applied")
    assert project_status(path)["n_observations"] == n_before
    # deleting an annotation retracts it; deleting a task withdraws its HIT
    victim = done[1].annotations[0]["id"]
    sdk.annotations.delete(id=victim)
    wait_for(lambda: str(victim) not in live_by_annotation(path), "annotation retracted")
    hit_of_deleted = t_del_task.data["hit_id"]
    sdk.tasks.delete(id=str(t_del_task.id))
    wait_for(lambda: engine_hits(path)[hit_of_deleted][0] == "retracted", "HIT withdrawn")
    wait_for(lambda: drained(path), "queue drained")
    assert live_by_annotation(path) == expected_live(sdk, pid)
    assert easl("verify", str(path)).stdout.startswith("ok")


def test_sigkill_mid_stream_loses_nothing(loop, sdk):
    path, pid, backend = loop["project"], loop["pid"], loop["backend"]
    rng = np.random.default_rng(8)
    wait_for(lambda: drained(path), "queue drained")
    # clean up what the previous test left open: annotate the skipped/invalid tasks properly
    for t in ls_tasks(sdk, pid):
        anns = [a for a in t.annotations or [] if not a.get("was_cancelled")]
        if t.annotations and (not anns or str(anns[0]["id"]) not in live_by_annotation(path)):
            if anns:
                sdk.annotations.update(id=anns[0]["id"], result=slider_result(t.data["item_ids"], rng))
            else:
                sdk.annotations.create(id=t.id, result=slider_result(t.data["item_ids"], rng))
    stop = threading.Event()
    errors: list[BaseException] = []

    def annotator():
        try:
            while not stop.is_set():
                if annotate_open_tasks(sdk, pid, rng, limit=1) == 0:
                    time.sleep(0.1)
        except BaseException as exc:  # reported below
            errors.append(exc)

    th = threading.Thread(target=annotator)
    th.start()
    try:
        wait_for(lambda: project_status(path)["n_observations"] >= 5 * N_ITEMS, "annotations flowing")
        worker_pid = requests.get(f"{backend.url}/status", timeout=5).json()["worker_pid"]
        backend.kill()  # SIGKILL while webhooks are arriving
        time.sleep(1.5)  # annotations go on while the backend is down: their webhooks are lost
        wait_for(lambda: not _pid_alive(worker_pid), "the worker process died with the server", 5)
        backend.extra = ()  # restarted with the default queue (its depth measured)
        backend.start()
        start_it = project_status(path)["iteration"]
        wait_for(lambda: project_status(path)["iteration"] >= start_it + 1, "loop continues after restart", 90)
    finally:
        stop.set()
        th.join(60)
    assert not errors, errors

    # reconciliation (on start and every 3 s) applies whatever was missed; nothing lost or counted twice
    def settled():
        return drained(path) and live_by_annotation(path) == expected_live(sdk, pid)

    wait_for(settled, "engine equals Label Studio", 60)
    want = expected_live(sdk, pid)
    assert project_status(path)["n_observations"] == sum(len(v) for v in want.values())

    def every_hit_is_a_task():  # (a top-up records its HITs, then imports them: the two meet within a cycle)
        ls_hits = {t.data["hit_id"] for t in ls_tasks(sdk, pid)}
        return ls_hits == {h for h, (status, _) in engine_hits(path).items() if status != "retracted"}

    wait_for(every_hit_is_a_task, "every HIT of the engine a task in Label Studio", 30)
    ls_hits = {t.data["hit_id"] for t in ls_tasks(sdk, pid)}
    assert easl("verify", str(path)).stdout.startswith("ok")
    out = json.loads(easl("status", str(path), "--json").stdout)
    assert out["last_reconciliation"] is not None and out["events"]["failed"] == 0
    link = json.loads(easl("ls", "status", str(path), "--json").stdout)
    assert link["linked"] and link["ls_project_id"] == pid and link["events"]["pending"] == 0

    def reconciled_all():  # the periodic reconciliation (every 3 s) also saw the tasks pushed last
        from easl_toolkit.core.store import Project
        from easl_toolkit.easl_plugin import bookkeeping as bk

        with Project.open(path, readonly=True) as p:
            report = bk.get_meta(p, bk.KEY_RECONCILIATION_REPORT)
        return report is not None and json.loads(report)["tasks"] >= len(ls_hits)

    wait_for(reconciled_all, "a reconciliation covering every task", 30)
    assert any("score 150 is outside" in r["reason"] for r in link["rejects"])
    text = easl("ls", "status", str(path)).stdout
    assert "rejected annotations: 2" in text and "unknown control 'mystery'" in text


def test_streaming_keeps_n_hits_open_without_shared_items(ls, sdk, tmp_path):
    items = tmp_path / "items.csv"
    items.write_text("id,text\n" + "".join(f"item{i:02d},statement {i}\n" for i in range(N_ITEMS)))
    project = tmp_path / "s.easl"
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    easl("init", str(project), "--items", str(items), "--hit-size", str(HIT_SIZE), "--seed", "3", env=env)
    backend = Backend(project, free_port(), env, tmp_path / "serve.log", "--streaming", "4")
    backend.start()
    try:
        info = json.loads(
            easl(
                "ls",
                "setup",
                str(project),
                "--url",
                ls.url,
                "--title",
                "EASL streaming",
                "--backend-url",
                backend.url,
                "--connect",
                "webhook",
                "--json",
                env=env,
            ).stdout
        )
        assert info["connection"] == "webhook"
        pid = info["ls_project_id"]
        rng = np.random.default_rng(4)
        for _ in range(8):
            annotate_open_tasks(sdk, pid, rng, limit=1)

            def settled():
                if not drained(project):
                    return False
                hits = engine_hits(project)
                open_hits = {h: items for h, (st, items) in hits.items() if st == "open"}
                tasks = ls_tasks(sdk, pid)
                ls_open = {t.data["hit_id"] for t in tasks if not t.annotations}
                return (
                    open_hits
                    if ls_open == set(open_hits) and len(tasks) == len(hits) and len(open_hits) >= 4
                    else False
                )

            open_hits = wait_for(settled, "streaming top-up")
            assert len(open_hits) >= 4
            shown = [i for items in open_hits.values() for i in items]
            assert len(shown) == len(set(shown)), "an item is in two open HITs"
        status = project_status(project)
        assert status["iteration"] >= 2 and status["n_observations"] == 8 * HIT_SIZE
        assert live_by_annotation(project) == expected_live(sdk, pid)
        assert easl("verify", str(project)).stdout.startswith("ok")
    finally:
        backend.stop()


def _webhook_token(path: Path) -> str | None:
    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin import bookkeeping as bk

    with Project.open(path, readonly=True) as p:
        return p.get_meta(bk.KEY_WEBHOOK_TOKEN)


def _healthy(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=1).ok
    except requests.RequestException:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_setup_again_repairs_credentials_wording_and_says_when_the_backend_is_unreachable(ls, sdk, tmp_path):
    """Re-running `easl ls setup` after EASL_BASIC_AUTH is enabled repairs the ML
    backend's credentials and the webhook's headers; it fails with a reason when Label Studio is refused or cannot
    reach the backend; --question changes the label config in place."""
    items = tmp_path / "items.csv"
    items.write_text("id,text\n" + "".join(f"item{i:02d},statement {i}\n" for i in range(10)))
    project = tmp_path / "r.easl"
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    easl("init", str(project), "--items", str(items), "--question", "How true is each statement?", env=env)
    backend = Backend(project, free_port(), env, tmp_path / "serve.log")
    backend.start()
    try:
        args = ("ls", "setup", str(project), "--url", ls.url, "--backend-url", backend.url, "--json")
        info = json.loads(easl(*args, env=env).stdout)
        pid = info["ls_project_id"]
        assert info["connection"] == "ml-backend"
        assert "How true is each statement?" in sdk.projects.get(id=pid).label_config
        backend.stop()
        auth_env = {**env, "EASL_BASIC_AUTH": "pm:pw-basic-auth"}
        backend.env = auth_env
        backend.start()
        refused = easl(*args, env=env, check=False)  # the backend now needs credentials setup lacks
        assert refused.returncode == 1 and "backend" in refused.stderr and "pw-basic-auth" not in refused.stderr
        repaired = json.loads(easl(*args, "--question", "How false is it?", "--low-label", "true", env=auth_env).stdout)
        assert repaired["ls_project_id"] == pid and repaired["connection"] == "ml-backend"
        (ml,) = sdk.ml.list(project=pid)
        assert ml.state == "CO"
        hooks = [w for w in sdk.webhooks.list(project=pid) if w.url.rstrip("/") == f"{backend.url}/webhook"]
        # the webhook carries only the dedicated token (item 7): never the basic-auth pair nor the API key
        token = json.loads(easl("ls", "status", str(project), "--json").stdout) and _webhook_token(project)
        assert hooks and all((w.headers or {}) == {"X-EASL-Secret": token} for w in hooks)
        rotated = easl(*args, "--rotate-secret", env=auth_env)
        assert rotated.returncode == 0 and _webhook_token(project) != token
        assert all(
            (w.headers or {}) == {"X-EASL-Secret": _webhook_token(project)}
            for w in sdk.webhooks.list(project=pid)
            if w.url.rstrip("/") == f"{backend.url}/webhook"
        )
        config = sdk.projects.get(id=pid).label_config
        assert "How false is it?" in config and "0 = true" in config
        backend.stop()
        gone = easl(*args, env=auth_env, check=False)
        assert gone.returncode == 1 and "cannot reach" in gone.stderr, gone.stderr
    finally:
        backend.stop()


def _easl_hooks(sdk, pid: int) -> list:
    """The project's webhooks that carry the easl token header or point at a /webhook (easl's address)."""
    return [
        w for w in sdk.webhooks.list(project=pid) if "X-EASL-Secret" in (w.headers or {}) or w.url.endswith("/webhook")
    ]


def test_setup_again_with_another_backend_url_replaces_the_webhook_and_rotates_the_token(ls, sdk, tmp_path):
    """`easl ls setup` run twice with two backend URLs leaves exactly one easl webhook, at the new URL, with a new
    token (the old address no longer receives anything); `easl ls status` lists the project's easl webhooks and
    warns on a stale one, which the next setup deletes; annotations reach the new backend."""
    items = tmp_path / "items.csv"
    items.write_text("id,text\n" + "".join(f"item{i:02d},statement {i}\n" for i in range(10)))
    project = tmp_path / "w.easl"
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    easl("init", str(project), "--items", str(items), "--hit-size", "5", "--seed", "8", env=env)
    first = Backend(project, free_port(), env, tmp_path / "serve-a.log")
    second = Backend(project, free_port(), env, tmp_path / "serve-b.log")
    first.start()
    try:
        args = ("ls", "setup", str(project), "--url", ls.url, "--json")
        pid = json.loads(easl(*args, "--backend-url", first.url, env=env).stdout)["ls_project_id"]
        (hook,) = _easl_hooks(sdk, pid)
        old_token = _webhook_token(project)
        assert hook.url == f"{first.url}/webhook" and hook.headers == {"X-EASL-Secret": old_token}
        first.stop()
        second.start()
        info = json.loads(easl(*args, "--backend-url", second.url, env=env).stdout)
        assert info["ls_project_id"] == pid and info["connection"] == "ml-backend"
        assert any("rotated" in n for n in info["notes"])
        new_token = _webhook_token(project)
        (hook,) = _easl_hooks(sdk, pid)  # exactly one: the old one is gone, not left beside the new one
        assert new_token != old_token and hook.url == f"{second.url}/webhook"
        assert hook.headers == {"X-EASL-Secret": new_token} and hook.is_active
        (ml,) = sdk.ml.list(project=pid)
        assert ml.url.rstrip("/") == second.url
        status = json.loads(easl("ls", "status", str(project), "--json").stdout)
        assert status["stale_webhooks"] == 0 and [h["url"] for h in status["webhooks"]] == [hook.url]
        # a stale easl webhook (e.g. left by hand, with an old token): listed at the next reconciliation, with a
        # warning; the next setup deletes it
        stale = sdk.webhooks.create(
            project=pid, url=f"{first.url}/webhook", headers={"X-EASL-Secret": old_token}, send_payload=True
        )

        def warned():
            out = json.loads(easl("ls", "status", str(project), "--json").stdout)
            return out if out["stale_webhooks"] == 1 else None

        out = wait_for(warned, "the stale webhook listed by a reconciliation", 30)
        row = next(h for h in out["webhooks"] if h["id"] == stale.id)
        assert (
            "not the current backend" in row["stale_reason"] and "not the current webhook token" in row["stale_reason"]
        )
        text = easl("ls", "status", str(project), env={**env, "COLUMNS": "250"}).stdout
        assert f"warning: webhook {stale.id} to {first.url}/webhook is stale" in text
        easl(*args, "--backend-url", second.url, env=env)
        assert [w.id for w in _easl_hooks(sdk, pid)] == [hook.id] and _webhook_token(project) == new_token
        # annotations reach the new backend through the one webhook
        task = ls_tasks(sdk, pid)[0]
        sdk.annotations.create(id=task.id, result=slider_result(task.data["item_ids"], np.random.default_rng(3)))
        wait_for(lambda: project_status(project)["n_observations"] == 5, "the annotation applied", 30)
    finally:
        first.stop()
        second.stop()


def test_reissue_by_inactivity_never_duplicates_an_untouched_hit_and_late_annotations_still_count(ls, sdk, tmp_path):
    """A HIT whose annotation was rejected is re-issued at once; a HIT somebody worked on (a draft) and left is
    re-issued once it was inactive for --hit-timeout, and its old task is closed (a late annotation on it still
    counts); a HIT nobody worked on, which holds nothing up, is never re-issued. `easl ls status --json` lists
    the open HITs with their task ids, idle times (the clock of --hit-timeout) and the draft's author, never the
    author of the rejected annotation."""
    items = tmp_path / "items.csv"
    items.write_text("id,text\n" + "".join(f"item{i:02d},statement {i}\n" for i in range(10)))
    project = tmp_path / "t.easl"
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    easl("init", str(project), "--items", str(items), "--hit-size", "5", "--seed", "5", env=env)
    person = create_annotator(ls, "leaver@example.com", f"pw-leaver-{ls.token[:8]}")
    backend = Backend(project, free_port(), env, tmp_path / "serve.log", "--hit-timeout", "6")
    backend.start()
    try:
        info = json.loads(
            easl(
                "ls",
                "setup",
                str(project),
                "--url",
                ls.url,
                "--backend-url",
                backend.url,
                "--connect",
                "webhook",
                "--json",
                env=env,
            ).stdout
        )
        pid = info["ls_project_id"]
        first = {t.data["hit_id"]: t.id for t in ls_tasks(sdk, pid)}
        assert len(first) == 2
        status = json.loads(easl("ls", "status", str(project), "--json").stdout)
        assert {h["hit_id"]: h["task_id"] for h in status["open_hits"]} == first
        # nobody worked on them: no idle time (its clock starts at the first draft), only the time they waited
        assert all(h["idle_seconds"] is None and "no task locks" in h["idle_reason"] for h in status["open_hits"])
        assert all(h["waiting_seconds"] >= 0 and "annotator" in h for h in status["open_hits"])
        assert "--hit-timeout" in status["idle_meaning"]
        (hit_a, task_a), (hit_b, task_b) = sorted(first.items())
        # a rejected annotation (score out of range) on HIT b: re-issued at the next reconciliation
        bad = [{"from_name": "score_0", "to_name": "text_0", "type": "number", "value": {"number": 500}}]
        sdk.annotations.create(id=task_b, result=bad)
        wait_for(lambda: sum(t.data["hit_id"] == hit_b for t in ls_tasks(sdk, pid)) == 2, "HIT b re-issued", 30)
        # HIT a, untouched, holds nothing up (no free items, but two HITs open for no active annotator): after
        # three timeouts it still has its one task
        time.sleep(18)
        assert [t.id for t in ls_tasks(sdk, pid) if t.data["hit_id"] == hit_a] == [task_a]
        # the re-issued HIT b names nobody: the author of the rejected annotation does not hold it
        status = json.loads(easl("ls", "status", str(project), "--json").stdout)
        row_b = next(h for h in status["open_hits"] if h["hit_id"] == hit_b)
        assert row_b["task_id"] != task_b and row_b["annotator"] is None
        # an annotator opens HIT a, works on it (Label Studio keeps a draft) and leaves
        requests.post(
            f"{ls.url}/api/tasks/{task_a}/drafts",
            headers={"Authorization": f"Token {person.token}"},
            json={"result": [], "lead_time": 3},
            timeout=30,
        ).raise_for_status()

        def holder_named():
            out = json.loads(easl("ls", "status", str(project), "--json").stdout)
            row = next(h for h in out["open_hits"] if h["hit_id"] == hit_a)
            return row if row["annotator"] == person.email else None

        row = wait_for(holder_named, "the draft's author named as holder", 30)
        assert row["annotator_source"].startswith("draft at ")
        wait_for(lambda: sum(t.data["hit_id"] == hit_a for t in ls_tasks(sdk, pid)) >= 2, "HIT a re-issued", 40)
        # the old task, worked on, is closed: Label Studio offers it to nobody
        wait_for(lambda: sdk.tasks.get(id=task_a).is_labeled, "the stale task closed", 10)
        assert sdk.tasks.get(id=task_a).overlap == 0
        nxt = requests.get(
            f"{ls.url}/api/projects/{pid}/next", headers={"Authorization": f"Token {ls.token}"}, timeout=30
        ).json()
        assert nxt["id"] not in (task_a, task_b) and nxt["data"]["hit_id"] in (hit_a, hit_b)
        # the fresh task carries the HIT's current prediction, like the others
        fresh = max((t for t in ls_tasks(sdk, pid) if t.data["hit_id"] == hit_a), key=lambda t: t.id)
        assert fresh.id != task_a and len(fresh.predictions) == 1
        assert fresh.predictions[0].result[0]["from_name"] == "easl_estimates"
        # a late annotation on the stale task of HIT a is still accepted and completes it
        task = next(t for t in ls_tasks(sdk, pid) if t.id == task_a)
        sdk.annotations.create(id=task_a, result=slider_result(task.data["item_ids"], np.random.default_rng(1)))
        wait_for(lambda: engine_hits(project)[hit_a][0] == "complete", "late annotation applied", 30)
        # the HIT done twice (its fresh task annotated too): both annotations count, each once
        sdk.annotations.create(id=fresh.id, result=slider_result(fresh.data["item_ids"], np.random.default_rng(2)))

        def both() -> bool:
            r = live_by_annotation(project)
            return len([a for a, scores in r.items() if set(scores) <= set(fresh.data["item_ids"])]) >= 2

        wait_for(both, "both annotations of the HIT done twice", 30)
        assert live_by_annotation(project) == expected_live(sdk, pid)
        assert easl("verify", str(project)).stdout.startswith("ok")
    finally:
        backend.stop()


def test_an_untouched_hit_holding_the_queue_up_is_replaced_not_duplicated(ls, sdk, tmp_path):
    """With --queue-depth 3 and items for two HITs only, the queue cannot be topped up: an untouched HIT waiting
    for --hit-timeout holds the campaign up and is re-issued; its never-touched old task is closed first (someone
    may have it open: Label Studio shows no locks), then deleted once closed for --hit-timeout (so Label Studio's
    progress does not count a closed copy), while the HIT stays open in the project."""
    items = tmp_path / "items.csv"
    items.write_text("id,text\n" + "".join(f"item{i:02d},statement {i}\n" for i in range(10)))
    project = tmp_path / "u.easl"
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    easl("init", str(project), "--items", str(items), "--hit-size", "5", "--seed", "6", env=env)
    backend = Backend(project, free_port(), env, tmp_path / "serve.log", "--hit-timeout", "5", "--queue-depth", "3")
    backend.start()
    try:
        args = ("ls", "setup", str(project), "--url", ls.url, "--backend-url", backend.url, "--json")
        pid = json.loads(easl(*args, env=env).stdout)["ls_project_id"]
        first = {t.data["hit_id"]: t.id for t in ls_tasks(sdk, pid)}
        assert len(first) == 2

        def closed():  # fresh tasks, the old ones closed (offered to nobody), not deleted at once
            tasks = {t.id: t for t in ls_tasks(sdk, pid)}
            olds = [tasks.get(i) for i in first.values()]
            return all(t is not None and t.overlap == 0 for t in olds) and len(tasks) >= 4

        def replaced():  # fresh tasks, the old ones gone (not closed copies)
            tasks = ls_tasks(sdk, pid)
            now: dict[str, int] = {}
            for t in tasks:
                now[t.data["hit_id"]] = max(now.get(t.data["hit_id"], 0), t.id)
            fresh = set(now) == set(first) and not {t.id for t in tasks} & set(first.values())
            return now if fresh else None

        wait_for(closed, "both HITs re-issued, their old tasks closed", 40)
        wait_for(replaced, "the closed old tasks deleted", 40)
        wait_for(lambda: drained(project), "queue drained")
        assert {h: s for h, (s, _) in engine_hits(project).items()} == dict.fromkeys(first, "open")
        status = json.loads(easl("ls", "status", str(project), "--json").stdout)
        rows = {h["hit_id"]: h["task_id"] for h in status["open_hits"]}
        assert set(rows) == set(first) and not set(rows.values()) & set(first.values())
    finally:
        backend.stop()


def _readme_steps() -> str:
    """The shell block of "A first campaign, step by step" in the Label Studio guide (the README links to it)."""
    text = (REPO / "docs" / "guides" / "label-studio.md").read_text()
    start = text.index("## A first campaign, step by step")
    block = text[start:].split("```", 2)[1]
    return block


def test_label_studio_guide_steps_run_as_written(ls, sdk, tmp_path):
    """The Label Studio guide's steps: Label Studio pinned to the tested version, easl-toolkit installed from the
    checkout (it is not on the package index) and its environment activated before the first `easl`; then the
    `easl` commands of steps 3, 5 and 6 run as written, with the test's servers' addresses and a free port."""
    import shlex

    from tests.ls_server import LS_VERSION

    block = _readme_steps()
    assert f"pip install label-studio=={LS_VERSION}" in block
    assert "pip install easl-toolkit" not in block and "pip install -e ." in block
    lines = [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    first_easl = next(i for i, ln in enumerate(lines) if ln.startswith("easl "))
    assert any(ln.startswith(". ") and ln.endswith("/bin/activate") for ln in lines[:first_easl])
    commands = [ln.rstrip("&").strip() for ln in lines if ln.startswith("easl ") or ln.startswith("--")]
    joined: list[str] = []
    for ln in commands:  # continuation lines ("\" at the end) belong to the command before
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + ln
        else:
            joined.append(ln)
    init, serve, setup = (shlex.split(c) for c in joined)
    assert init[:2] == ["easl", "init"] and serve[:2] == ["easl", "serve"] and setup[:3] == ["easl", "ls", "setup"]
    (tmp_path / "texts.csv").write_text("id,text\n" + "".join(f"m{i},message {i}\n" for i in range(10)))
    env = {
        **os.environ,
        "LABEL_STUDIO_API_KEY": ls.token,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    run = lambda argv: subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)  # noqa: E731
    out = run(init)
    assert out.returncode == 0, out.stderr
    port = str(free_port())
    serve = [port if a == "9090" else a for a in serve]
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 (a server's log, open for its lifetime)
    proc = subprocess.Popen(serve, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _healthy(f"http://127.0.0.1:{port}"), "easl serve as written", 30)
        setup = [
            ls.url if a == "http://127.0.0.1:8080" else f"http://127.0.0.1:{port}" if a.endswith(":9090") else a
            for a in setup
        ]
        out = run(setup)
        assert out.returncode == 0, out.stderr
        assert "tasks imported: 2" in out.stdout and "backend: ml-backend" in out.stdout
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()
