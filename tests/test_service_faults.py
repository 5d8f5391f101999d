"""Fault cases of the plugin service (issue 13 items 4, 6, 7, 9; issue 11 item 7), so that they stay fixed:
deeply nested JSON, ids of the wrong type, brute force on the credentials, constant-time comparisons, a service
exposed without credentials, what ``/health`` tells anyone, a full queue, and a burst of concurrent webhooks
against `easl serve` itself (nothing lost or doubled, also across ``kill -9``)."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import requests

from core.models import Hyper
from core.store import Project
from easl_plugin import auth
from easl_plugin import bookkeeping as bk
from easl_plugin.auth import SECRET_HEADER, AuthMiddleware, FailureLimiter
from easl_plugin.journal import MOVED_KEY, Journal, journal_path
from easl_plugin.payloads import MAX_JSON_DEPTH
from easl_plugin.server import UnprotectedAddress, check_exposure, is_loopback_host, serve
from easl_plugin.service import ServiceConfig, build_app
from easl_plugin.writer import EventWriter
from tests.ls_server import free_port
from tests.test_plugin_service import Client, created, link

AUTH = {"Authorization": "Basic " + base64.b64encode(b"ann:pw").decode()}
WRONG = {"Authorization": "Basic " + base64.b64encode(b"ann:guess").decode()}


@pytest.fixture
def project_path(tmp_path) -> str:
    """A fresh project of 20 items in HITs of 4 (as tests/test_plugin_service.py's ``created`` expects)."""
    items = pd.DataFrame({"item_id": [f"x{i:02d}" for i in range(20)], "text": [f"text {i}" for i in range(20)]})
    path = tmp_path / "p.easl"
    Project.create(path, items, Hyper(hit_size=4, seed=3)).close()
    return str(path)


def deletion(k: int) -> dict:
    return {"action": "TASKS_DELETED", "tasks": [{"id": k}]}


# ------------------------------------------------------------------------------------------------ malformed input


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 500, 100_000])
def test_deeply_nested_json_is_a_400_on_webhook_and_setup(project_path, depth):
    """Past the parser's recursion limit (100,000) and below it: 400 with the reason, never a 500."""
    nested = b"[" * depth + b"]" * depth
    bodies = {
        "/webhook": b'{"action": "TASKS_DELETED", "tasks": ' + nested + b"}",
        "/setup": b'{"project": "1.2", "extra_params": ' + nested + b"}",
    }
    with Client(build_app(ServiceConfig(project_path=project_path))) as c:
        for path, body in bodies.items():
            r = c.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400, (path, r.status_code, r.text[:200])
            assert r.json()["error"].startswith("malformed JSON: nested too deeply")
        # the service is unharmed, and nesting within the bound is accepted
        ok = {"action": "TASKS_DELETED", "tasks": [{"id": 1}], "extra": json.loads("[" * 20 + "]" * 20)}
        assert c.post("/webhook", json=ok).json()["status"] == "queued"
        assert c.post("/setup", json={"project": "1.2"}).json()["model_version"]


BAD_IDS = {
    "annotation id true": lambda b: b["annotation"].update(id=True),
    "annotation id object": lambda b: b["annotation"].update(id={"x": 1}),
    "annotation id array": lambda b: b["annotation"].update(id=[1]),
    "annotation id fraction": lambda b: b["annotation"].update(id=1.5),
    "task id false": lambda b: b["task"].update(id=False),
    "project id true": lambda b: b["project"].update(id=True),
    "project array": lambda b: b.update(project=[1]),
    "annotator true": lambda b: b["annotation"].update(completed_by=True),
    "annotator object with an array id": lambda b: b["annotation"].update(completed_by={"id": [2]}),
}


@pytest.mark.parametrize("spoil", BAD_IDS.values(), ids=BAD_IDS.keys())
def test_ids_must_be_integers_or_strings(project_path, spoil):
    """A boolean is an ``int`` to Python, never an id to Label Studio; objects and arrays neither."""
    with Project.open(project_path) as p:
        hit = p.open_hits()[0]
    body = created(hit, 5, 300, [1, 2, 3, 4])
    spoil(body)
    with Client(build_app(ServiceConfig(project_path=project_path))) as c:
        r = c.post("/webhook", json=body)
        assert r.status_code == 400, r.text
        assert c.post("/webhook", json=created(hit, 5, 300, [1, 2, 3, 4])).json()["status"] == "queued"
        for ids in ([{"id": True}], [{"id": {"a": 1}}], [[3]]):
            assert c.post("/webhook", json={"action": "ANNOTATIONS_DELETED", "annotations": ids}).status_code == 400


def test_a_full_queue_answers_503_at_once(project_path):
    """The queue is bounded: beyond it the sender is told at once, not after a timeout."""
    writer = EventWriter(project_path, lambda: None, max_waiting=0)
    with Client(build_app(ServiceConfig(project_path=project_path), writer=writer)) as c:
        t = time.monotonic()
        r = c.post("/webhook", json=deletion(1))
        assert r.status_code == 503 and "already waiting" in r.json()["error"]
        assert time.monotonic() - t < 2


