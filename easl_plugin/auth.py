"""Authentication of the plugin's web service: one ASGI middleware (``AuthMiddleware``) in front of every route.

Every endpoint but ``PUBLIC_PATHS`` (``/health`` and ``/``) needs the configured credentials: optional HTTP basic
auth, and on ``/webhook`` the optional shared secret header (``SECRET_HEADER``) beside it, or the dedicated webhook
token that ``easl ls setup`` keeps in the project file (``WebhookToken``). Secrets are compared in constant time
(``hmac.compare_digest`` on SHA-256 digests) and never logged. After ``FAILURES_PER_MINUTE`` failed attempts within a
minute, a client address gets 429 for every request until the minute has passed (``FailureLimiter``). Without any
credential configured (and not ``insecure``), requests are taken from this machine only. A refused webhook is
recorded in the project file (``deliveries.py``).
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
from typing import TYPE_CHECKING

from starlette.responses import JSONResponse, Response

from easl_plugin.deliveries import DELIVERY_REFUSED, record_delivery
from easl_plugin.payloads import client_address

if TYPE_CHECKING:
    from easl_plugin.service import ServiceConfig

log = logging.getLogger("easl.serve")
SECRET_HEADER = "X-EASL-Secret"
_SECRET_KEY = SECRET_HEADER.lower().encode()  # as ASGI spells header names
PUBLIC_PATHS = frozenset({"/health", "/"})
FAILURES_PER_MINUTE = 10  #: failed authentications a client address may make per minute before 429


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
                record_delivery(scope, DELIVERY_REFUSED, json.loads(bytes(denied.body))["error"])
            await denied(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _token_ok(self, scope) -> bool:
        """A webhook that carries the dedicated webhook token (and whose address is not blocked)."""
        if self.limiter.retry_after(client_address(scope)) > 0:
            return False
        given = next((v for k, v in scope["headers"] if k == _SECRET_KEY), b"")
        return await self.token.matches(given)

    def _check(self, scope) -> Response | None:
        cfg = self.config
        client = client_address(scope)
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
