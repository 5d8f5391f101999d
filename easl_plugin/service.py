"""The plugin's web service: Label Studio's ML-backend protocol plus a durable webhook queue.

Endpoints (``../shared/reference/label_studio.md``, "What Label Studio sends to an ML backend / webhook"):

==============  ==========================================================================================
``GET /health``   ``{"status": "UP", ...}`` with queue figures
``POST /setup``   ``{"model_version": ...}``; remembers the Label Studio project id if none is configured
``POST /predict`` ``{"results": []}``: no pre-annotations (predictions would anchor annotators)
``POST /webhook`` validates the JSON, writes a handled event to the project file's ``events`` table and answers
                  once it is committed; a background worker (``worker.py``) applies it
``GET /versions`` ``{"versions": [...]}``
==============  ==========================================================================================

Label Studio posts each webhook once, inside the annotator's submit request, with a 1 s timeout and no retry, so
the acknowledgement must be fast and durable: handlers hand events to one writer thread that commits them in
small batches (group commit: one transaction for whatever arrived while the previous commit ran) and wakes the
handlers when their batch is on disk. While the worker holds the project file's write lock (applying a batch of
events takes tens of milliseconds), the writer does not wait for it: it appends the batch to a spill journal next
to the project file (``journal.py``; written and fsync'd before the acknowledgement) and moves it into the
``events`` table, in arrival order, as soon as the lock is free (in the same transaction as the next batch, or when
idle). The writer never blocks on the lock: a webhook arriving at any moment finds it ready (acknowledgement
p99 about 13 ms under 50 concurrent senders while the worker applies, ``bench/bench_plugin.py``). Malformed bodies get HTTP 400 with the reason; bodies over the size limit
get 413. Optional HTTP basic auth guards every endpoint but ``/health``; an optional shared secret header guards
``/webhook``. Secrets are compared in constant time and never logged.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
import logging
import os
import queue
import signal
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from easl_plugin import bookkeeping
from easl_plugin.events import HANDLED_ACTIONS, PayloadError, check_event, parse_webhook
from easl_plugin.journal import Journal, journal_path

log = logging.getLogger("easl.serve")
MODEL_VERSION = "easl-plugin-1"
SECRET_HEADER = "X-EASL-Secret"


@dataclass
class ServiceConfig:
    """Settings of ``easl serve`` (see ``tui/commands/serve.py`` for the command-line flags)."""

    project_path: str
    host: str = "127.0.0.1"
    port: int = 9090
    max_body_bytes: int = 4 * 1024 * 1024
    basic_auth: tuple[str, str] | None = None
    webhook_secret: str | None = None
    streaming: int = 0                  # 0: batch mode; N > 0: keep N HITs open
    reconcile_interval_s: float = 60.0
    ack_timeout_s: float = 5.0
    api_key: str | None = field(default=None, repr=False)
    ls_url: str | None = None


class EventWriter:
    """One thread that commits queued webhook events to the project file in batches (group commit).

    ``submit(action, payload)`` returns an ``asyncio.Future`` resolved with the event's row id once its
    transaction has committed, or with the exception that prevented it.
    """

    def __init__(self, project_path: str, on_commit: Callable[[], None], *, max_batch: int = 512,
                 gate: threading.Lock | None = None, shared_busy=None, shared_last_commit=None) -> None:
        self._path = project_path
        self._shared_busy = shared_busy              # the same figures for a worker in another process
        self._shared_last_commit = shared_last_commit
        self.gate = gate or threading.Lock()   # shared with the worker: one writer of the file at a time
        self._busy = 0
        self.last_commit = 0.0                 # time.monotonic() of the last commit (the worker paces itself)
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._q: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="easl-event-writer", daemon=True)
        self._stop = object()
        self.ready = threading.Event()
        self.error: BaseException | None = None

    def start(self) -> None:
        """Open the project file in the writer thread and start committing."""
        self._thread.start()
        self.ready.wait(60)
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Commit what is queued, then end the thread."""
        self._q.put(self._stop)
        self._thread.join(30)

    def waiting(self) -> bool:
        """True while acknowledgements are queued or being committed (the worker then holds back)."""
        return self._busy > 0 or not self._q.empty()

    def submit(self, loop: asyncio.AbstractEventLoop, action: str, payload_text: str) -> asyncio.Future:
        """Queue one event; the future resolves on commit."""
        fut = loop.create_future()
        self._q.put((loop, fut, action, payload_text))
        return fut

    def _run(self) -> None:
        try:
            project = bookkeeping.open_project(self._path)
            journal = Journal(journal_path(self._path))
            with self.gate:
                self._move(project, journal)  # events journaled before a crash or stop
        except BaseException as exc:  # reported by start()
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        stopping = False
        try:
            while not stopping:
                try:  # while events wait in the journal, wake up regularly to move them
                    first = self._q.get(timeout=0.02 if journal.count else None)
                except queue.Empty:
                    # never wait for the worker here: a webhook arriving meanwhile must find this thread free
                    if self.gate.acquire(False):
                        try:
                            self._move(project, journal)
                        finally:
                            self.gate.release()
                        self._on_commit()
                    continue
                batch = []
                if first is self._stop:
                    stopping = True
                else:
                    batch.append(first)
                while len(batch) < self._max_batch:
                    try:
                        nxt = self._q.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is self._stop:
                        stopping = True
                        break
                    batch.append(nxt)
                if not batch:
                    continue
                self._set_busy(len(batch))
                events = [(a, p) for _, _, a, p in batch]
                try:
                    if self.gate.acquire(False):
                        try:  # the file is free: journaled events first (arrival order), then this batch, in one
                            with project.transaction():  # transaction (one fsync)
                                moved = journal.count > 0
                                if moved:
                                    bookkeeping.move_journal(project, journal.read())
                                outcome: list = bookkeeping.enqueue(project, events)
                            if moved:
                                self._clear(journal)
                        finally:
                            self.gate.release()
                    else:  # the worker is applying: spill to the journal instead of waiting for it
                        journal.append(events, bookkeeping.now())
                        outcome = [None] * len(batch)
                except Exception as exc:  # the disk is full, the file is locked too long, ...
                    log.error("could not queue %d webhook event(s): %s", len(batch), exc)
                    outcome = [exc] * len(batch)
                self._set_busy(0)
                self.last_commit = time.monotonic()
                if self._shared_last_commit is not None:
                    self._shared_last_commit.value = self.last_commit
                self._on_commit()  # before the acknowledgements: whoever sees a 200 also sees the worker woken
                for (loop, fut, _, _), res in zip(batch, outcome):
                    loop.call_soon_threadsafe(_resolve, fut, res)
            if self.gate.acquire(True, 10.0):  # a worker that died holding the gate must not hang the stop
                try:
                    self._move(project, journal)
                finally:
                    self.gate.release()
            else:
                log.warning("journaled events stay in %s until the next start", journal.path)
        finally:
            journal.close()
            project.close()

    def _set_busy(self, n: int) -> None:
        self._busy = n
        if self._shared_busy is not None:
            self._shared_busy.value = n

    @staticmethod
    def _move(project, journal: Journal) -> None:
        """Move the journal's events into the project file (caller holds the gate)."""
        if journal.count == 0:
            return
        bookkeeping.move_journal(project, journal.read())
        EventWriter._clear(journal)

    @staticmethod
    def _clear(journal: Journal) -> None:
        """Empty the journal after a committed move; if that fails, the next move skips the moved records
        (``journal.py``), so the failure costs nothing but a log line."""
        try:
            journal.clear()
        except OSError as exc:
            log.warning("could not empty %s (its moved records will be skipped): %s", journal.path, exc)


