"""Process start-up of ``easl serve``: the web app (``service.py``) under uvicorn, the event writer thread
(``writer.py``) and the worker in a child process (``worker_process.py``).

Two things here keep acknowledgements fast under a burst (``bench/bench_plugin.py``):

- the objects that exist after start-up (numpy, pandas, the Label Studio SDK: some 100,000) are frozen out of
  the garbage collector (``gc.freeze``). Otherwise every full collection walks them all and stops the event loop,
  and every request in flight with it, for 50-230 ms on this class of machine;
- the worker, whose numpy work would hold the interpreter for tens of milliseconds at a time, runs in its own
  process, niced.

A service that would take webhooks from other machines without any credential is refused
(``UnprotectedAddress``), unless ``ServiceConfig.insecure`` says that this is intended.
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import logging
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from core.errors import EaslError
from easl_plugin.service import ServiceConfig, build_app
from easl_plugin.worker_process import WorkerProcess
from easl_plugin.writer import EventWriter

log = logging.getLogger("easl.serve")


class UnprotectedAddress(EaslError):
    """The service was asked to listen on a non-loopback address (``host``) with no credential configured:
    anyone who can reach that address could post webhooks into the project."""

    def __init__(self, host: str) -> None:
        super().__init__(
            f"refusing to listen on {host} without credentials: any machine that can reach it could "
            "post annotations into the project (set a webhook secret or basic-auth credentials, or "
            "listen on 127.0.0.1)"
        )
        self.host = host


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
    """Raise ``UnprotectedAddress`` when ``config`` would take unauthenticated webhooks from other machines."""
    if not config.insecure and not config.has_credentials and not is_loopback_host(config.host):
        raise UnprotectedAddress(config.host)


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


def serve(config: ServiceConfig, *, log_level: str = "info", access_log: bool = False) -> None:
    """Run the service until SIGINT/SIGTERM: uvicorn (one process, one event loop) with the event writer thread,
    and the worker (``worker.py``) in a child process (``worker_process.py``), on the project file at
    ``config.project_path``.

    Raises ``UnprotectedAddress`` before anything starts when ``config.host`` is not a loopback address, no
    credential is configured and ``config.insecure`` is false.
    """
    check_exposure(config)
    import uvicorn

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

    def on_setup(body: dict) -> None:
        """Label Studio (re)connected the backend: reconcile soon."""
        log.info("Label Studio called /setup for project %s", str(body.get("project", "?")).split(".")[0])
        worker.reconcile_requested.set()
        worker.notify()

    def status() -> dict:
        """Worker figures for ``/status``."""
        return {
            "linked_project": worker.linked_id,
            "worker_alive": worker.alive,
            "worker_pid": worker.pid,
            "events_applied": worker.applied_total,
            "tasks_pushed": worker.pushed_total,
        }

    app = build_app(config, on_setup=on_setup, status=status, writer=writer)
    app.router.lifespan_context = _with_worker(app.router.lifespan_context, worker)
    gc.collect()
    gc.freeze()  # see the module docstring: full collections then walk only what the service allocates
    try:
        uvicorn.run(
            app,
            host=config.host,
            port=config.port,
            log_level=log_level,
            access_log=access_log,
            workers=1,
            limit_concurrency=config.max_connections,
            timeout_graceful_shutdown=10,
        )
    finally:
        del app, writer  # the last references to the shared objects, before they are released
        worker.release()
