"""The plugin's web service: Label Studio's ML-backend protocol plus a durable webhook queue.

Endpoints (``docs/design.md`` section 7.3, "What Label Studio sends to an ML backend or webhook"):

==============  ==========================================================================================
``GET /health``   ``{"status": "UP", "version": ..., "model_version": ...}`` and nothing else; never needs
                  credentials (Label Studio and supervisors poll it)
``GET /status``   the worker's and the queue's figures (worker PID, linked project, events applied, tasks pushed,
                  acknowledgements waiting, events committed / journaled / failed)
``POST /setup``   ``{"model_version": "iteration-<k>"}``; remembers the Label Studio project id if none is configured
``POST /predict`` ``{"results": [...]}``: each task's current estimates and 95% intervals (``campaign.py``),
                  hidden from annotators by the project's settings
``POST /webhook`` validates the JSON, stores a handled event durably (``writer.py``) and answers once it is
                  stored; a background worker (``worker.py``) applies it
``GET /versions`` ``{"versions": [...]}``
==============  ==========================================================================================

Label Studio posts each webhook once, inside the annotator's submit request, with a 1 s timeout and no retry, so
the acknowledgement must be fast and durable. A handler here only parses, checks and hands the event to the
writer thread (``writer.py``: group commit, a spill journal while the worker holds the file, a bounded queue);
nothing on the event loop touches the disk or waits for the write lock.

Every endpoint but ``/health`` (and ``/``, its alias) goes through one middleware (``AuthMiddleware``): optional
HTTP basic auth, and on ``/webhook`` the optional shared secret header beside it; both compared in constant time
and never logged. After ``FAILURES_PER_MINUTE`` failed attempts within a minute, a client address gets 429 for
every request until the minute has passed. Without any credential configured, requests are taken from this
machine only (the process start-up, ``server.py``, refuses to listen elsewhere without credentials unless told
to). Errors are mapped once, by type: a malformed body (``PayloadError``, nesting deeper than ``MAX_JSON_DEPTH``
included) gets 400 with the reason, a body over the size limit (``BodyTooLarge``) 413, an event that cannot be
stored in time (``QueueUnavailable``) 503.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import ipaddress
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from easl_plugin.events import HANDLED_ACTIONS, PayloadError, check_event, parse_webhook
from easl_plugin.writer import EventWriter, QueueUnavailable

log = logging.getLogger("easl.serve")
MODEL_VERSION = "easl-plugin-1"
SECRET_HEADER = "X-EASL-Secret"
_SECRET_KEY = SECRET_HEADER.lower().encode()  # as ASGI spells header names
PUBLIC_PATHS = frozenset({"/health", "/"})
DELIVERY_SOURCE = "label-studio-delivery"  #: source of the rejects that record refused and malformed webhooks
DELIVERY_REFUSED = "refused"  #: location prefix of a webhook refused for its credentials (401)
DELIVERY_MALFORMED = "malformed"  #: location prefix of a webhook refused as malformed (400)
FAILURES_PER_MINUTE = 10  #: failed authentications a client address may make per minute before 429
MAX_JSON_DEPTH = 64  #: deepest nesting of arrays and objects accepted in a body (Label Studio's: < 10)
PARSE_INLINE_BYTES = 64 * 1024  #: larger bodies are parsed in a thread, so the event loop stays free
T = TypeVar("T")


def package_version() -> str:
    """The installed easl-toolkit version (``"unknown"`` when running from a bare source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("easl-toolkit")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class ServiceConfig:
    """Settings of ``easl serve`` (see ``tui/commands/serve.py`` for the command-line flags).

    ``insecure`` allows listening on a non-loopback address without any credential (``server.serve`` refuses
    otherwise) and then takes requests from any address.
    """

    project_path: str
    host: str = "127.0.0.1"
    port: int = 9090
    max_body_bytes: int = 4 * 1024 * 1024
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)
    webhook_secret: str | None = field(default=None, repr=False)
    streaming: int = 0  # 0: batch mode; N > 0: keep N HITs open
    reconcile_interval_s: float = 60.0
    ack_timeout_s: float = 5.0
    api_key: str | None = field(default=None, repr=False)
    ls_url: str | None = None
    insecure: bool = False
    max_connections: int = 2048  # uvicorn answers 503 beyond this many concurrent connections

    @property
    def has_credentials(self) -> bool:
        """Whether ``/webhook`` requires anything (basic auth or the shared secret)."""
        return bool(self.basic_auth) or bool(self.webhook_secret)