def _resolve(fut: asyncio.Future, res) -> None:
    if fut.done():
        return
    if isinstance(res, BaseException):
        fut.set_exception(res)
    else:
        fut.set_result(res)


def _unauthorised() -> Response:
    return JSONResponse({"error": "authentication required"}, status_code=401,
                        headers={"WWW-Authenticate": 'Basic realm="easl"'})


def _basic_ok(request: Request, creds: tuple[str, str]) -> bool:
    header = request.headers.get("authorization", "")
    if not header.lower().startswith("basic "):
        return False
    try:
        user, _, pw = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return hmac.compare_digest(user.encode(), creds[0].encode()) & hmac.compare_digest(pw.encode(), creds[1].encode())


async def _read_body(request: Request, limit: int) -> bytes | Response:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return JSONResponse({"error": f"body larger than {limit} bytes"}, status_code=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return JSONResponse({"error": f"body larger than {limit} bytes"}, status_code=413)
        chunks.append(chunk)
    return b"".join(chunks)


def build_app(config: ServiceConfig, *, on_event: Callable[[], None] | None = None,
              on_setup: Callable[[dict], None] | None = None, status: Callable[[], dict] | None = None,
              writer: EventWriter | None = None) -> Starlette:
    """The ASGI application. ``on_event`` is called (in the writer thread) after each commit, ``on_setup`` with
    each ``/setup`` body, ``status`` to add figures to ``/health``. The event writer starts with the app
    (lifespan) and stops with it."""
    writer = writer or EventWriter(config.project_path, on_event or (lambda: None))

    async def guard(request: Request) -> Response | None:
        """401 unless basic auth is off or the credentials match."""
        if config.basic_auth and not _basic_ok(request, config.basic_auth):
            return _unauthorised()
        return None

    async def health(request: Request) -> Response:
        """``GET /health``: always answered (Label Studio polls it), with the worker's figures."""
        body = {"status": "UP", "model_class": "EASL", "model_version": MODEL_VERSION}
        if status is not None:
            body.update(status())
        return JSONResponse(body)

    async def setup(request: Request) -> Response:
        """``POST /setup``: Label Studio connects the backend; answer the model version."""
        if (denied := await guard(request)) is not None:
            return denied
        raw = await _read_body(request, config.max_body_bytes)
        if isinstance(raw, Response):
            return raw
        try:
            body = json.loads(raw or b"{}")
        except (ValueError, UnicodeDecodeError) as exc:
            return JSONResponse({"error": f"malformed JSON: {exc}"}, status_code=400)
        if on_setup is not None and isinstance(body, dict):
            await asyncio.to_thread(on_setup, body)
        return JSONResponse({"model_version": MODEL_VERSION})

    async def predict(request: Request) -> Response:
        """``POST /predict``: no pre-annotations (they would anchor annotators)."""
        if (denied := await guard(request)) is not None:
            return denied
        raw = await _read_body(request, config.max_body_bytes)
        if isinstance(raw, Response):
            return raw
        return JSONResponse({"results": [], "model_version": MODEL_VERSION})

    async def versions(request: Request) -> Response:
        """``GET /versions``: the one model version."""
        if (denied := await guard(request)) is not None:
            return denied
        return JSONResponse({"versions": [MODEL_VERSION]})

    async def webhook(request: Request) -> Response:
        """``POST /webhook``: validate, queue durably, acknowledge (see the module docstring)."""
        t0 = time.perf_counter()
        if (denied := await guard(request)) is not None:
            return denied
        if config.webhook_secret is not None:
            given = request.headers.get(SECRET_HEADER, "")
            if not hmac.compare_digest(given.encode(), config.webhook_secret.encode()):
                return JSONResponse({"error": f"missing or wrong {SECRET_HEADER} header"}, status_code=401)
        raw = await _read_body(request, config.max_body_bytes)
        if isinstance(raw, Response):
            return raw
        try:
            payload = parse_webhook(raw)
            action = payload["action"]
            if action not in HANDLED_ACTIONS:
                return JSONResponse({"status": "ignored", "action": action})
            check_event(payload)
        except PayloadError as exc:
            log.info("webhook rejected: %s", exc)
            return JSONResponse({"error": str(exc)}, status_code=400)
        fut = writer.submit(asyncio.get_running_loop(), action, raw.decode("utf-8"))
        try:
            event_id = await asyncio.wait_for(fut, config.ack_timeout_s)
        except Exception as exc:
            return JSONResponse({"error": f"could not queue the event: {exc.__class__.__name__}"}, status_code=503)
        return JSONResponse({"status": "queued", "event_id": event_id, "journaled": event_id is None,
                             "ms": round(1000 * (time.perf_counter() - t0), 3)})

    @asynccontextmanager
    async def lifespan(app):
        """Start the event writer with the app and stop it (committing what is queued) with it."""
        await asyncio.to_thread(writer.start)
        try:
            yield
        finally:
            await asyncio.to_thread(writer.stop)

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/", health, methods=["GET"]),
        Route("/setup", setup, methods=["POST"]),
        Route("/predict", predict, methods=["POST"]),
        Route("/webhook", webhook, methods=["POST"]),
        Route("/versions", versions, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def serve(config: ServiceConfig, *, log_level: str = "info", access_log: bool = False) -> None:
    """Run the service until SIGINT/SIGTERM: uvicorn (one process, one event loop) with the event writer thread,
    and the worker (``worker.py``) in a child process (``worker_process.py``), on the project file at
    ``config.project_path``."""
    import uvicorn

    from easl_plugin.worker_process import WorkerProcess

    worker = WorkerProcess(config.project_path, api_key=config.api_key, streaming=config.streaming,
                           reconcile_interval_s=config.reconcile_interval_s, url_override=config.ls_url,
                           log_level=log_level)
    writer = EventWriter(config.project_path, worker.notify, gate=worker.gate, shared_busy=worker.busy,
                         shared_last_commit=worker.last_commit)

    def on_setup(body: dict) -> None:
        """Label Studio (re)connected the backend: reconcile soon."""
        log.info("Label Studio called /setup for project %s", str(body.get("project", "?")).split(".")[0])
        worker.reconcile_requested.set()
        worker.notify()

    def status() -> dict:
        """Worker figures for ``/health``."""
        return {"linked_project": worker.linked_id, "worker_alive": worker.alive, "worker_pid": worker.pid,
                "events_applied": worker.applied_total, "tasks_pushed": worker.pushed_total}

    app = build_app(config, on_setup=on_setup, status=status, writer=writer)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a):
        """The app's lifespan plus the worker process."""
        worker.start()  # first: no other thread, socket or database connection exists yet to be forked
        stopping = threading.Event()

        def supervise() -> None:  # the worker must not die alone: stop the service so that a supervisor restarts it
            while not stopping.wait(1.0):
                if not worker.alive:
                    log.error("the worker process exited unexpectedly; stopping the service")
                    os.kill(os.getpid(), signal.SIGTERM)
                    return

        threading.Thread(target=supervise, name="easl-supervise", daemon=True).start()
        try:
            async with inner(a):
                yield
        finally:
            stopping.set()
            await asyncio.to_thread(worker.stop)

    app.router.lifespan_context = lifespan
    try:
        uvicorn.run(app, host=config.host, port=config.port, log_level=log_level, access_log=access_log,
                    workers=1, timeout_graceful_shutdown=10)
    finally:
        del app, inner, writer
        worker.release()
