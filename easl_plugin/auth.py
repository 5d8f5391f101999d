"""Authentication of the plugin's web service: one ASGI middleware (``AuthMiddleware``) in front of every route.

Who may call what (``endpoint_policy``):

==================  =============================================================================================
``/health``, ``/``  anyone (it says only that the service is up and the model class Label Studio checks)
``/webhook``        the dedicated webhook token that ``easl ls setup`` keeps in the project file (``WebhookToken``),
                    or every configured webhook credential: the shared secret (``SECRET_HEADER``) and basic auth.
                    Always a credential, from any address (loopback too, ``insecure`` too): 401 without one
``/status``,        basic auth; the webhook secret does not authenticate them. Without basic auth configured, this
``/setup``, ...     machine only (``server.check_exposure`` refuses a non-loopback address then, unless insecure)
==================  =============================================================================================

Without basic auth configured (and not ``insecure``), the reading endpoints are served to this machine only, and a
request that a proxy relayed (a ``Forwarded``, ``X-Forwarded-For`` or ``X-Real-IP`` header) is not from this
machine. ``/webhook`` is the one endpoint that writes into the project, so a local process never writes without a
credential.
Secrets are compared in constant time (``hmac.compare_digest`` on SHA-256 digests) and never logged; user-chosen
ones below a strength floor are refused at start-up (``check_secrets``), the generated ones are
``GENERATED_SECRET_BYTES`` random bytes. A refused webhook is recorded in the project file (``deliveries.py``).

Failed attempts are limited without ever refusing correct credentials (``FailureLimiter``): a request that carries
the right credentials always passes, whatever else comes from its address (Label Studio shares 127.0.0.1 with every
local process). Only the wrong attempts are limited: the first ``FAILURES_PER_MINUTE`` of an address within a
minute are answered 401 at once; each further one gets 429 after ``FAILURE_PENALTY_S`` seconds, so a client that
waits for its answers learns at most ``FAILURES_PER_MINUTE + 60 / FAILURE_PENALTY_S`` guesses a minute per
connection, and the connection cap (``connections.py``) bounds its connections.

A client that goes away in the middle of its request ends it quietly (one debug line, no traceback).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import ipaddress
import logging
import time
from collections import deque

from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response

from easl_toolkit.core.errors import EaslError
from easl_toolkit.easl_plugin.config import ServiceConfig
from easl_toolkit.easl_plugin.deliveries import DELIVERY_REFUSED, record_delivery
from easl_toolkit.easl_plugin.payloads import client_address

log = logging.getLogger("easl.serve")
SECRET_HEADER = "X-EASL-Secret"
_SECRET_KEY = SECRET_HEADER.lower().encode()  # as ASGI spells header names
PUBLIC_PATHS = frozenset({"/health", "/"})
FAILURES_PER_MINUTE = 10  #: wrong attempts of a client address per minute answered at once (401)
FAILURE_PENALTY_S = 1.0  #: delay of the answer (429) to each further wrong attempt within the minute
GENERATED_SECRET_BYTES = 32  #: random bytes of every secret the toolkit generates (256 bits)
MIN_TOKEN_CHARS = 32  #: shortest webhook token accepted (a generated one has 43 characters)
MIN_SECRET_CHARS = 12  #: shortest user-chosen secret (password, webhook secret) accepted
MIN_DISTINCT_CHARS = 8  #: fewest distinct characters in a user-chosen secret


class WeakSecret(EaslError):
    """A user-chosen secret (``what``: e.g. the ``EASL_BASIC_AUTH`` password) below the strength floor."""

    def __init__(self, what: str, problem: str) -> None:
        super().__init__(
            f"{what} is too weak: {problem} (use at least {MIN_SECRET_CHARS} characters, {MIN_DISTINCT_CHARS} of "
            "them different, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(24))'`)"
        )
        self.what = what


def secret_problem(secret: str, *, user: str | None = None) -> str | None:
    """Why a user-chosen secret is below the floor (None when it is not): fewer than ``MIN_SECRET_CHARS``
    characters, fewer than ``MIN_DISTINCT_CHARS`` distinct ones, or containing the user name. A floor, not a
    strength estimate: it refuses what a short dictionary or a keyboard walk would find first."""
    if len(secret) < MIN_SECRET_CHARS:
        return f"it has {len(secret)} characters"
    if len(set(secret)) < MIN_DISTINCT_CHARS:
        return f"it has only {len(set(secret))} distinct characters"
    if user and user.casefold() in secret.casefold():
        return "it contains the user name"
    return None


def check_secrets(*, basic_auth: tuple[str, str] | None, webhook_secret: str | None) -> None:
    """Raise ``WeakSecret`` for a configured password or webhook secret below the floor (``secret_problem``)."""
    if basic_auth is not None:
        problem = secret_problem(basic_auth[1], user=basic_auth[0])
        if problem:
            raise WeakSecret("the EASL_BASIC_AUTH password", problem)
    if webhook_secret is not None:
        problem = secret_problem(webhook_secret)
        if problem:
            raise WeakSecret("EASL_WEBHOOK_SECRET", problem)


def _digest(value: str | bytes) -> bytes:
    """SHA-256 of a secret: comparing digests takes the same time whatever the lengths."""
    return hashlib.sha256(value.encode("utf-8") if isinstance(value, str) else value).digest()


def _same(given: str | bytes, expected: str | bytes) -> bool:
    """Constant-time comparison of a given secret with the expected one."""
    return hmac.compare_digest(_digest(given), _digest(expected))


def _basic_ok(header: bytes, creds: tuple[str, str]) -> bool:
    """Whether an ``Authorization`` header (raw bytes) carries the expected basic-auth pair (both halves always
    compared). Anything malformed (not ``Basic``, not base64, not UTF-8, non-ASCII bytes) is simply not it."""
    if header[:6].lower() != b"basic ":
        return False
    try:
        user, _, pw = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return False
    return _same(user, creds[0]) & _same(pw, creds[1])


def _is_loopback(address: str | None) -> bool:
    if not address:
        return False
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return address == "localhost"


_RELAY_HEADERS = frozenset({b"forwarded", b"x-forwarded-for", b"x-real-ip"})


def _relayed(scope) -> bool:
    """Whether a request came through a proxy (it carries a forwarding header): a proxy on this machine makes every
    client look local, so such a request is never "from this machine"."""
    return any(k in _RELAY_HEADERS for k, _ in scope["headers"])


class FailureLimiter:
    """Wrong attempts per client address in a sliding window (``window_s``): ``failed`` records one and says how
    many the address made within the window. It never blocks anything by itself: the middleware answers the
    attempts beyond ``limit`` with 429 after ``penalty_s``, and passes correct credentials whatever the count. At
    most ``max_clients`` addresses are tracked (the oldest is forgotten first), so a flood of addresses cannot
    exhaust memory."""

    def __init__(
        self,
        limit: int = FAILURES_PER_MINUTE,
        window_s: float = 60.0,
        max_clients: int = 10_000,
        penalty_s: float = FAILURE_PENALTY_S,
    ) -> None:
        self.limit, self.window_s, self.max_clients, self.penalty_s = limit, window_s, max_clients, penalty_s
        self._failures: dict[str, deque] = {}

    def retry_after(self, client: str, now: float | None = None) -> float:
        """Seconds until ``client``'s wrong attempts are answered at once again (0 when they are now)."""
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
        """Record one wrong attempt; returns the wrong attempts of ``client`` within the window, this one
        included (at most ``limit``: the window keeps the last ``limit``)."""
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
    thread, at most four times a second) whenever a given token does not match, so a rotation applies at once. A
    stored token shorter than ``MIN_TOKEN_CHARS`` is never accepted (``easl ls setup`` replaces it)."""

    def __init__(self, project_path: str) -> None:
        self.project_path = project_path
        self.value: str | None = None
        self.read_at = float("-inf")
        self._reading = asyncio.Lock()  # one read at a time: the requests that arrive meanwhile wait for its value

    def _read(self) -> str | None:
        from easl_toolkit.core.store import Project
        from easl_toolkit.easl_plugin.bookkeeping import KEY_WEBHOOK_TOKEN

        try:
            with Project.open(self.project_path, readonly=True) as project:
                token = project.get_meta(KEY_WEBHOOK_TOKEN)
        except Exception:  # a busy or missing file: no token for now, the other credentials still apply
            return None
        return token if token and len(token) >= MIN_TOKEN_CHARS else None

    async def matches(self, given: bytes) -> bool:
        """Whether ``given`` is the current token (compared in constant time)."""
        if not given:
            return False
        if self.value and _same(given, self.value):
            return True
        async with self._reading:
            if self.value and _same(given, self.value):  # read by the request this one waited for
                return True
            if time.monotonic() - self.read_at < 0.25:
                return False
            self.read_at = time.monotonic()
            self.value = await asyncio.to_thread(self._read)
        return bool(self.value) and _same(given, self.value or "")


class AuthMiddleware:
    """ASGI middleware: who may call what (module docstring), wrong attempts limited per client address, and a
    client that goes away mid-request ended quietly."""

    def __init__(self, app, config: ServiceConfig, limiter: FailureLimiter | None = None) -> None:
        self.app = app
        self.config = config
        self.limiter = limiter or FailureLimiter()
        self.token = WebhookToken(config.project_path)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            denied = None if scope["path"] in PUBLIC_PATHS else await self._check(scope)
            if denied is None:
                await self.app(scope, receive, send)
            else:
                await denied(scope, receive, send)
        except ClientDisconnect:  # its answer would go nowhere; one short line, never a traceback
            log.debug(
                "%s %s: the client went away before its request was complete", client_address(scope), scope["path"]
            )

    async def _check(self, scope) -> Response | None:
        """None when the request may pass, else the answer: 403 (this machine only), 401 or 429 (wrong
        credentials)."""
        cfg = self.config
        client = client_address(scope)
        webhook = scope["path"] == "/webhook"
        headers = {k: v for k, v in scope["headers"] if k in (b"authorization", _SECRET_KEY)}
        if webhook and await self.token.matches(headers.get(_SECRET_KEY, b"")):
            return None
        needs_basic = bool(cfg.basic_auth)
        needs_secret = webhook and cfg.webhook_secret is not None
        if webhook and not needs_basic and not needs_secret:  # a write always needs a credential, on loopback too
            why = f"missing or wrong {SECRET_HEADER} header (the webhook token of `easl ls setup`)"
            return await self._refuse(scope, client, why, {"error": why}, {})
        if not needs_basic and not needs_secret:
            if cfg.insecure or (_is_loopback(client) and not _relayed(scope)):
                return None
            what = "no basic-auth credentials (EASL_BASIC_AUTH)"
            return JSONResponse({"error": f"this service has {what} configured and serves this machine only"}, 403)
        if needs_basic and not _basic_ok(headers.get(b"authorization", b""), cfg.basic_auth or ("", "")):
            why, answer = "wrong or missing basic-auth credentials", {"error": "authentication required"}
            extra = {"WWW-Authenticate": 'Basic realm="easl"'}
        elif needs_secret and not _same(headers.get(_SECRET_KEY, b""), cfg.webhook_secret or ""):
            why, answer, extra = (
                f"missing or wrong {SECRET_HEADER} header",
                {"error": f"missing or wrong {SECRET_HEADER} header"},
                {},
            )
        else:
            return None
        return await self._refuse(scope, client, why, answer, extra)

    async def _refuse(self, scope, client: str, why: str, answer: dict, extra: dict) -> Response:
        """The answer to a wrong attempt: 401 at once for the first ``limit`` of the address within the window,
        else 429 after ``penalty_s``."""
        slow = self.limiter.retry_after(client) > 0
        n = self.limiter.failed(client)
        if not slow:
            if n == 1:
                log.info("request refused from %s: %s", client, why)
            elif n == self.limiter.limit:
                log.warning(
                    "%d wrong attempts from %s within a minute: its further wrong attempts are answered slowly "
                    "(correct credentials still pass)",
                    n,
                    client,
                )
            if scope["path"] == "/webhook":
                record_delivery(scope, DELIVERY_REFUSED, answer["error"])
            return JSONResponse(answer, 401, extra)
        await asyncio.sleep(self.limiter.penalty_s)
        wait = int(self.limiter.retry_after(client)) + 1
        return JSONResponse(
            {"error": f"too many wrong attempts from this address; wrong ones are answered slowly for {wait} s"},
            429,
            {"Retry-After": str(wait), **extra},
        )
