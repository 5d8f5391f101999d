"""Fault cases of the plugin service, by class, so that they stay fixed: malformed input (deeply nested JSON, ids
of the wrong type, size or script), brute force on the credentials (slowed without locking out correct ones),
constant-time comparisons, exposure (a service reachable from other machines, what ``/health`` tells anyone),
connections that never finish (idle, half-sent, dropped mid-body), the address in use, a full queue, and a burst
of concurrent webhooks against `easl serve` itself (nothing lost or doubled, also across ``kill -9``)."""

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
from pathlib import Path

import pandas as pd
import pytest
import requests

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project
from easl_toolkit.easl_plugin import auth
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.auth import SECRET_HEADER, AuthMiddleware, FailureLimiter
from easl_toolkit.easl_plugin.journal import MOVED_KEY, Journal, journal_path
from easl_toolkit.easl_plugin.payloads import MAX_JSON_DEPTH
from easl_toolkit.easl_plugin.server import UnprotectedAddress, check_exposure, is_loopback_host, serve
from easl_toolkit.easl_plugin.service import ServiceConfig, build_app
from easl_toolkit.easl_plugin.writer import EventWriter
from tests.ls_server import free_port
from tests.service_helpers import HOOK, WEBHOOK_TOKEN, Client, created, give_token, link, start_serve, stop

AUTH = {"Authorization": "Basic " + base64.b64encode(b"ann:pw").decode()}
STRONG = "q7-Vx2pLm9Rt"  #: a secret above the strength floor
TOKEN_LINE = b"X-EASL-Secret: " + WEBHOOK_TOKEN.encode() + b"\r\n"  #: the project's webhook token, raw
WRONG = {"Authorization": "Basic " + base64.b64encode(b"ann:guess").decode()}


@pytest.fixture
def project_path(tmp_path) -> str:
    """A fresh project of 20 items in HITs of 4 (as tests/test_plugin_service.py's ``created`` expects)."""
    items = pd.DataFrame({"item_id": [f"x{i:02d}" for i in range(20)], "text": [f"text {i}" for i in range(20)]})
    path = tmp_path / "p.easl"
    Project.create(path, items, Hyper(hit_size=4, seed=3)).close()
    give_token(path)
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
            r = c.post(path, content=body, headers={"content-type": "application/json", **HOOK})
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


def test_wrong_attempts_are_slowed_and_correct_credentials_always_pass(project_path):
    """Label Studio shares 127.0.0.1 with every local process: after the limit of wrong attempts from that address,
    further wrong ones get 429 after a delay, while correct credentials pass at once, every time."""
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"), webhook_secret="top")
    with Client(build_app(cfg)) as c:
        hook = {**AUTH, SECRET_HEADER: "top"}
        assert c.post("/webhook", json=deletion(1), headers=hook).status_code == 200
        codes = [c.post("/setup", json={}, headers=WRONG).status_code for _ in range(5)]
        codes += [
            c.post("/webhook", json=deletion(2), headers={**AUTH, SECRET_HEADER: "guess"}).status_code for _ in range(5)
        ]  # wrong secrets count as failures too
        assert codes == [401] * 10
        t = time.monotonic()
        r = c.post("/setup", json={}, headers=WRONG)
        assert r.status_code == 429 and 0 < int(r.headers["Retry-After"]) <= 60
        assert time.monotonic() - t >= 0.9  # answered after the penalty
        t = time.monotonic()
        assert c.post("/webhook", json=deletion(3), headers=hook).status_code == 200  # correct: at once
        assert c.get("/status", headers=AUTH).status_code == 200
        assert time.monotonic() - t < 0.9
        assert c.get("/health").status_code == 200  # never limited
        if sys.platform.startswith("linux"):  # another address gets its own count
            assert _post_from(c.port, "127.0.0.2", "/setup", {}, WRONG) == 401


_GUESSER = """
import base64, http.client, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
for k in range(n):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    guess = base64.b64encode(f"ann:guess{k}".encode()).decode()
    conn.request("POST", "/setup", body="{}", headers={"Authorization": "Basic " + guess})
    print(conn.getresponse().status, flush=True)
    conn.close()
"""