class BodyTooLarge(Exception):
    """A request body over the configured limit (answered with 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"body larger than {limit} bytes")
        self.limit = limit


@dataclass
class _Service:
    """What the handlers need, kept in ``app.state.easl``."""

    config: ServiceConfig
    writer: EventWriter
    on_setup: Callable[[dict], None] | None
    status: Callable[[], dict] | None


# ----------------------------------------------------------------------------------------------- authentication


def _digest(value: str | bytes) -> bytes:
    """SHA-256 of a secret: comparing digests takes the same time whatever the lengths."""
    return hashlib.sha256(value.encode("utf-8") if isinstance(value, str) else value).digest()


def _same(given: str | bytes, expected: str | bytes) -> bool:
    """Constant-time comparison of a given secret with the expected one."""
    return hmac.compare_digest(_digest(given), _digest(expected))


def _basic_ok(header: str, creds: tuple[str, str]) -> bool:
    """Whether an ``Authorization`` header carries the expected basic-auth pair (both halves always compared)."""
    if not header.lower().startswith("basic "):
        return False
    try:
        user, _, pw = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return _same(user, creds[0]) & _same(pw, creds[1])


def _is_loopback(address: str | None) -> bool:
    if not address:
        return False
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return address == "localhost"


class FailureLimiter:
    """Failed authentications per client address in a sliding window; an address with ``limit`` failures within
    ``window_s`` seconds is blocked until the oldest of them is ``window_s`` old. At most ``max_clients``
    addresses are tracked (the oldest is forgotten first), so a flood of addresses cannot exhaust memory."""

    def __init__(self, limit: int = FAILURES_PER_MINUTE, window_s: float = 60.0, max_clients: int = 10_000) -> None:
        self.limit, self.window_s, self.max_clients = limit, window_s, max_clients
        self._failures: dict[str, deque] = {}

    def retry_after(self, client: str, now: float | None = None) -> float:
        """Seconds until ``client`` may try again (0 when not blocked)."""
        q = self._failures.get(client)
        if not q:
            return 0.0
        now = time.monotonic() if now is None else now
        while q and now - q[0] >= self.window_s:
            q.popleft()
        if not q:
            del self._failures[client]
            return 0.0
        return self.window_s - (now - q[0]) if len(q) >= self.limit else 0.0

    def failed(self, client: str, now: float | None = None) -> int:
        """Record one failure; returns the failures of ``client`` within the window."""
        now = time.monotonic() if now is None else now
        q = self._failures.pop(client, None) or deque(maxlen=self.limit)
        self._failures[client] = q  # re-inserted: the dict keeps addresses in order of their last failure
        q.append(now)
        while len(self._failures) > self.max_clients:
            del self._failures[next(iter(self._failures))]
        return len(q)


class WebhookToken:
    """The dedicated webhook token that ``easl ls setup`` keeps in the project file (``ls.webhook_token``) and
    gives Label Studio's webhook as its only header: it authorises ``/webhook`` and nothing else. Read again (in a
    thread, at most four times a second) whenever a given token does not match, so a rotation applies at once."""

    def __init__(self, project_path: str) -> None:
        self.project_path = project_path
        self.value: str | None = None
        self.read_at = float("-inf")

    def _read(self) -> str | None:
        from core.store import Project
        from easl_plugin.bookkeeping import KEY_WEBHOOK_TOKEN

        try:
            with Project.open(self.project_path, readonly=True) as project:
                return project.get_meta(KEY_WEBHOOK_TOKEN)
        except Exception:  # a busy or missing file: no token for now, the other credentials still apply
            return None

    async def matches(self, given: bytes) -> bool:
        """Whether ``given`` is the current token (compared in constant time)."""
        if not given:
            return False
        if self.value and _same(given, self.value):
            return True
        if time.monotonic() - self.read_at < 0.25:
            return False
        self.read_at = time.monotonic()
        self.value = await asyncio.to_thread(self._read)
        return bool(self.value) and _same(given, self.value or "")


class AuthMiddleware:
    """ASGI middleware: every request but ``PUBLIC_PATHS`` needs the configured credentials (basic auth; on
    ``/webhook`` also the shared secret), with failures rate-limited per client address; without any credential
    configured (and not ``insecure``), only loopback clients are served."""

    def __init__(self, app, config: ServiceConfig, limiter: FailureLimiter | None = None) -> None:
        self.app = app
        self.config = config
        self.limiter = limiter or FailureLimiter()
        self.token = WebhookToken(config.project_path)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/webhook" and await self._token_ok(scope):
            await self.app(scope, receive, send)
            return
        denied = self._check(scope)
        if denied is not None:
            if scope["path"] == "/webhook" and denied.status_code == 401:
                _record_delivery(scope, DELIVERY_REFUSED, json.loads(bytes(denied.body))["error"])
            await denied(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _token_ok(self, scope) -> bool:
        """A webhook that carries the dedicated webhook token (and whose address is not blocked)."""
        client = (scope.get("client") or ("", 0))[0] or "unknown"
        if self.limiter.retry_after(client) > 0:
            return False
        given = next((v for k, v in scope["headers"] if k == _SECRET_KEY), b"")
        return await self.token.matches(given)

    def _check(self, scope) -> Response | None:
        cfg = self.config
        client = (scope.get("client") or ("", 0))[0] or "unknown"
        wait = self.limiter.retry_after(client)
        if wait > 0:
            return JSONResponse(
                {"error": f"too many failed authentications from this address; try again in {int(wait) + 1} s"},
                429,
                {"Retry-After": str(int(wait) + 1)},
            )
        if not cfg.has_credentials and not cfg.insecure and not _is_loopback(client):
            return JSONResponse(
                {"error": "this service has no credentials configured and serves this machine only"}, 403
            )
        headers = {k: v for k, v in scope["headers"] if k in (b"authorization", _SECRET_KEY)}
        if cfg.basic_auth and not _basic_ok(headers.get(b"authorization", b"").decode("latin-1"), cfg.basic_auth):
            self._failed(client, "wrong or missing basic-auth credentials")
            return JSONResponse({"error": "authentication required"}, 401, {"WWW-Authenticate": 'Basic realm="easl"'})
        if (
            scope["path"] == "/webhook"
            and cfg.webhook_secret is not None
            and not _same(headers.get(_SECRET_KEY, b""), cfg.webhook_secret)
        ):
            self._failed(client, f"missing or wrong {SECRET_HEADER} header")
            return JSONResponse({"error": f"missing or wrong {SECRET_HEADER} header"}, 401)
        return None

    def _failed(self, client: str, why: str) -> None:
        n = self.limiter.failed(client)
        if n == 1:
            log.info("request refused from %s: %s", client, why)
        elif n == self.limiter.limit:
            log.warning("%d failed authentications from %s within a minute: refusing it for a minute", n, client)


# ------------------------------------------------------------------------------------------------- bodies, errors


async def read_body(request: Request, limit: int) -> bytes:
    """The request body; raises ``BodyTooLarge`` as soon as it (or its declared length) exceeds ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _depth_ok(value, limit: int) -> bool:
    """Whether arrays and objects in ``value`` nest at most ``limit`` deep (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        if d > limit:
            return False
        stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return True


def _bounded(parse: Callable[[bytes], T], raw: bytes) -> T:
    """``parse(raw)`` with the nesting depth bounded: deeper bodies are a ``PayloadError``, never a
    RecursionError (the parser's own recursion limit) nor a value that later code cannot walk."""
    too_deep = PayloadError(f"malformed JSON: nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    try:
        value = parse(raw)
    except RecursionError:
        raise too_deep from None
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and not _depth_ok(value, MAX_JSON_DEPTH):
        raise too_deep
    return value


async def parse_body(parse: Callable[[bytes], T], raw: bytes) -> T:
    """``_bounded(parse, raw)``, in a worker thread for large bodies."""
    if len(raw) > PARSE_INLINE_BYTES:
        return await asyncio.to_thread(_bounded, parse, raw)
    return _bounded(parse, raw)


def _load_json(raw: bytes) -> object:
    try:
        return json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError(f"malformed JSON: {exc}") from None


def _store_delivery(path: str, kind: str, reason: str, client: str) -> None:
    from core.store import Project, now

    with Project.open(path) as project:
        project.add_reject(source=DELIVERY_SOURCE, location=f"{kind} webhook from {client} at {now()}", reason=reason)


def _record_delivery(scope, kind: str, reason: str) -> None:
    """Record a refused or malformed webhook in the project file's rejects (the reason and the client address,
    never a credential) in a thread, without delaying the answer, so that ``easl ls status`` counts and shows it.
    Failed authentications are rate-limited per address (``FailureLimiter``), so these writes are few."""
    app = scope.get("app")
    svc = getattr(getattr(app, "state", None), "easl", None)
    if svc is None:
        return
    client = (scope.get("client") or ("", 0))[0] or "unknown"

    def store() -> None:
        try:
            _store_delivery(svc.config.project_path, kind, reason, client)
        except Exception as exc:  # counting a refusal must never fail the service
            log.warning("could not record a %s webhook: %s", kind, exc.__class__.__name__)

    asyncio.get_running_loop().run_in_executor(None, store)


async def _payload_error(request: Request, exc: Exception) -> Response:
    log.info("%s rejected: %s", request.url.path, exc)
    if request.url.path == "/webhook":
        _record_delivery(request.scope, DELIVERY_MALFORMED, str(exc)[:300])
    return JSONResponse({"error": str(exc)}, 400)


async def _body_too_large(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": str(exc)}, 413)


async def _unavailable(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": f"could not queue the event: {exc}"}, 503)


# ------------------------------------------------------------------------------------------------------- routes


def _service(request: Request) -> _Service:
    return request.app.state.easl


async def health(request: Request) -> Response:
    """``GET /health``: the service is up, and its version; nothing else (the figures are on ``/status``)."""
    return JSONResponse(
        {"status": "UP", "version": request.app.state.version, "model_class": "EASL", "model_version": MODEL_VERSION}
    )


async def status(request: Request) -> Response:
    """``GET /status`` (authenticated): the worker's and the writer's figures."""
    svc = _service(request)
    body = {"status": "UP", "version": request.app.state.version, **svc.writer.figures()}
    if svc.status is not None:
        body.update(svc.status())
    return JSONResponse(body)


async def setup(request: Request) -> Response:
    """``POST /setup``: Label Studio connects the backend; answer the model version."""
    svc = _service(request)
    body = await parse_body(_load_json, await read_body(request, svc.config.max_body_bytes))
    if svc.on_setup is not None and isinstance(body, dict):
        await asyncio.to_thread(svc.on_setup, body)
    return JSONResponse({"model_version": await _version(svc.config.project_path)})


async def _version(path: str) -> str:
    """The model version of the project's current iteration (``campaign.model_version``); the package's
    fixed one while the file cannot be read."""
    from easl_plugin.campaign import current_version

    try:
        return await asyncio.to_thread(current_version, path)
    except Exception as exc:  # a busy or missing file must not fail Label Studio's connection check
        log.info("/setup: model version unknown (%s)", exc.__class__.__name__)
        return MODEL_VERSION


async def predict(request: Request) -> Response:
    """``POST /predict``: each task's current estimates and 95% intervals as one prediction
    (``campaign.predict_response``); Label Studio keeps them hidden from annotators."""
    from easl_plugin.campaign import predict_response

    svc = _service(request)
    body = await parse_body(_load_json, await read_body(request, svc.config.max_body_bytes))
    return JSONResponse(await asyncio.to_thread(predict_response, svc.config.project_path, body))


async def versions(request: Request) -> Response:
    """``GET /versions``: the one model version."""
    return JSONResponse({"versions": [MODEL_VERSION]})


async def webhook(request: Request) -> Response:
    """``POST /webhook``: parse, check, store durably, acknowledge (see the module docstring)."""
    t0 = time.perf_counter()
    svc = _service(request)
    raw = await read_body(request, svc.config.max_body_bytes)
    payload = await parse_body(parse_webhook, raw)
    action = payload["action"]
    if action not in HANDLED_ACTIONS:
        return JSONResponse({"status": "ignored", "action": action})
    check_event(payload)
    event_id = await svc.writer.append(action, raw.decode("utf-8"), svc.config.ack_timeout_s)
    return JSONResponse(
        {
            "status": "queued",
            "event_id": event_id,
            "journaled": event_id is None,
            "ms": round(1000 * (time.perf_counter() - t0), 3),
        }
    )


ROUTES = [
    Route("/health", health, methods=["GET"]),
    Route("/", health, methods=["GET"]),
    Route("/status", status, methods=["GET"]),
    Route("/setup", setup, methods=["POST"]),
    Route("/predict", predict, methods=["POST"]),
    Route("/webhook", webhook, methods=["POST"]),
    Route("/versions", versions, methods=["GET"]),
]

EXCEPTION_HANDLERS = {
    PayloadError: _payload_error,
    BodyTooLarge: _body_too_large,
    QueueUnavailable: _unavailable,
}


def build_app(
    config: ServiceConfig,
    *,
    on_event: Callable[[], None] | None = None,
    on_setup: Callable[[dict], None] | None = None,
    status: Callable[[], dict] | None = None,
    writer: EventWriter | None = None,
) -> Starlette:
    """The ASGI application. ``on_event`` is called (in the writer thread) after each commit, ``on_setup`` with
    each ``/setup`` body, ``status`` to add figures to ``/status``. The event writer starts with the app
    (lifespan) and stops with it."""
    writer = writer or EventWriter(config.project_path, on_event or (lambda: None))

    @asynccontextmanager
    async def lifespan(app):
        """Start the event writer with the app and stop it (committing what is queued) with it."""
        await asyncio.to_thread(writer.start)
        try:
            yield
        finally:
            await asyncio.to_thread(writer.stop)

    app = Starlette(routes=ROUTES, lifespan=lifespan, exception_handlers=EXCEPTION_HANDLERS)
    app.state.easl = _Service(config=config, writer=writer, on_setup=on_setup, status=status)
    app.state.version = package_version()
    app.add_middleware(AuthMiddleware, config=config)
    return app