# ------------------------------------------------------------------------------------------- authentication


def _post_from(port: int, source: str, path: str, body: dict, headers: dict) -> int:
    """POST from a given loopback source address (127.0.0.0/8 is all this machine on Linux)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json", **headers})
        return conn.getresponse().status
    finally:
        conn.close()


def test_failed_authentication_is_rate_limited_per_client_address(project_path):
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"), webhook_secret="top")
    with Client(build_app(cfg)) as c:
        hook = {**AUTH, SECRET_HEADER: "top"}
        assert c.post("/webhook", json=deletion(1), headers=hook).status_code == 200
        codes = [c.post("/setup", json={}, headers=WRONG).status_code for _ in range(5)]
        codes += [
            c.post("/webhook", json=deletion(2), headers={**AUTH, SECRET_HEADER: "guess"}).status_code for _ in range(5)
        ]  # wrong secrets count as failures too
        assert codes == [401] * 10
        r = c.post("/webhook", json=deletion(3), headers=hook)  # blocked now, even with the right credentials
        assert r.status_code == 429 and 0 < int(r.headers["Retry-After"]) <= 60
        assert c.get("/status", headers=AUTH).status_code == 429
        assert c.get("/health").status_code == 200  # never limited
        if sys.platform.startswith("linux"):  # another address is not blocked
            assert _post_from(c.port, "127.0.0.2", "/webhook", deletion(4), hook) == 200
            assert _post_from(c.port, "127.0.0.2", "/setup", {}, WRONG) == 401


def test_failure_limiter_window_and_memory_bound():
    lim = FailureLimiter(limit=3, window_s=60.0, max_clients=2)
    for t in (0.0, 10.0):
        assert lim.failed("a", now=t) and lim.retry_after("a", now=t) == 0
    lim.failed("a", now=20.0)
    assert lim.retry_after("a", now=20.0) == pytest.approx(40.0)  # until the oldest failure is a minute old
    assert lim.retry_after("a", now=60.5) == 0  # one failure left the window
    lim.failed("b", now=61.0)
    lim.failed("c", now=62.0)  # only two addresses are tracked: 'a' goes
    assert lim.retry_after("a", now=62.0) == 0 and set(lim._failures) == {"b", "c"}


def test_credentials_are_compared_in_constant_time(project_path, monkeypatch):
    """Every check goes through ``hmac.compare_digest`` on fixed-length digests, both halves of the basic pair
    always (no short cut on a wrong user name)."""
    calls = []
    real = auth.hmac.compare_digest

    def spy(a, b):
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"), webhook_secret="top")
    with Client(build_app(cfg)) as c:
        wrong_user = {"Authorization": "Basic " + base64.b64encode(b"someone-else:pw").decode()}
        assert c.get("/versions", headers=wrong_user).status_code == 401
        assert len(calls) == 2
        assert c.post("/webhook", json=deletion(1), headers={**AUTH, SECRET_HEADER: "x" * 500}).status_code == 401
        assert len(calls) == 5
        assert c.post("/webhook", json=deletion(1), headers={**AUTH, SECRET_HEADER: "top"}).status_code == 200
    assert calls and all(a == b == 32 for a, b in calls)


def test_without_credentials_only_this_machine_is_served(project_path):
    """The app itself refuses non-loopback clients when no credential is configured (unless insecure)."""

    async def call(cfg: ServiceConfig, client: str, path: str = "/webhook") -> int:
        sent = []

        async def inner(scope, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "path": path, "method": "POST", "headers": [], "client": (client, 5000)}
        await AuthMiddleware(inner, cfg)(scope, receive, send)
        return sent[0]["status"]

    bare = ServiceConfig(project_path=project_path)
    assert asyncio.run(call(bare, "127.0.0.1")) == 200 and asyncio.run(call(bare, "::1")) == 200
    assert asyncio.run(call(bare, "10.1.2.3")) == 403
    assert asyncio.run(call(bare, "10.1.2.3", "/health")) == 200
    assert asyncio.run(call(ServiceConfig(project_path=project_path, insecure=True), "10.1.2.3")) == 200
    assert asyncio.run(call(ServiceConfig(project_path=project_path, webhook_secret="s"), "10.1.2.3")) == 401


def test_serve_refuses_a_non_loopback_address_without_credentials(project_path, capsys):
    assert is_loopback_host("127.0.0.1") and is_loopback_host("::1") and is_loopback_host("localhost")
    assert not is_loopback_host("0.0.0.0") and not is_loopback_host("::") and not is_loopback_host("")
    for host in ("0.0.0.0", "::", "192.0.2.7"):
        with pytest.raises(UnprotectedAddress) as info:
            serve(ServiceConfig(project_path=project_path, host=host, port=free_port()))  # raises before starting
        assert info.value.host == host and "without credentials" in str(info.value)
    check_exposure(ServiceConfig(project_path=project_path, host="0.0.0.0", insecure=True))
    check_exposure(ServiceConfig(project_path=project_path, host="0.0.0.0", webhook_secret="s"))
    check_exposure(ServiceConfig(project_path=project_path, host="0.0.0.0", basic_auth=("a", "b")))
    check_exposure(ServiceConfig(project_path=project_path, host="localhost"))
    # through the command line: one sentence, exit 1, nothing started
    from tui.cli import main

    env = {k: os.environ.pop(k) for k in ("EASL_BASIC_AUTH", "EASL_WEBHOOK_SECRET") if k in os.environ}
    try:
        assert main(["serve", project_path, "--host", "0.0.0.0", "--port", str(free_port())]) == 1
    finally:
        os.environ.update(env)
    assert "refusing to listen on 0.0.0.0 without credentials" in capsys.readouterr().err


def test_health_tells_only_that_the_service_is_up(project_path):
    figures = {"worker_pid": 1234, "linked_project": 7, "events_applied": 3}
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"))
    with Client(build_app(cfg, status=lambda: figures)) as c:
        for path in ("/health", "/"):
            body = c.get(path).json()
            assert set(body) == {"status", "version", "model_class", "model_version"} and body["status"] == "UP"
        assert c.get("/status").status_code == 401
        detail = c.get("/status", headers=AUTH).json()
        assert detail["worker_pid"] == 1234 and detail["linked_project"] == 7
        assert {"acks_waiting", "events_committed", "events_journaled", "events_failed"} <= set(detail)


# ------------------------------------------------------------------------------------ a burst against easl serve


def _start_serve(project_path: str, tmp_path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LABEL_STUDIO_API_KEY", "EASL_BASIC_AUTH", "EASL_WEBHOOK_SECRET")
    }
    with open(tmp_path / "serve.log", "a") as log:  # the child keeps its own copy of the file descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "serve", project_path, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=1).ok:
                return proc, port
        except requests.RequestException:
            time.sleep(0.1)


def _burst(port: int, bodies: list[bytes], concurrency: int) -> list[dict]:
    """Post every body from ``concurrency`` senders in a closed loop (bench/bench_plugin.py's client); the
    answers in order."""
    from bench.bench_plugin import _post

    answers: list = [None] * len(bodies)
    todo = list(range(len(bodies)))[::-1]

    async def sender():
        conn: list = []
        while todo:
            k = todo.pop()
            _, answers[k] = await _post(port, bodies[k], conn)
        if conn:
            conn[1].close()

    async def main():
        await asyncio.gather(*(sender() for _ in range(concurrency)))

    asyncio.run(main())
    return answers


def test_a_burst_of_concurrent_webhooks_loses_and_doubles_nothing(project_path, tmp_path):
    """50 senders, valid annotations (some delivered twice) applied by the worker meanwhile: every
    acknowledgement is one queued event, every annotation ingested once. Then another burst ends with kill -9
    of the server: every acknowledged event is on disk (events table or journal)."""
    link(project_path)
    with Project.open(project_path, readonly=True) as p:
        hits = p.open_hits()
    first = [created(hits[k % len(hits)], 1000 + k, 2000 + k, [k % 101, 1, 2, 3]) for k in range(400)]
    bodies = [json.dumps(b).encode() for b in first + first[:100]]  # 100 duplicate deliveries
    proc, port = _start_serve(project_path, tmp_path)
    try:
        answers = _burst(port, bodies, 50)
        assert all(a["status"] == "queued" for a in answers)
        stored = [a["event_id"] for a in answers if a["event_id"] is not None]
        assert len(stored) == len(set(stored))  # no row id given twice
        deadline = time.monotonic() + 60
        while True:
            with Project.open(project_path, readonly=True) as p:
                counts = bk.queue_counts(p)
            if counts["pending"] == 0 and counts["done"] == len(bodies):
                break
            assert time.monotonic() < deadline, counts
            time.sleep(0.2)
        with Project.open(project_path, readonly=True) as p:
            ratings = p.ratings()
            assert sorted(ratings["annotation_id"].unique()) == sorted(str(1000 + k) for k in range(400))
            assert len(ratings) == 400 * 4 and p.verify()["ok"]
        # kill -9 right after a burst: what was acknowledged is on disk
        more = [deletion(90_000 + k) for k in range(300)]
        answers = _burst(port, [json.dumps(b).encode() for b in more], 50)
        assert all(a["status"] == "queued" for a in answers)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    with Project.open(project_path, readonly=True) as p:
        rows = [json.loads(e.payload) for status in ("pending", "done", "failed") for e in p.events(status)]
        moved = bk.get_meta(p, MOVED_KEY)
    journal = Journal(journal_path(project_path))
    try:
        records = journal.read()
    finally:
        journal.close()
    uids = [r["uid"] for r in records]  # records up to the last moved one are in the events table already
    rows += [json.loads(r["payload"]) for r in records[uids.index(moved) + 1 if moved in uids else 0 :]]
    deleted = sorted(r["tasks"][0]["id"] for r in rows if r.get("action") == "TASKS_DELETED")
    assert deleted == [90_000 + k for k in range(300)]