def test_another_local_processs_failed_logins_do_not_block_correct_requests(project_path):
    """Another process on this machine guesses the password (14 wrong logins from 127.0.0.1, Label Studio's
    address) while Label Studio's correct requests keep coming: every correct one is answered 200, promptly."""
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"), webhook_secret="top")
    with Client(build_app(cfg)) as c:
        guesser = subprocess.Popen(
            [sys.executable, "-c", _GUESSER, str(c.port), "14"], stdout=subprocess.PIPE, text=True
        )
        hook = {**AUTH, SECRET_HEADER: "top"}
        slowest, k = 0.0, 0
        while guesser.poll() is None or k < 20:
            t = time.monotonic()
            assert c.post("/webhook", json=deletion(100 + k), headers=hook).status_code == 200
            assert c.post("/setup", json={}, headers=AUTH).status_code == 200
            slowest, k = max(slowest, time.monotonic() - t), k + 1
        codes = guesser.stdout.read().split() if guesser.stdout else []
        assert guesser.wait(30) == 0
    assert codes == ["401"] * 10 + ["429"] * 4  # the guesses were limited ...
    assert slowest < 0.5  # ... and Label Studio's correct requests never waited behind them


def test_a_non_ascii_authorization_header_is_a_401(project_path):
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"))
    with Client(build_app(cfg)) as c:
        for value in (
            b"Basic \xff\xfe\xfd",
            "Basic " + base64.b64encode("ann:pwé".encode()).decode(),
            b"Basic \xc3\xa9==",
        ):
            conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=10)
            conn.putrequest("GET", "/status")
            conn.putheader("Authorization", value)
            conn.endheaders()
            assert conn.getresponse().status == 401
            conn.close()
        assert c.get("/status", headers=AUTH).status_code == 200


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
        assert len(calls) == 6  # the project's webhook token, both halves of the pair, the shared secret
        assert c.post("/webhook", json=deletion(1), headers={**AUTH, SECRET_HEADER: "top"}).status_code == 200
    assert calls and all(a == b == 32 for a, b in calls)


def test_without_credentials_only_this_machine_is_served(project_path):
    """The app itself refuses non-loopback clients when no credential is configured (unless insecure)."""

    async def call(cfg: ServiceConfig, client: str, path: str = "/webhook", headers: list | None = None) -> int:
        sent = []

        async def inner(scope, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "path": path, "method": "POST", "headers": headers or [], "client": (client, 5000)}
        await AuthMiddleware(inner, cfg)(scope, receive, send)
        return sent[0]["status"]

    bare = ServiceConfig(project_path=project_path)
    token = [(SECRET_HEADER.lower().encode(), WEBHOOK_TOKEN.encode())]
    for path in ("/status", "/setup", "/predict", "/versions"):  # reading: this machine only
        assert asyncio.run(call(bare, "127.0.0.1", path)) == 200 and asyncio.run(call(bare, "::1", path)) == 200
        assert asyncio.run(call(bare, "10.1.2.3", path)) == 403
    # writing: the webhook token, from any address, loopback and --insecure included
    insecure = ServiceConfig(project_path=project_path, insecure=True)
    for cfg in (bare, insecure):
        assert asyncio.run(call(cfg, "127.0.0.1")) == 401 and asyncio.run(call(cfg, "10.1.2.3")) == 401
        assert asyncio.run(call(cfg, "127.0.0.1", headers=token)) == 200
    assert asyncio.run(call(bare, "10.1.2.3", "/health")) == 200
    assert asyncio.run(call(insecure, "10.1.2.3", "/status")) == 200
    secret_only = ServiceConfig(project_path=project_path, webhook_secret="s")
    assert asyncio.run(call(secret_only, "10.1.2.3")) == 401  # /webhook: the secret is its credential
    for path in ("/status", "/setup", "/predict", "/versions"):  # the secret authenticates /webhook alone
        assert asyncio.run(call(secret_only, "10.1.2.3", path)) == 403
        assert asyncio.run(call(secret_only, "127.0.0.1", path)) == 200
        relayed = [(b"x-forwarded-for", b"203.0.113.9")]  # through a proxy on this machine: not from this machine
        assert asyncio.run(call(secret_only, "127.0.0.1", path, relayed)) == 403


