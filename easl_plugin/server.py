"""Process start-up of ``easl serve``: the web app (``service.py``) under uvicorn, the event writer thread
(``writer.py``) and the worker in a child process (``worker_process.py``).

Two things here keep acknowledgements fast under a burst (``bench/bench_plugin.py``):

- the objects that exist after start-up (numpy, pandas, the Label Studio SDK: some 100,000) are frozen out of
  the garbage collector (``gc.freeze``). Otherwise every full collection walks them all and stops the event loop,
  and every request in flight with it, for 50-230 ms on this class of machine;
- the worker, whose numpy work would hold the interpreter for tens of milliseconds at a time, runs in its own
  process, niced.

Before anything starts (``prepare``): a service on a non-loopback address needs basic-auth credentials, since they
guard every endpoint but ``/health`` and the webhook secret authenticates ``/webhook`` alone
(``UnprotectedAddress``, unless ``ServiceConfig.insecure`` says that this is intended); user-chosen secrets below
the strength floor are refused (``auth.WeakSecret``); the listening sockets are bound here, so an address in use is
one sentence (``AddressUnavailable``), not uvicorn's start-and-stop log. Each connection gets header and body
timeouts and the connections a cap (``connections.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import ipaddress
import logging
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from easl_toolkit.core.errors import EaslError
from easl_toolkit.easl_plugin.auth import check_secrets
from easl_toolkit.easl_plugin.config import ServiceConfig
from easl_toolkit.easl_plugin.connections import ConnectionLimits, connection_cap, protocol_class
from easl_toolkit.easl_plugin.service import build_app
from easl_toolkit.easl_plugin.worker_process import WorkerProcess
from easl_toolkit.easl_plugin.writer import EventWriter

log = logging.getLogger("easl.serve")


class UnprotectedAddress(EaslError):
    """The service was asked to listen on a non-loopback address (``host``) without basic-auth credentials: any
    machine that can reach it could read the project's figures and estimates (``/status``, ``/predict``) or post
    into it (the webhook secret authenticates ``/webhook`` alone)."""

    def __init__(self, host: str) -> None:
        super().__init__(
            f"refusing to listen on {host} without credentials: every endpoint but /health needs basic-auth "
            "credentials (EASL_BASIC_AUTH) on an address other machines can reach, and the webhook secret "
            "authenticates /webhook alone (set EASL_BASIC_AUTH, or listen on 127.0.0.1)"
        )
        self.host = host


class AddressUnavailable(EaslError):
    """The service cannot listen on ``host:port`` (in use, not an address of this machine, or not allowed)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {reason}")
        self.host, self.port = host, port


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (an address or a name) is reachable from this machine only: every address it resolves
    to is a loopback address. The wildcard addresses (``0.0.0.0``, ``::``, ``""``) are not."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0]).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addresses = {str(info[4][0]) for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def check_exposure(config: ServiceConfig) -> None:
    """Raise ``UnprotectedAddress`` when ``config`` would listen where other machines can reach it without
    basic-auth credentials (which guard every endpoint but ``/health``), unless ``config.insecure``."""
    if not config.insecure and not config.basic_auth and not is_loopback_host(config.host):
        raise UnprotectedAddress(config.host)


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for ``host:port`` (every address the name resolves to, as asyncio would bind them).

    Raises ``AddressUnavailable`` with the reason (e.g. the port is in use) and closes what was bound."""
    socks: list[socket.socket] = []
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted connections
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(2048)
    except OSError as exc:
        for sock in socks:
            sock.close()
        reason = exc.strerror or str(exc)
        raise AddressUnavailable(host, port, reason[:1].lower() + reason[1:]) from None

    # a forked child (the worker) must not keep the port: close its copies (a closed socket's close is a no-op)
    def close_in_child() -> None:
        for sock in socks:
            sock.close()

    os.register_at_fork(after_in_child=close_in_child)
    return socks


def prepare(config: ServiceConfig) -> list[socket.socket]:
    """Every check of ``serve`` that can fail, before anything starts: exposure, secret strength, the address.
    Returns the bound sockets."""
    check_exposure(config)
    check_secrets(basic_auth=config.basic_auth, webhook_secret=config.webhook_secret)
    return bind(config.host, config.port)


def _with_worker(inner: Callable[[Any], Any], worker: WorkerProcess) -> Callable[[Any], Any]:
    """The app's lifespan ``inner`` plus the worker process: started first, watched, stopped last."""

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
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
            async with inner(app):
                yield
        finally:
            stopping.set()
            await asyncio.to_thread(worker.stop)

    return lifespan


def serve(
    config: ServiceConfig,
    *,
    log_level: str = "info",
    access_log: bool = False,
    limits: ConnectionLimits | None = None,
) -> None:
    """Run the service until SIGINT/SIGTERM: uvicorn (one process, one event loop) with the event writer thread,
    and the worker (``worker.py``) in a child process (``worker_process.py``), on the project file at
    ``config.project_path``; each connection under ``limits`` (``connections.py``; by default its timeouts and
    ``config.max_connections``).

    Raises, before anything starts: ``UnprotectedAddress`` when ``config.host`` is not a loopback address, no
    basic-auth credentials are configured and ``config.insecure`` is false; ``auth.WeakSecret`` for a secret below
    the strength floor; ``AddressUnavailable`` when the address cannot be bound (e.g. the port is in use).
    """
    socks = prepare(config)
    import uvicorn

    limits = limits or ConnectionLimits(max_connections=config.max_connections)
    limits = dataclasses.replace(limits, max_connections=connection_cap(limits.max_connections))
    worker = WorkerProcess(
        config.project_path,
        api_key=config.api_key,
        streaming=config.streaming,
        reconcile_interval_s=config.reconcile_interval_s,
        url_override=config.ls_url,
        log_level=log_level,
    )
    writer = EventWriter(
        config.project_path,
        worker.notify,
        gate=worker.gate,
        shared_busy=worker.busy,
        shared_last_commit=worker.last_commit,
    )
    app = build_app(config, on_setup=partial(_on_setup, worker), status=partial(_status, worker), writer=writer)
    app.router.lifespan_context = _with_worker(app.router.lifespan_context, worker)
    gc.collect()
    gc.freeze()  # see the module docstring: full collections then walk only what the service allocates
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            log_level=log_level,
            access_log=access_log,
            workers=1,
            http=protocol_class(limits),
            limit_concurrency=None,  # the connection cap of ``limits`` holds it, without refusing /health
            timeout_keep_alive=limits.keep_alive_s,
            timeout_graceful_shutdown=10,
        )
    )
    try:
        server.run(sockets=socks)
        if not server.started:  # the app's start-up failed; uvicorn has logged why
            raise EaslError("the service did not start (the reason is in the log above)")
    finally:
        for sock in socks:
            sock.close()
        del app, writer, server  # the last references to the shared objects, before they are released
        worker.release()


def _on_setup(worker: WorkerProcess, body: dict) -> None:
    """Label Studio (re)connected the backend: reconcile soon."""
    log.info("Label Studio called /setup for project %s", str(body.get("project", "?")).split(".")[0])
    worker.reconcile_requested.set()
    worker.notify()


def _status(worker: WorkerProcess) -> dict:
    """Worker figures for ``/status``."""
    return {
        "linked_project": worker.linked_id,
        "worker_alive": worker.alive,
        "worker_pid": worker.pid,
        "events_applied": worker.applied_total,
        "tasks_pushed": worker.pushed_total,
    }
