"""Label Studio's API for the plugin: label-studio-sdk's client (``LabelStudio``) with one-sentence errors.

The SDK makes every request and does the authentication. Two kinds of API key exist (``docs/design.md`` section
7.2, "Tokens"), and the SDK tells them apart by shape:

- a personal access token (PAT) is a JWT refresh token: the SDK exchanges it at ``POST /api/token/refresh/`` for
  a short-lived access token sent as ``Authorization: Bearer <access>``, renewed when it expires;
- a legacy token (40 hex characters) is sent as ``Authorization: Token <key>``; organisations created without
  ``LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true`` refuse it.

What is ours is the wording. The SDK raises ``ApiError`` (status and body) for a refused request and lets httpx's
errors through; here every answer of 400 or more (an httpx response hook) and every transport error (the
client's transport) becomes a ``LabelStudioError``: one sentence that says which key kind failed and why, or
that the server cannot be reached, never the key itself and never a traceback. Requests are not retried
(``max_retries=0``): a retried import after a lost answer would create its tasks twice. Two calls are methods
here because they hold a rule: ``import_tasks`` checks that every task was created, ``export_all`` decodes the
export that the SDK hands over as bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

import httpx
from label_studio_sdk.client import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from easl_toolkit.core.errors import EaslError

JWT_RE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
PAT = "personal access token"
LEGACY = "legacy token"
NEW_PAT = "it may be expired, revoked or from another server: create a new one in Account & Settings"


class LabelStudioError(EaslError):
    """Label Studio refused a request or could not be reached."""


def token_kind(key: str) -> str:
    """``"personal access token"`` for a JWT-shaped key, else ``"legacy token"``."""
    return PAT if JWT_RE.match(key.strip()) else LEGACY


def _detail(body: object, text: str = "") -> str:
    """What Label Studio said, from its JSON ``body`` (``detail``, ``validation_errors``, ...) or its ``text``."""
    if isinstance(body, dict):
        if body.get("validation_errors"):
            return f"{body.get('detail', 'invalid')}: {body['validation_errors']}"[:400]
        for k in ("detail", "message", "error"):
            if k in body:
                return str(body[k])[:300]
    return (str(body) if body is not None else text.strip())[:300]


def _legacy_why(detail: str) -> str:
    if "legacy" in detail.lower() and "disabled" in detail.lower():
        return (
            f"{detail}; use a personal access token instead, or enable legacy tokens for the "
            "organisation (LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true when it is created)"
        )
    return (
        f"{detail} (the key has the shape of a legacy token, 40 hex characters; a personal access "
        "token is a long JWT with two dots: check which one LABEL_STUDIO_API_KEY holds)"
    )


class _Transport(httpx.HTTPTransport):
    """httpx's transport, with an unreachable server worded as one sentence."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except httpx.TransportError as exc:
            raise LabelStudioError(f"cannot reach Label Studio at {self.url}: {exc.__class__.__name__}") from None


class LabelStudioClient(LabelStudio):
    """label-studio-sdk's client for one server, its errors worded (module docstring).

    Parameters
    ----------
    url : str
        Base URL, e.g. ``http://127.0.0.1:8080``.
    api_key : str
        A personal access token or a legacy token (kind detected by shape, see ``token_kind``).
    timeout : float
        Seconds per HTTP request.
    """

    def __init__(self, url: str, api_key: str, *, timeout: float = 30.0) -> None:
        if not url or not url.startswith(("http://", "https://")):
            raise LabelStudioError(f"Label Studio URL {url!r} must start with http:// or https://")
        if not api_key or not api_key.strip():
            raise LabelStudioError(
                "no Label Studio API key: set LABEL_STUDIO_API_KEY to a personal access token "
                "or a legacy token (Account & Settings in Label Studio)"
            )
        self.url = url.rstrip("/")
        self.kind = token_kind(api_key)
        http = httpx.Client(
            timeout=timeout,
            follow_redirects=True,
            transport=_Transport(self.url),
            event_hooks={"response": [self._check]},
        )
        try:
            super().__init__(base_url=self.url, api_key=api_key.strip(), httpx_client=http, max_retries=0)
        except ApiError as exc:  # the SDK reads a PAT's expiry before any request
            why = _detail(exc.body).rstrip(".")
            raise LabelStudioError(f"the {PAT} cannot be used: {why}; create a new one in Account & Settings") from None

    def __repr__(self) -> str:  # never show the key
        return f"LabelStudioClient({self.url!r}, kind={self.kind!r})"

    def _check(self, r: httpx.Response) -> None:
        """The response hook: a ``LabelStudioError`` for every answer of 400 or more."""
        if r.status_code < 400:
            return
        r.read()
        try:
            detail = _detail(r.json())
        except ValueError:
            detail = _detail(None, r.text) or r.reason_phrase
        code, path = r.status_code, r.request.url.path
        if path.endswith("/api/token/refresh/"):
            raise LabelStudioError(f"the {PAT} was rejected by {self.url} (HTTP {code}: {detail}); {NEW_PAT}")
        if code == 401:
            why = _legacy_why(detail) if self.kind == LEGACY else detail
            raise LabelStudioError(f"the {self.kind} was rejected by {self.url} (HTTP {code}): {why}")
        raise LabelStudioError(f"Label Studio {r.request.method} {path} failed (HTTP {code}): {detail}")

    def import_tasks(self, project_id: int, tasks: list[dict]) -> list[int]:
        """Import tasks (``[{"data": ..., "meta": ...}]``); returns the new task ids in order."""
        if not tasks:
            return []
        answer = self.projects.import_tasks(int(project_id), request=cast(Any, tasks), return_task_ids=True)
        ids = [int(t) for t in getattr(answer, "task_ids", None) or []]
        if len(ids) != len(tasks):
            raise LabelStudioError(f"Label Studio imported {len(ids)} of {len(tasks)} tasks into project {project_id}")
        return ids

    def export_all(self, project_id: int) -> list[dict]:
        """Every task with its annotations (skipped ones included) and drafts, in one call
        (``/export?download_all_tasks``)."""
        chunks = self.projects.exports.download_sync(int(project_id), export_type="JSON", download_all_tasks=True)
        return json.loads(b"".join(chunks) or b"[]")