def test_a_webhook_without_a_credential_is_refused_on_loopback_and_ingests_nothing(project_path, tmp_path):
    """A real `easl serve` without EASL_BASIC_AUTH or EASL_WEBHOOK_SECRET, a linked project: a forged annotation
    posted on loopback without the webhook token gets 401 and nothing is queued or ingested (the refusal is
    counted); the same annotation with the token is accepted and ingested."""
    link(project_path)
    with Project.open(project_path, readonly=True) as p:
        hit = p.open_hits()[0]
    forged = created(hit, 501, 601, [10, 20, 30, 40])
    proc, port = start_serve(project_path, tmp_path / "serve.log")
    try:
        url = f"http://127.0.0.1:{port}/webhook"
        for headers in ({}, {SECRET_HEADER: "a-guess"}, {SECRET_HEADER: ""}):
            r = requests.post(url, json=forged, headers=headers, timeout=5)
            assert r.status_code == 401 and SECRET_HEADER in r.json()["error"]
        time.sleep(1.0)  # what the worker would have applied by now
        with Project.open(project_path, readonly=True) as p:
            assert p.ratings().empty and bk.queue_counts(p) == {"pending": 0, "done": 0, "failed": 0}
        status = json.loads(
            subprocess.run(
                [sys.executable, "-m", "easl_toolkit.tui.cli", "ls", "status", project_path, "--json"],
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
        )
        assert status["deliveries_refused"] == 3
        assert requests.post(url, json=forged, headers=HOOK, timeout=5).json()["status"] == "queued"
        deadline = time.monotonic() + 20
        while True:
            with Project.open(project_path, readonly=True) as p:
                if len(p.ratings()) == 4:
                    break
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        stop(proc)


def test_serve_refuses_a_non_loopback_address_without_basic_auth(project_path, capsys):
    """Every endpoint but /health needs credentials where other machines can reach the service, and the webhook
    secret authenticates /webhook alone: a non-loopback address needs EASL_BASIC_AUTH (or --insecure)."""
    assert is_loopback_host("127.0.0.1") and is_loopback_host("::1") and is_loopback_host("localhost")
    assert not is_loopback_host("0.0.0.0") and not is_loopback_host("::") and not is_loopback_host("")
    for host in ("0.0.0.0", "::", "192.0.2.7"):
        for secret in (None, STRONG):
            with pytest.raises(UnprotectedAddress) as info:  # raises before starting
                serve(ServiceConfig(project_path=project_path, host=host, port=free_port(), webhook_secret=secret))
            assert info.value.host == host and "without credentials" in str(info.value)
    check_exposure(ServiceConfig(project_path=project_path, host="0.0.0.0", insecure=True))
    check_exposure(ServiceConfig(project_path=project_path, host="0.0.0.0", basic_auth=("a", STRONG)))
    check_exposure(ServiceConfig(project_path=project_path, host="localhost", webhook_secret=STRONG))
    # through the command line: one sentence, exit 1, nothing started
    from easl_toolkit.tui.cli import main

    env = {k: os.environ.pop(k) for k in ("EASL_BASIC_AUTH", "EASL_WEBHOOK_SECRET") if k in os.environ}
    try:
        assert main(["serve", project_path, "--host", "0.0.0.0", "--port", str(free_port())]) == 1
        os.environ["EASL_WEBHOOK_SECRET"] = STRONG
        assert main(["serve", project_path, "--host", "0.0.0.0", "--port", str(free_port())]) == 1
    finally:
        os.environ.pop("EASL_WEBHOOK_SECRET", None)
        os.environ.update(env)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(e.startswith("error: refusing to listen on 0.0.0.0 without credentials") for e in err)


def _this_machines_address() -> str | None:
    """An address of this machine other than loopback (None when it has none)."""
    import ipaddress
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this picks the outgoing interface
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if ipaddress.ip_address(address).is_loopback or address == "0.0.0.0" else address


def test_a_service_reachable_from_other_machines_with_only_the_webhook_secret_serves_them_nothing_else(
    project_path,
):
    """Listening on every address (forced with --insecure's setting) with only the webhook secret: a client on
    another address gets /health and, with the secret, /webhook; /status, /predict, /setup, /versions refuse it
    without credentials."""
    address = _this_machines_address()
    cfg = ServiceConfig(project_path=project_path, host="0.0.0.0", webhook_secret=STRONG)
    with Client(build_app(cfg), host="0.0.0.0", address=address or "127.0.0.1") as c:
        if address is None:  # no other interface: the same requests through the app with a foreign client address
            from starlette.testclient import TestClient

            c = TestClient(build_app(cfg), client=("192.0.2.77", 5000), base_url="http://192.0.2.2")  # noqa: PLW2901
        assert c.get("/health").json() == {"status": "UP", "model_class": "EASL"}
        for path in ("/status", "/versions"):
            assert c.get(path).status_code == 403, path
            assert c.get(path, headers={SECRET_HEADER: STRONG}).status_code == 403, path
        for path in ("/setup", "/predict"):
            assert c.post(path, json={}).status_code == 403, path
            assert c.post(path, json={}, headers={SECRET_HEADER: STRONG}).status_code == 403, path
        assert c.post("/webhook", json=deletion(1), headers={}).status_code == 401
        assert c.post("/webhook", json=deletion(1), headers={SECRET_HEADER: STRONG}).status_code == 200


def test_user_chosen_secrets_below_the_floor_are_refused(project_path, capsys):
    from easl_toolkit.easl_plugin.auth import WeakSecret, check_secrets, secret_problem

    assert secret_problem("pw") and secret_problem("aaaaaaaaaaaaaaaa") and secret_problem("annann-secret-x", user="ann")
    assert secret_problem(STRONG) is None and secret_problem("s3cret-shared") is None
    with pytest.raises(WeakSecret, match="EASL_BASIC_AUTH password is too weak: it has 2 characters"):
        check_secrets(basic_auth=("ann", "pw"), webhook_secret=None)
    from easl_toolkit.tui.cli import main

    env = {k: os.environ.pop(k) for k in ("EASL_BASIC_AUTH", "EASL_WEBHOOK_SECRET") if k in os.environ}
    os.environ["EASL_WEBHOOK_SECRET"] = "secret"
    try:
        assert main(["serve", project_path, "--port", str(free_port())]) == 1
    finally:
        os.environ.pop("EASL_WEBHOOK_SECRET", None)
        os.environ.update(env)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: EASL_WEBHOOK_SECRET is too weak: it has 6 characters")


def test_health_tells_only_that_the_service_is_up_and_versions_agree_with_setup(project_path):
    figures = {"worker_pid": 1234, "linked_project": 7, "events_applied": 3}
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", "pw"))
    with Client(build_app(cfg, status=lambda: figures)) as c:
        for path in ("/health", "/"):
            assert c.get(path).json() == {"status": "UP", "model_class": "EASL"}  # what Label Studio checks
        assert c.get("/status").status_code == 401
        detail = c.get("/status", headers=AUTH).json()
        assert detail["worker_pid"] == 1234 and detail["linked_project"] == 7
        assert {"acks_waiting", "events_committed", "events_journaled", "events_failed"} <= set(detail)
        version = c.post("/setup", json={}, headers=AUTH).json()["model_version"]
        assert c.get("/versions", headers=AUTH).json() == {"versions": [version]} and version == "iteration-0"


# ------------------------------------------------------------------------------------ a burst against easl serve


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
    proc, port = start_serve(project_path, tmp_path / "serve.log")
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


# ------------------------------------------------------------------------------- ids of the wrong script or size


@pytest.mark.parametrize(
    "body",
    [
        b'{"action": "ANNOTATIONS_DELETED", "annotations": [{"id": "\\u00b2"}]}',  # "2" superscript: isdigit() is True
        b'{"action": "ANNOTATIONS_DELETED", "annotations": [{"id": "' + b"9" * 5000 + b'"}]}',
        b'{"action": "ANNOTATIONS_DELETED", "annotations": [{"id": ' + b"9" * 5000 + b"}]}",  # over int()'s 4,300
        b'{"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 9223372036854775808}]}',  # 2**63
        b'{"action": "TASKS_DELETED", "tasks": ["-3"]}',
        b'{"action": "ANNOTATION_CREATED", "annotation": {"id": 99999999999999999999}, "task": {"id": 1}}',
    ],
    ids=["superscript", "5000-digit-string", "5000-digit-number", "2**63", "negative", "huge-annotation-id"],
)
def test_ids_of_another_script_or_unbounded_size_are_a_400_without_a_traceback(project_path, body, caplog):
    with Client(build_app(ServiceConfig(project_path=project_path))) as c:
        r = c.post("/webhook", content=body, headers={"content-type": "application/json", **HOOK})
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error.count(".") <= 1 and len(error) < 300 and "\n" not in error
        assert c.post("/webhook", json=deletion(1)).json()["status"] == "queued"
    assert "Traceback" not in caplog.text and "Exception in ASGI" not in caplog.text


def test_ids_given_as_ascii_digits_are_taken():
    from easl_toolkit.easl_plugin.events import deleted_annotation_ids, id_value

    assert deleted_annotation_ids({"action": "ANNOTATIONS_DELETED", "annotations": [{"id": "12"}, 7]}) == [12, 7]
    assert [id_value(v) for v in ("0", "9223372036854775807", "²", "١٢", " 1", True, 1.0)] == [
        0,
        2**63 - 1,
        None,
        None,
        None,
        None,
        None,
    ]


# ---------------------------------------------------------------------------------- connections that never finish


def _no_traceback(log_path) -> None:
    text = Path(log_path).read_text()
    assert "Traceback" not in text and "Exception in ASGI" not in text and "ERROR" not in text, text[-3000:]


def _low_fd_limit() -> None:  # in the child: the common limit of 256 descriptors, soft and hard
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def test_idle_and_half_sent_connections_are_dropped_and_health_keeps_answering(project_path, tmp_path):
    """400 connections that send half a request head (more than the 256 file descriptors `easl serve` may open),
    and 20 that send a head and half a body: /health and /webhook still answer at once, every one of them is
    closed within the timeouts, and the log has no traceback."""
    import socket

    log_path = tmp_path / "serve.log"
    proc, port = start_serve(
        project_path, log_path, "--header-timeout", "2", "--body-timeout", "2", preexec_fn=_low_fd_limit
    )
    idle: list[socket.socket] = []
    try:
        for k in range(420):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            if k < 400:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # never the blank line that ends the head
            else:
                s.sendall(
                    b"POST /webhook HTTP/1.1\r\nHost: x\r\n" + TOKEN_LINE + b"Content-Type: application/json\r\n"
                    b'Content-Length: 100\r\n\r\n{"action":'
                )
            idle.append(s)
        t = time.monotonic()
        assert requests.get(f"http://127.0.0.1:{port}/health", timeout=5).json()["status"] == "UP"
        r = requests.post(f"http://127.0.0.1:{port}/webhook", json=deletion(1), headers=HOOK, timeout=5)
        assert r.status_code == 200 and time.monotonic() - t < 2
        deadline = time.monotonic() + 10
        for s in idle:  # each is closed by the server: the cap closed the oldest, the timeouts the others
            s.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                rest = s.recv(65536)
            except ConnectionResetError:
                rest = b""
            assert rest == b"" or rest.startswith(b"HTTP/1.1 "), rest[:100]
        assert requests.get(f"http://127.0.0.1:{port}/health", timeout=5).ok
    finally:
        for s in idle:
            s.close()
        stop(proc)
    _no_traceback(log_path)


def test_clients_that_disconnect_mid_body_leave_no_traceback(project_path, tmp_path):
    """300 clients send a head and part of the body, then go away: no traceback, no error line in the log, and the
    service answers after them."""
    import socket

    log_path = tmp_path / "serve.log"
    proc, port = start_serve(project_path, log_path)
    try:
        for k in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            path = b"/webhook" if k % 2 else b"/setup"
            s.sendall(
                b"POST "
                + path
                + b" HTTP/1.1\r\nHost: x\r\n"
                + TOKEN_LINE
                + b"Content-Length: 5000\r\n\r\n"
                + b"{" * 100
            )
            time.sleep(0.002)
            s.close()
        time.sleep(1)
        assert (
            requests.post(f"http://127.0.0.1:{port}/webhook", json=deletion(1), headers=HOOK, timeout=5).status_code
            == 200
        )
    finally:
        stop(proc)
    _no_traceback(log_path)


def test_serve_on_a_port_in_use_is_one_error_line(project_path, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k not in ("LABEL_STUDIO_API_KEY", "EASL_BASIC_AUTH")}
        out = subprocess.run(
            [sys.executable, "-m", "easl_toolkit.tui.cli", "serve", project_path, "--port", str(port)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert out.returncode == 1, out
    assert out.stderr.strip().splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: address already in use"]
    assert out.stdout == ""


def test_a_short_stored_webhook_token_is_never_accepted_and_setup_replaces_it(project_path):
    from easl_toolkit.easl_plugin.auth import MIN_TOKEN_CHARS
    from easl_toolkit.easl_plugin.setup import webhook_token

    with Project.open(project_path) as p:
        bk.set_meta(p, {bk.KEY_WEBHOOK_TOKEN: "short-token"})
    cfg = ServiceConfig(project_path=project_path, basic_auth=("ann", STRONG))
    with Client(build_app(cfg)) as c:
        assert c.post("/webhook", json=deletion(1), headers={SECRET_HEADER: "short-token"}).status_code == 401
        with Project.open(project_path) as p:
            token = webhook_token(p)
        assert len(token) >= MIN_TOKEN_CHARS and token != "short-token"
        time.sleep(0.3)  # the service reads the file again at most four times a second
        assert c.post("/webhook", json=deletion(1), headers={SECRET_HEADER: token}).status_code == 200


@pytest.mark.parametrize("kind", ["httptools", "h11"])
def test_the_connection_guard_works_on_both_of_uvicorns_http_parsers(project_path, kind):
    """Header timeout, body timeout and the cap (which closes the connection idle longest, never a request being
    served) on each protocol class uvicorn may pick."""
    import socket
    import threading

    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from easl_toolkit.easl_plugin.connections import ConnectionLimits, guarded

    base = {"httptools": HttpToolsProtocol, "h11": H11Protocol}[kind]
    limits = ConnectionLimits(header_timeout_s=0.5, body_timeout_s=0.5, max_connections=4)
    port = free_port()
    config = uvicorn.Config(
        build_app(ServiceConfig(project_path=project_path)),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http=guarded(base, limits),
        limit_concurrency=None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)

    def half(data: bytes) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(data)
        return s

    def closed(s: socket.socket) -> bool:
        try:
            return s.recv(1024) == b""
        except (ConnectionResetError, TimeoutError):
            return False

    try:
        head = half(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        body = half(b"POST /webhook HTTP/1.1\r\nHost: x\r\n" + TOKEN_LINE + b"Content-Length: 50\r\n\r\n{")
        t = time.monotonic()
        assert closed(head) and closed(body) and time.monotonic() - t < 2  # both timeouts
        busy = [
            half(b"POST /webhook HTTP/1.1\r\nHost: x\r\n" + TOKEN_LINE + b"Content-Length: 50\r\n\r\n{")
            for _ in range(4)
        ]
        time.sleep(0.1)  # four requests being served (their bodies pending): a fifth connection is refused
        assert half(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").recv(1024).startswith(b"HTTP/1.1 503 ")
        assert all(closed(s) for s in busy)  # then the body timeout closes them
        idle = [half(b"GET /health HTTP/1.1\r\n") for _ in range(4)]
        assert requests.get(f"http://127.0.0.1:{port}/health", timeout=5).ok  # at the cap: the oldest idle goes
        idle[0].settimeout(0.2)
        assert closed(idle[0])
        for s in [head, body, *busy, *idle]:
            s.close()
    finally:
        server.should_exit = True
        thread.join(10)
