"""A small Label Studio REST client for the plugin: projects, tasks, annotations, webhooks, ML backends.

Two kinds of API key exist (``docs/design.md`` section 7.2, "Tokens"):

- a personal access token (PAT) is a JWT refresh token: it is exchanged at ``POST /api/token/refresh/`` for a
  short-lived access token sent as ``Authorization: Bearer <access>`` (renewed when it expires);
- a legacy token (40 hex characters) is sent as ``Authorization: Token <key>``; organisations created without
  ``LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true`` refuse it.

Errors say which kind failed and why; the key itself never appears in a message or a log line.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import requests

from core.errors import UserError

JWT_RE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
ACCESS_TTL_S = 240.0  # Label Studio's access tokens live 5 minutes; renew a minute early


class LabelStudioError(UserError):
    """Label Studio refused a request or could not be reached."""


def token_kind(key: str) -> str:
    """``"personal access token"`` for a JWT-shaped key, else ``"legacy token"``."""
    return "personal access token" if JWT_RE.match(key.strip()) else "legacy token"


def _detail(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text.strip()[:200] or resp.reason
    if isinstance(body, dict):
        if body.get("validation_errors"):
            return f"{body.get('detail', 'invalid')}: {body['validation_errors']}"[:400]
        for k in ("detail", "message", "error"):
            if k in body:
                return str(body[k])[:300]
    return str(body)[:300]


class LabelStudioClient:
    """Authenticated access to one Label Studio server.

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
        self._key = api_key.strip()
        self.kind = token_kind(self._key)
        self.timeout = timeout
        self._session = requests.Session()
        self._lock = threading.Lock()
        self._access: str | None = None
        self._access_at = 0.0

    def __repr__(self) -> str:  # never show the key
        return f"LabelStudioClient({self.url!r}, kind={self.kind!r})"

    # ---- authentication -------------------------------------------------------------------------------------
    def _auth_header(self, *, renew: bool = False) -> str:
        if self.kind == "legacy token":
            return f"Token {self._key}"
        with self._lock:
            if renew or self._access is None or time.monotonic() - self._access_at > ACCESS_TTL_S:
                try:
                    r = self._session.post(
                        f"{self.url}/api/token/refresh/", json={"refresh": self._key}, timeout=self.timeout
                    )
                except requests.RequestException as exc:
                    raise LabelStudioError(
                        f"cannot reach Label Studio at {self.url}: {exc.__class__.__name__}"
                    ) from exc
                body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
                if r.status_code != 200 or not isinstance(body, dict) or "access" not in body:
                    raise LabelStudioError(
                        f"the personal access token was rejected by {self.url} (HTTP {r.status_code}: {_detail(r)}); "
                        "it may be expired, revoked or from another server: create a new one in Account & Settings"
                    )
                self._access = body["access"]
                self._access_at = time.monotonic()
            return f"Bearer {self._access}"

    def _auth_error(self, r: requests.Response) -> LabelStudioError:
        detail = _detail(r)
        if self.kind == "legacy token":
            why = detail
            if "legacy" in detail.lower() and "disabled" in detail.lower():
                why = (
                    f"{detail}; use a personal access token instead, or enable legacy tokens for the "
                    "organisation (LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true when it is created)"
                )
            else:
                why = (
                    f"{detail} (the key has the shape of a legacy token, 40 hex characters; a personal access "
                    "token is a long JWT with two dots: check which one LABEL_STUDIO_API_KEY holds)"
                )
            return LabelStudioError(f"the legacy token was rejected by {self.url} (HTTP {r.status_code}): {why}")
        return LabelStudioError(
            f"the personal access token was rejected by {self.url} (HTTP {r.status_code}): {detail}"
        )

    def request(self, method: str, path: str, *, ok: tuple[int, ...] = (200, 201, 204), **kw: Any) -> Any:
        """One API call; returns the decoded JSON body (``None`` when empty). Raises ``LabelStudioError``."""
        url = f"{self.url}{path}"
        for attempt in range(2):
            headers = {"Authorization": self._auth_header(renew=attempt > 0)}
            try:
                r = self._session.request(method, url, headers=headers, timeout=self.timeout, **kw)
            except requests.RequestException as exc:
                raise LabelStudioError(f"cannot reach Label Studio at {self.url}: {exc.__class__.__name__}") from exc
            if r.status_code == 401 and self.kind == "personal access token" and attempt == 0:
                continue  # access token expired early: renew once
            break
        if r.status_code not in ok:
            if r.status_code == 401:
                raise self._auth_error(r)
            raise LabelStudioError(f"Label Studio {method} {path} failed (HTTP {r.status_code}): {_detail(r)}")
        if not r.content:
            return None
        try:
            return r.json()
        except ValueError:
            return r.text

    # ---- account and projects -------------------------------------------------------------------------------
    def whoami(self) -> dict:
        """The user the key belongs to (checks the key)."""
        return self.request("GET", "/api/current-user/whoami")

    def user(self, user_id: int) -> dict:
        """One user of the organisation (``id``, ``email``, ...)."""
        return self.request("GET", f"/api/users/{int(user_id)}")

    def projects(self) -> list[dict]:
        """All projects visible to the user."""
        return list(self._pages("/api/projects", {}))

    def project(self, project_id: int) -> dict:
        """One project."""
        return self.request("GET", f"/api/projects/{int(project_id)}")

    def create_project(self, **fields: Any) -> dict:
        """Create a project (``title``, ``label_config``, ``show_collab_predictions``, ...)."""
        return self.request("POST", "/api/projects", json=fields)

    def update_project(self, project_id: int, **fields: Any) -> dict:
        """PATCH a project."""
        return self.request("PATCH", f"/api/projects/{int(project_id)}", json=fields)

    # ---- tasks and annotations ------------------------------------------------------------------------------
    def import_tasks(self, project_id: int, tasks: list[dict]) -> list[int]:
        """Import tasks (``[{"data": ..., "meta": ...}]``); returns the new task ids in order."""
        if not tasks:
            return []
        body = self.request(
            "POST", f"/api/projects/{int(project_id)}/import", params={"return_task_ids": "true"}, json=tasks
        )
        ids = [int(t) for t in (body or {}).get("task_ids", [])]
        if len(ids) != len(tasks):
            raise LabelStudioError(f"Label Studio imported {len(ids)} of {len(tasks)} tasks into project {project_id}")
        return ids

    def _pages(self, path: str, params: dict, *, page_size: int = 500) -> Iterator[dict]:
        page = 1
        while True:
            body = self.request("GET", path, params={**params, "page": page, "page_size": page_size}, ok=(200, 404))
            if body is None or (
                isinstance(body, dict) and body.get("detail") and "tasks" not in body and "results" not in body
            ):
                return  # 404 past the last page
            rows: list = (body.get("tasks", body.get("results", [])) if isinstance(body, dict) else body) or []
            yield from rows
            if not isinstance(body, dict) or len(rows) < page_size or ("next" in body and not body.get("next")):
                return
            page += 1

    def tasks(self, project_id: int) -> list[dict]:
        """Every task of a project with its data and annotations (fields=all)."""
        return list(self._pages("/api/tasks", {"project": int(project_id), "fields": "all"}))

    def task(self, task_id: int) -> dict:
        """One task."""
        return self.request("GET", f"/api/tasks/{int(task_id)}")

    def annotations(self, task_id: int) -> list[dict]:
        """The annotations of one task (including skipped ones)."""
        return self.request("GET", f"/api/tasks/{int(task_id)}/annotations") or []

    def export_all(self, project_id: int) -> list[dict]:
        """Every task with its annotations (skipped ones included) in one call: ``/export?download_all_tasks``."""
        return (
            self.request(
                "GET",
                f"/api/projects/{int(project_id)}/export",
                params={"exportType": "JSON", "download_all_tasks": "true"},
            )
            or []
        )

    def delete_task(self, task_id: int) -> None:
        """Delete one task."""
        self.request("DELETE", f"/api/tasks/{int(task_id)}")

    # ---- webhooks and ML backends ---------------------------------------------------------------------------
    def webhooks(self, project_id: int) -> list[dict]:
        """The webhooks of a project."""
        return self.request("GET", "/api/webhooks", params={"project": int(project_id)}) or []

    def create_webhook(
        self, project_id: int, url: str, *, headers: dict | None = None, actions: list[str] | None = None
    ) -> dict:
        """A project webhook that posts full payloads for ``actions`` (all actions when None)."""
        body = {
            "project": int(project_id),
            "url": url,
            "send_payload": True,
            "send_for_all_actions": not actions,
            "headers": headers or {},
            "is_active": True,
        }
        if actions:
            body["actions"] = actions
        return self.request("POST", "/api/webhooks", json=body)

    def update_webhook(self, webhook_id: int, **fields: Any) -> dict:
        """PATCH a webhook (e.g. its ``headers``)."""
        return self.request("PATCH", f"/api/webhooks/{int(webhook_id)}", json=fields)

    def ml_backends(self, project_id: int) -> list[dict]:
        """ML backends connected to a project."""
        return self.request("GET", "/api/ml", params={"project": int(project_id)}) or []

    def ml_backend(self, backend_id: int) -> dict:
        """One ML backend; Label Studio checks the connection (``/health``, ``/setup``) before answering, so its
        ``state`` (``CO`` connected, ``DI`` unreachable, ``ER`` error) and ``error_message`` are current."""
        return self.request("GET", f"/api/ml/{int(backend_id)}")

    def update_ml_backend(
        self, backend_id: int, *, project_id: int, url: str, basic_auth: tuple[str, str] | None
    ) -> dict:
        """Set an ML backend's URL and credentials (basic auth, or none). The project goes with them: Label Studio
        1.23 checks the connection on PATCH and fails with HTTP 500 when the body has no ``project``."""
        body: dict = {"project": int(project_id), "url": url}
        if basic_auth:
            body.update(
                {"auth_method": "BASIC_AUTH", "basic_auth_user": basic_auth[0], "basic_auth_pass": basic_auth[1]}
            )
        else:
            body.update({"auth_method": "NONE"})
        return self.request("PATCH", f"/api/ml/{int(backend_id)}", json=body)

    def add_ml_backend(
        self, project_id: int, url: str, *, title: str, basic_auth: tuple[str, str] | None = None
    ) -> dict:
        """Connect ``url`` as the project's ML backend (Label Studio then calls its /health and /setup)."""
        body: dict = {"project": int(project_id), "url": url, "title": title, "is_interactive": False}
        if basic_auth:
            body.update(
                {"auth_method": "BASIC_AUTH", "basic_auth_user": basic_auth[0], "basic_auth_pass": basic_auth[1]}
            )
        return self.request("POST", "/api/ml", json=body)
