"""The Label Studio project's webhooks that point at an easl backend: exactly one, at the current backend, with the
current token.

``easl ls setup --backend-url URL`` keeps one webhook, to ``URL/webhook``, whose only header is the project's webhook
token (``setup.webhook_token``). A webhook is an easl one (:func:`is_easl_hook`) when it carries the token's header
(``auth.SECRET_HEADER``, whatever its value), or points at the ``/webhook`` of a backend this project was connected
to before (the recorded ``ls.backend_url``, or the former URL of an easl ML backend moved by the setup): Label
Studio creates such a webhook, without headers, when an ML backend is added. :func:`replace_hooks` repairs the one
at the current URL (or creates it) and deletes every other easl webhook, so Label Studio never posts annotations,
and the token, to an address the backend left: whatever listens there later would get both.

What the project's easl webhooks are is recorded in the project file (``ls.webhooks``, :func:`record_hooks`) by the
setup and at every reconciliation, so ``easl ls status`` lists them without calling Label Studio, each with
``stale`` and the reason when it is not the current one (:func:`describe_hooks`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from easl_toolkit.core.store import Project, now
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.auth import SECRET_HEADER

if TYPE_CHECKING:
    from easl_toolkit.easl_plugin.client import LabelStudioClient

#: the Label Studio events the webhook carries (START_TRAINING is not a project-webhook action: Label Studio sends
#: it to ML backends only)
WEBHOOK_ACTIONS = ["ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED", "TASKS_DELETED"]


def hook_url(backend_url: str) -> str:
    """The webhook address of a backend: ``<backend>/webhook``."""
    return f"{backend_url.rstrip('/')}/webhook"


def _field(w: Any, name: str) -> Any:
    return w.get(name) if isinstance(w, dict) else getattr(w, name, None)


def _secret(w: Any) -> str | None:
    """The value of the webhook's token header (any spelling of its name); None without one."""
    headers = _field(w, "headers") or {}
    return next((str(v) for k, v in headers.items() if str(k).lower() == SECRET_HEADER.lower()), None)


def is_easl_hook(w: Any, known_urls: Iterable[str]) -> bool:
    """Whether a Label Studio webhook points at an easl backend: it carries the token header, or its URL is one of
    ``known_urls`` (``/webhook`` addresses of backends this project was connected to)."""
    url = str(_field(w, "url") or "").rstrip("/")
    return _secret(w) is not None or url in {u.rstrip("/") for u in known_urls}


def known_hook_urls(project: Project, extra: Iterable[str] = ()) -> set[str]:
    """The ``/webhook`` addresses of the backends this project was connected to: the recorded ``ls.backend_url``,
    those recorded in ``ls.webhooks``, and ``extra``."""
    urls = set(extra)
    backend = project.get_meta(bk.KEY_BACKEND_URL)
    if backend:
        urls.add(hook_url(backend))
    raw = project.get_meta(bk.KEY_WEBHOOKS)
    urls.update(str(h["url"]) for h in (json.loads(raw)["hooks"] if raw else []))
    return urls


def replace_hooks(
    client: LabelStudioClient, pid: int, url: str, token: str, known_urls: Iterable[str]
) -> dict[str, int]:
    """Leave exactly one easl webhook on Label Studio project ``pid``: at ``url``, with ``token`` as its only header,
    full payloads, the :data:`WEBHOOK_ACTIONS` only, and active (repaired, or created when missing); every other
    easl webhook (:func:`is_easl_hook`, with ``known_urls`` and ``url``) is deleted. Returns ``{"created",
    "repaired", "deleted"}``."""
    headers = {SECRET_HEADER: token}
    ours = [w for w in client.webhooks.list(project=str(pid)) if is_easl_hook(w, {*known_urls, url})]
    here = [w for w in ours if str(w.url or "").rstrip("/") == url.rstrip("/")]
    keep = here[0] if here else None
    out = {"created": 0, "repaired": 0, "deleted": 0}
    for w in ours:
        if w is not keep:
            client.webhooks.delete(int(w.id))
            out["deleted"] += 1
    if keep is None:
        client.webhooks.create(
            project=pid,
            url=url,
            headers=headers,
            actions=WEBHOOK_ACTIONS,
            send_payload=True,
            send_for_all_actions=False,
            is_active=True,
        )
        out["created"] = 1
    elif (
        (keep.headers or {}) != headers
        or keep.send_payload is False
        or keep.is_active is False
        or keep.send_for_all_actions is not False
        or sorted(keep.actions or []) != sorted(WEBHOOK_ACTIONS)
    ):
        # Label Studio posts a webhook inside the request that caused it: only the events easl applies, never
        # every project update, task import or prediction of the campaign (the ML backend's webhook is made
        # for all actions)
        client.webhooks.update(
            int(keep.id),
            headers=headers,
            send_payload=True,
            is_active=True,
            send_for_all_actions=False,
            actions=WEBHOOK_ACTIONS,
        )
        out["repaired"] = 1
    return out


def describe_hooks(hooks: Iterable[Any], backend_url: str | None, token: str | None) -> list[dict[str, Any]]:
    """Each easl webhook as ``{"id", "url", "active", "stale", "stale_reason"}``: stale when it does not point at
    the current backend's ``/webhook`` (``backend_url``), carries another token than ``token``, or is inactive."""
    want = hook_url(backend_url) if backend_url else None
    out = []
    for w in hooks:
        url = str(_field(w, "url") or "").rstrip("/")
        reasons = []
        if want is None:
            reasons.append("no backend URL recorded by easl ls setup")
        elif url != want:
            reasons.append(f"not the current backend ({want})")
        if _secret(w) != token:
            reasons.append("not the current webhook token")
        if _field(w, "is_active") is False:
            reasons.append("inactive")
        row = {"id": _field(w, "id"), "url": url, "active": _field(w, "is_active") is not False}
        out.append({**row, "stale": bool(reasons), "stale_reason": "; ".join(reasons) or None})
    return out


def list_hooks(client: LabelStudioClient, pid: int, project: Project) -> list[dict[str, Any]]:
    """The easl webhooks of Label Studio project ``pid`` as :func:`describe_hooks` gives them."""
    known = known_hook_urls(project)
    hooks = [w for w in client.webhooks.list(project=str(pid)) if is_easl_hook(w, known)]
    return describe_hooks(hooks, project.get_meta(bk.KEY_BACKEND_URL), project.get_meta(bk.KEY_WEBHOOK_TOKEN))


def record_hooks(project: Project, hooks: list[dict[str, Any]]) -> None:
    """Keep the easl webhooks (:func:`list_hooks`) and when they were listed in ``ls.webhooks``."""
    project.set_meta({bk.KEY_WEBHOOKS: json.dumps({"listed_at": now(), "hooks": hooks}, sort_keys=True)})


def recorded_hooks(project: Project) -> dict[str, Any] | None:
    """``{"listed_at", "hooks"}`` as last recorded; None before the first listing."""
    raw = project.get_meta(bk.KEY_WEBHOOKS)
    return json.loads(raw) if raw else None
