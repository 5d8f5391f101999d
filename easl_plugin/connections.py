"""Connections of ``easl serve``: every client gets bounded time and room, so idle or slow clients cannot starve
the others (``/health`` and ``/webhook`` keep answering while hundreds of connections hang half-sent).

uvicorn bounds none of this by itself: it waits forever for a request's head and body, an idle connection that sent
one byte after a response is never closed, and its ``limit_concurrency`` answers 503 to every new request, including
``/health``, once idle connections fill it, while the operating system's file-descriptor limit (often 1,024) makes
``accept`` fail below it. :func:`guarded` wraps uvicorn's protocol class (httptools or h11) with:

- a **header timeout**: a request's head (request line and headers) must arrive within ``header_timeout_s`` of the
  connection's opening or of the previous response, and be at most ``MAX_HEAD_BYTES``; else the connection is
  closed (this also bounds idle keep-alive connections);
- a **body timeout**: the whole body must arrive within ``body_timeout_s`` of the head; else the connection is
  closed and the handler sees a disconnect (``auth.AuthMiddleware`` ends it quietly);
- a **connection cap** (``max_connections``, below the descriptor limit, :func:`connection_cap`): a connection beyond
  it closes the connection that has waited longest for a request head (idle or half-sent, never one whose request
  is being served); when every connection is being served, the new one gets 503 and is closed.

Nothing here logs more than one short line per connection, at debug level.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("easl.serve")
MAX_HEAD_BYTES = 64 * 1024  #: largest request head (request line and headers) accepted
RESERVED_FDS = 64  #: file descriptors kept for the project file, the journal, the worker's pipes, logs
_BUSY_BODY = b"too many connections\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
    % (
        len(_BUSY_BODY),
        _BUSY_BODY,
    )
)


@dataclass(frozen=True)
class ConnectionLimits:
    """Time and room per client connection (module docstring)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: int = 5
    max_connections: int = 2048


def connection_cap(wanted: int) -> int:
    """``wanted``, lowered to what the process's file-descriptor limit allows (``RLIMIT_NOFILE`` less
    ``RESERVED_FDS``). The soft limit is first raised to the hard one, as servers commonly do."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = max(soft, min(hard if hard != resource.RLIM_INFINITY else 1 << 16, 1 << 16))
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return max(1, min(int(wanted), soft - RESERVED_FDS))


class _Guard:
    """The per-connection timers and state; a mixin over uvicorn's protocol classes (``self.cycle``,
    ``self.transport``, ``self.connections``, ``self.loop`` are theirs)."""

    limits: ConnectionLimits
    cycle: Any
    transport: Any
    connections: Any
    loop: Any

    def _guard_init(self) -> None:
        self._head_since: float | None = time.monotonic()  # waiting for a request head since (None: serving one)
        self._head_bytes = 0
        self._seen: Any = None  # the request cycle last seen
        self._timer: asyncio.TimerHandle | None = None
        self._arm(self.limits.header_timeout_s, "no complete request head in time")

    def _arm(self, seconds: float, why: str) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expire, why)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, why: str) -> None:
        self._timer = None
        if not self.transport.is_closing():
            log.debug("closing a connection from %s: %s", _peer(self), why)
            self.transport.close()

    def _follow(self) -> None:
        """Re-arm the timers after the parser or the app moved on (data arrived, a response completed)."""
        cycle = self.cycle
        if self.transport.is_closing():
            self._disarm()
        elif cycle is not None and cycle is not self._seen and not cycle.response_complete:
            self._seen, self._head_since, self._head_bytes = cycle, None, 0  # a new request: its head is in
            if cycle.more_body:
                self._arm(self.limits.body_timeout_s, "no complete request body in time")
            else:
                self._disarm()
        elif cycle is not None and not cycle.response_complete:
            if not cycle.more_body and self._timer is not None and self._head_since is None:
                self._disarm()  # the body is complete: the app has it
        elif self._head_since is None:  # the response went out: wait for the next head
            self._head_since, self._head_bytes = time.monotonic(), 0
            self._arm(self.limits.header_timeout_s, "no complete request head in time")

    def _make_room(self) -> bool:
        """At the cap, close the connection that has waited longest for a head; False when none can go."""
        open_ = [c for c in self.connections if not c.transport.is_closing()]
        if len(open_) <= self.limits.max_connections:
            return True
        idle = [c for c in open_ if c is not self and getattr(c, "_head_since", None) is not None]
        if not idle:
            return False
        victim = min(idle, key=lambda c: c._head_since)
        log.debug("connection cap reached: closing an idle connection from %s", _peer(victim))
        victim._head_since = None
        victim.transport.close()
        return True


def _peer(conn: Any) -> str:
    client = getattr(conn, "client", None)
    return str(client[0]) if client else "unknown"


def guarded(base: type[asyncio.Protocol], limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's protocol class ``base`` with the header and body timeouts and the connection cap of ``limits``
    (module docstring); pass it as ``uvicorn.Config(http=...)``."""

    class Guarded(_Guard, base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._guard_init()
            if not self._make_room():
                log.debug("connection cap reached and every connection busy: 503 to %s", _peer(self))
                self._head_since = None
                self._disarm()
                transport.write(_BUSY)
                transport.close()

        def data_received(self, data: bytes) -> None:
            if self._head_since is not None and (self.cycle is None or not self.cycle.more_body):
                self._head_bytes += len(data)  # (the rest of a body answered early is no head: not counted)
            super().data_received(data)
            self._follow()
            if self._head_since is not None and self._head_bytes > MAX_HEAD_BYTES:
                self._expire(f"a request head over {MAX_HEAD_BYTES} bytes")

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self._head_since = None
            super().connection_lost(exc)

    Guarded.limits = limits
    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


def protocol_class(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """The guarded form of uvicorn's default HTTP protocol (httptools when installed, else h11)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return guarded(AutoHTTPProtocol, limits)
