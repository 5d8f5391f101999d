"""Running the worker (``worker.py``) in its own process for ``easl serve``.

Applying events is numpy/pandas work that holds the Python interpreter for tens of milliseconds at a time; in the
web server's process it would stall the event loop that acknowledges webhooks. In a child process it cannot. The
two processes share only what they must: the write gate (a lock: one writer of the project file at a time), the
wake-up and reconcile signals, the writer's "acknowledgements in flight" flag and last-commit time (for pacing),
and a few counters for ``/status``. The child dies with its parent (``PR_SET_PDEATHSIG`` on Linux, and a parent
watch everywhere), so a killed server never leaves a second writer behind.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any


class SharedFlag:
    """An ``Event``-like flag in shared memory, polled every 10 ms. Unlike ``multiprocessing.Event`` (whose
    ``set`` waits for every sleeper to acknowledge), it cannot hang when the other process dies at any moment."""

    def __init__(self, ctx) -> None:
        self._v = ctx.Value("b", 0, lock=False)

    def set(self) -> None:
        """Raise the flag."""
        self._v.value = 1

    def clear(self) -> None:
        """Lower the flag."""
        self._v.value = 0

    def is_set(self) -> bool:
        """Whether the flag is raised."""
        return bool(self._v.value)

    def wait(self, timeout: float | None = None) -> bool:
        """Until the flag is raised or ``timeout`` seconds passed; returns whether it is raised."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._v.value:
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.01)
        return True


@dataclass(frozen=True)
class ChildSettings:
    """What the child's ``Worker`` is made with (as for ``worker.Worker``), and the logging level of the child."""

    project_path: str
    api_key: str | None
    streaming: int
    reconcile_interval_s: float
    url_override: str | None
    log_level: str


@dataclass(frozen=True)
class Shared:
    """What parent and child share: the write ``gate`` (a lock), the ``wake``, ``reconcile`` and ``stop`` flags
    (:class:`SharedFlag`), the writer's acknowledgements in flight (``busy``) and last commit (``last_commit``,
    ``time.monotonic()``), and the figures the child reports (``applied``, ``pushed``, ``linked``: -1 for none)."""

    gate: Any
    wake: Any  # the three flags: SharedFlag, which the worker uses as it uses threading.Event
    reconcile: Any
    stop: Any
    busy: Any
    last_commit: Any
    applied: Any
    pushed: Any
    linked: Any


class WorkerProcess:
    """The worker in a spawned child process, with the same controls as ``Worker`` (``start``, ``stop``,
    ``notify``, ``reconcile_requested``) plus shared figures (``applied_total``, ``pushed_total``, ``linked_id``).

    Parameters
    ----------
    project_path, api_key, streaming, reconcile_interval_s, url_override
        As for ``worker.Worker``.
    log_level : str
        Logging level of the child.
    """

    def __init__(
        self,
        project_path: str,
        *,
        api_key: str | None,
        streaming: int,
        reconcile_interval_s: float,
        url_override: str | None,
        log_level: str = "info",
    ) -> None:
        # fork (Linux): the child starts at once with the modules already imported, and its semaphores are not
        # tracked as leaks; it must be started before the server opens threads or sockets (see server.serve)
        ctx: Any = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        self.gate = ctx.Lock()
        self.wake = SharedFlag(ctx)
        self.reconcile_requested = SharedFlag(ctx)
        self._stop = SharedFlag(ctx)
        self.busy = ctx.Value("i", 0, lock=False)  # acknowledgements being committed by the writer
        self.last_commit = ctx.Value("d", 0.0, lock=False)  # time.monotonic() of the writer's last commit
        self._applied = ctx.Value("q", 0, lock=False)
        self._pushed = ctx.Value("q", 0, lock=False)
        self._linked = ctx.Value("q", -1, lock=False)
        settings = ChildSettings(
            project_path, api_key, int(streaming), float(reconcile_interval_s), url_override, log_level
        )
        shared = Shared(
            self.gate,
            self.wake,
            self.reconcile_requested,
            self._stop,
            self.busy,
            self.last_commit,
            self._applied,
            self._pushed,
            self._linked,
        )
        self._proc = ctx.Process(
            target=_child_main, name="easl-worker", daemon=True, args=(settings, shared, os.getpid())
        )

    @property
    def applied_total(self) -> int:
        """Events applied so far."""
        return int(self._applied.value)

    @property
    def pushed_total(self) -> int:
        """Tasks pushed so far."""
        return int(self._pushed.value)

    @property
    def linked_id(self) -> int | None:
        """The linked Label Studio project id, once the worker has seen it."""
        return None if self._linked.value < 0 else int(self._linked.value)

    @property
    def pid(self) -> int | None:
        """The child's process id (None before start)."""
        return self._proc.pid

    @property
    def alive(self) -> bool:
        """Whether the child runs."""
        return self._proc.is_alive()

    def start(self) -> None:
        """Start the child (it reconciles first when linked)."""
        self.reconcile_requested.set()
        self._proc.start()

    def notify(self) -> None:
        """Wake the worker (events were committed)."""
        self.wake.set()

    def stop(self) -> None:
        """Ask the child to finish its step and exit; kill it after 60 s."""
        self._stop.set()
        self.wake.set()
        self._proc.join(60)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(10)

    def release(self) -> None:
        """After ``stop``: drop the shared objects so their semaphores are freed now, not reported as leaked
        when the interpreter exits."""
        import gc

        for name in (
            "gate",
            "wake",
            "reconcile_requested",
            "_stop",
            "busy",
            "last_commit",
            "_applied",
            "_pushed",
            "_linked",
        ):
            setattr(self, name, None)
        gc.collect()


def _die_with_parent(parent_pid: int, stop, wake) -> None:
    try:  # Linux: the kernel kills us when the parent dies, even by SIGKILL
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(0)

    def watch() -> None:  # elsewhere: notice re-parenting within half a second
        while not stop.is_set():
            if os.getppid() != parent_pid:
                os._exit(0)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()


def _child_main(settings: ChildSettings, shared: Shared, parent_pid: int) -> None:
    """The child: the worker of ``settings`` on the ``shared`` objects, until ``shared.stop`` (or the parent's
    death)."""
    s = shared
    _die_with_parent(parent_pid, s.stop, s.wake)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the server, which stops us in order
    with contextlib.suppress(OSError):
        os.nice(10)  # background work: the web server (acknowledgements) gets the CPU first
    logging.basicConfig(
        level=getattr(logging, settings.log_level.upper(), logging.INFO),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    from easl_toolkit.easl_plugin.worker import Worker

    worker = Worker(
        settings.project_path,
        api_key=settings.api_key,
        streaming=settings.streaming,
        reconcile_interval_s=settings.reconcile_interval_s,
        url_override=settings.url_override,
        gate=s.gate,
        acks_waiting=lambda: s.busy.value > 0,
    )
    worker.last_ack = lambda: s.last_commit.value
    worker.wake, worker.reconcile_requested, worker._stop = s.wake, s.reconcile, s.stop

    def progress(w: Worker) -> None:
        s.applied.value, s.pushed.value = w.applied_total, w.pushed_total
        s.linked.value = w.linked.project_id if w.linked is not None else -1

    worker.on_progress = progress
    worker._run()
