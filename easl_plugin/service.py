"""The plugin's web service: Label Studio's ML-backend protocol plus a durable webhook queue.

Endpoints (``docs/design.md`` section 7.3, "What Label Studio sends to an ML backend or webhook"):

==============  ==========================================================================================
``GET /health``   ``{"status": "UP", "model_class": "EASL"}`` and nothing else (what Label Studio's check and the
                  ML-backend SDK's answer hold); never needs credentials (Label Studio and supervisors poll it)
``GET /status``   the worker's and the queue's figures (worker PID, linked project, events applied, tasks pushed,
                  acknowledgements waiting, events committed / journaled / failed)
``POST /setup``   ``{"model_version": "iteration-<k>"}``; remembers the Label Studio project id if none is configured
``POST /predict`` ``{"results": [...]}``: each task's current estimates and 95% intervals (``campaign.py``),
                  hidden from annotators by the project's settings
``POST /webhook`` validates the JSON, stores a handled event durably (``writer.py``) and answers once it is
                  stored; a background worker (``worker.py``) applies it
``GET /versions`` ``{"versions": [<the model version /setup answers>]}``
==============  ==========================================================================================

Label Studio posts each webhook once, inside the annotator's submit request, with a 1 s timeout and no retry, so
the acknowledgement must be fast and durable. A handler here only parses, checks and hands the event to the
writer thread (``writer.py``: group commit, a spill journal while the worker or another process holds the file's
write lock, a bounded queue); nothing on the event loop touches the disk or waits for the write lock.

Rooms: this module holds the routes and ``build_app``; their configuration is ``ServiceConfig`` (``config.py``);
authentication is one middleware in ``auth.py`` (every endpoint but ``/health`` and ``/``: optional HTTP basic auth,
on ``/webhook`` the shared secret or the webhook token, compared in constant time, never logged, failures rate-
limited per client address; without any credential, this machine only); request bodies are read and parsed in
``payloads.py`` (size limit, nesting bounded by ``MAX_JSON_DEPTH``); refused and malformed webhooks are recorded by
``deliveries.py``; the process start-up is ``server.py``. Errors are mapped once, by type, here: a malformed body
(``PayloadError``) gets 400 with the reason, a body over the size limit (``BodyTooLarge``) 413, an event that cannot
be stored in time (``QueueUnavailable``) 503.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from easl_toolkit.easl_plugin.auth import AuthMiddleware
from easl_toolkit.easl_plugin.config import ServiceConfig
from easl_toolkit.easl_plugin.deliveries import DELIVERY_MALFORMED, record_delivery
from easl_toolkit.easl_plugin.events import HANDLED_ACTIONS, PayloadError, check_event, parse_webhook
from easl_toolkit.easl_plugin.payloads import BodyTooLarge, load_json, parse_body, read_body
from easl_toolkit.easl_plugin.writer import EventWriter, QueueUnavailable

log = logging.getLogger("easl.serve")
MODEL_VERSION = "easl-plugin-1"


def package_version() -> str:
    """The installed easl-toolkit version (``"unknown"`` when running from a bare source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("easl-toolkit")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class _Service:
    """What the handlers need, kept in ``app.state.easl``."""

    config: ServiceConfig
    writer: EventWriter
    on_setup: Callable[[dict], None] | None
    status: Callable[[], dict] | None


# ------------------------------------------------------------------------------------------------------- errors


async def _payload_error(request: Request, exc: Exception) -> Response:
    log.info("%s rejected: %s", request.url.path, exc)
    if request.url.path == "/webhook":
        record_delivery(request.scope, DELIVERY_MALFORMED, str(exc)[:300])
    return JSONResponse({"error": str(exc)}, 400)


async def _body_too_large(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": str(exc)}, 413)


async def _unavailable(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": f"could not queue the event: {exc}"}, 503)


# ------------------------------------------------------------------------------------------------------- routes


def _service(request: Request) -> _Service:
    return request.app.state.easl


async def health(request: Request) -> Response:
    """``GET /health``: the service is up; nothing else (the version and figures are on ``/status``, the model
    version on ``/setup`` and ``/versions``)."""
    return JSONResponse({"status": "UP", "model_class": "EASL"})


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
    body = await parse_body(load_json, await read_body(request, svc.config.max_body_bytes))
    if svc.on_setup is not None and isinstance(body, dict):
        await asyncio.to_thread(svc.on_setup, body)
    return JSONResponse({"model_version": await _version(svc.config.project_path)})


async def _version(path: str) -> str:
    """The model version of the project's current iteration (``campaign.model_version``); the package's
    fixed one while the file cannot be read."""
    from easl_toolkit.easl_plugin.campaign import current_version

    try:
        return await asyncio.to_thread(current_version, path)
    except Exception as exc:  # a busy or missing file must not fail Label Studio's connection check
        log.info("/setup: model version unknown (%s)", exc.__class__.__name__)
        return MODEL_VERSION


async def predict(request: Request) -> Response:
    """``POST /predict``: each task's current estimates and 95% intervals as one prediction
    (``campaign.predict_response``); Label Studio keeps them hidden from annotators."""
    from easl_toolkit.easl_plugin.campaign import predict_response

    svc = _service(request)
    body = await parse_body(load_json, await read_body(request, svc.config.max_body_bytes))
    return JSONResponse(await asyncio.to_thread(predict_response, svc.config.project_path, body))


async def versions(request: Request) -> Response:
    """``GET /versions``: the one model version, the one ``/setup`` answers."""
    return JSONResponse({"versions": [await _version(_service(request).config.project_path)]})


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
