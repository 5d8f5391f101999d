"""``easl ls setup``: link a project file to a Label Studio project and connect the backend.

Steps (each one idempotent, so running the command again repairs a partial setup):

1. check the API key (``LABEL_STUDIO_API_KEY``: personal access token or legacy token) with ``whoami``;
2. create the Label Studio project with the label config of the engine's method (``label_config.layouts``), or
   attach to the one already linked in the project file or given by ``--project-id`` (its config is checked, or
   set when the project has no tasks yet); predictions stay out of the labelling stream (``show_collab_predictions``
   off) and each task takes one annotation;
3. map tasks already there to HITs (reconciliation), then import the open HITs of the current iteration as
   tasks (the first iteration's on a new project), each with its item permutation in the task data; arrange the
   Data Manager's tabs (that bookkeeping hidden everywhere, the estimates and annotation results in one tab for
   the project manager) and give every task the current estimates as a prediction bound to no control, which
   pre-fills no slider (``campaign.py``);
4. record the link in the project file (``meta``: ``ls.url``, ``ls.project_id``, ``ls.layout``) last, so a
   running ``easl serve`` starts working on the project only once its tasks are in place;
5. connect the backend when ``--backend-url`` is given: as an ML backend (Label Studio then calls its ``/health``
   and ``/setup`` and creates a webhook to ``<url>/webhook``), or, when that fails or ``--connect webhook`` is
   asked for, as a project webhook. The webhook's only header is a dedicated random token (``ls.webhook_token``,
   replaced by ``--rotate-secret``) that authorises webhook delivery and nothing else; an existing backend's URL
   and credentials and the webhook's headers are repaired; Label Studio is then asked to check the connection.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field

from core.errors import UserError
from core.store import Project
from easl_plugin import bookkeeping as bk
from easl_plugin.auth import GENERATED_SECRET_BYTES, MIN_TOKEN_CHARS, SECRET_HEADER
from easl_plugin.campaign import arrange_tabs, sync_predictions
from easl_plugin.client import LabelStudioClient, LabelStudioError
from easl_plugin.push import push
from easl_plugin.reconcile import reconcile
from label_config.layouts import label_config, layout_for_method, validate_label_config

# START_TRAINING is not a project-webhook action (Label Studio sends it to ML backends only)
WEBHOOK_ACTIONS = ["ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED", "TASKS_DELETED"]


@dataclass
class SetupResult:
    """What ``setup_project`` did."""

    ls_project_id: int
    created: bool
    tasks_imported: int
    connection: str = "none"  # "ml-backend" | "webhook" | "none"
    notes: list[str] = field(default_factory=list)


def webhook_token(project: Project, *, rotate: bool = False) -> str:
    """The dedicated webhook token (``ls.webhook_token``): ``GENERATED_SECRET_BYTES`` random bytes (URL-safe base64,
    43 characters), created on first use, replaced when ``rotate`` or when the stored one is shorter than
    ``MIN_TOKEN_CHARS`` (which the service never accepts)."""
    token = bk.get_meta(project, bk.KEY_WEBHOOK_TOKEN)
    if token is None or rotate or len(token) < MIN_TOKEN_CHARS:
        token = secrets.token_urlsafe(GENERATED_SECRET_BYTES)
        bk.set_meta(project, {bk.KEY_WEBHOOK_TOKEN: token})
    return token


def _webhook_headers(token: str) -> dict:
    """The webhook's only header: the dedicated token (never the basic-auth pair nor a Label Studio key, since
    every member of the organisation can read a webhook's headers in Label Studio's settings)."""
    return {SECRET_HEADER: token}


def _ensure_webhook(client: LabelStudioClient, pid: int, url: str, headers: dict, *, create: bool) -> bool:
    """Give the webhook(s) to ``url`` our headers (creating one when ``create``); True when one exists after."""
    found = [w for w in client.webhooks(pid) if str(w.get("url", "")).rstrip("/") == url.rstrip("/")]
    for w in found:  # repair: our headers (replacing any older credential), full payloads, active
        if (w.get("headers") or {}) != headers or not w.get("send_payload", True) or not w.get("is_active", True):
            client.update_webhook(int(w["id"]), headers=headers, send_payload=True, is_active=True)
    if not found and create:
        client.create_webhook(pid, url, headers=headers, actions=WEBHOOK_ACTIONS)
        return True
    return bool(found)


def check_ml_backend(client: LabelStudioClient, backend_id: int, url: str) -> None:
    """Ask Label Studio to check its connection to the backend (it calls ``/health`` and ``/setup``); raise
    ``LabelStudioError`` with Label Studio's reason when it cannot reach the backend or is refused."""
    m = client.ml_backend(backend_id)
    state = str(m.get("state") or "")
    if state in ("CO", "TR", "PR"):
        return
    why = str(m.get("error_message") or "").strip().splitlines()
    detail = why[-1][:300] if why else "no reason given"
    what = "cannot reach" if state == "DI" else "is refused by or gets an error from"
    raise LabelStudioError(
        f"Label Studio {what} the backend at {url} (state {state or '?'}: {detail}); check "
        "that `easl serve` runs there and that EASL_BASIC_AUTH is the same for both commands"
    )


def setup_project(
    project: Project,
    client: LabelStudioClient,
    *,
    title: str | None = None,
    ls_project_id: int | None = None,
    backend_url: str | None = None,
    connect: str = "auto",
    basic_auth: tuple[str, str] | None = None,
    wording: dict[str, str | None] | None = None,
    rotate_secret: bool = False,
    stop_at: float | None = None,
) -> SetupResult:
    """Run the set-up steps (module docstring) and return what was done. ``wording`` (``question``,
    ``low_label``, ``high_label``; None keeps, "" removes) changes what annotators are shown; ``stop_at`` sets
    the stop target of an aware project (``core.store.settings.Settings.set_stop_at``; refused, before anything else is
    done, for the other methods). Raises ``UserError`` (incl. ``LabelStudioError``) with the reason when a step
    fails."""
    notes: list[str] = []
    if stop_at is not None:
        before_stop = project.set_stop_at(stop_at)
        if before_stop != stop_at:
            notes.append(
                f"stop target set to {stop_at:g} (was {'none' if before_stop is None else f'{before_stop:g}'})"
            )
    client.whoami()
    hyper = project.hyper
    layout = layout_for_method(hyper.method, hyper.hit_size, hyper.score_min, hyper.score_max)
    before = project.wording()
    wanted = {k: v for k, v in (wording or {}).items() if v is not None}
    words = before._replace(**{k: (v.strip() or None) for k, v in wanted.items()})
    xml = label_config(layout, **words._asdict())
    validate_label_config(xml, layout)
    linked_id = bk.get_meta(project, bk.KEY_PROJECT_ID)
    linked_url = bk.get_meta(project, bk.KEY_URL)
    if ls_project_id is None and linked_id is not None and linked_url == client.url:
        ls_project_id = int(linked_id)
    created = False
    settings = {"show_collab_predictions": False, "maximum_annotations": 1, "evaluate_predictions_automatically": False}
    if ls_project_id is None:
        p = client.create_project(
            title=title or f"EASL {project.path.rsplit('/', 1)[-1]}",
            label_config=xml,
            description=f"Scores collected with EASL ({hyper.method}, {layout.n} per task)",
            **settings,
        )
        ls_project_id, created = int(p["id"]), True
    else:
        p = client.project(ls_project_id)
        try:
            validate_label_config(p.get("label_config") or "", layout)
        except UserError as exc:
            if int(p.get("task_number") or 0) > 0:
                raise UserError(
                    f"Label Studio project {ls_project_id} has tasks and a label config that does not "
                    f"fit this project ({layout.kind}, {layout.n} items); create a new one instead"
                ) from exc
        if (p.get("label_config") or "").strip() != xml.strip():
            # the same controls (names, ranges) as before: Label Studio keeps every annotation valid; it refuses
            # (with its reason) a config that would invalidate one, and then nothing is changed here
            try:
                client.update_project(ls_project_id, label_config=xml)
            except LabelStudioError as exc:
                raise UserError(
                    f"Label Studio project {ls_project_id} refused the new label config (question and "
                    f"scale labels), so nothing was changed: {exc}"
                ) from exc
        client.update_project(ls_project_id, **settings, **({"title": title} if title else {}))
    if words != before:
        project.set_wording(**words._asdict())
    if not created:
        rep = reconcile(project, client, ls_project_id, layout)
        if rep.ingested:
            notes.append(f"applied {rep.ingested} annotation(s) already in Label Studio")
    n = push(project, client, ls_project_id, layout, project.next_hits())
    arrange_tabs(client, ls_project_id)
    sync_predictions(project, client, ls_project_id, layout, refresh_backends=False, via_backend=False)
    bk.set_meta(
        project,
        {bk.KEY_URL: client.url, bk.KEY_PROJECT_ID: str(ls_project_id), bk.KEY_LAYOUT: json.dumps(layout.to_dict())},
    )
    result = SetupResult(ls_project_id=ls_project_id, created=created, tasks_imported=n, notes=notes)
    if backend_url:
        result.connection = connect_backend(
            client,
            ls_project_id,
            backend_url,
            connect=connect,
            token=webhook_token(project, rotate=rotate_secret),
            basic_auth=basic_auth,
            notes=notes,
        )
    return result


def connect_backend(
    client: LabelStudioClient,
    pid: int,
    backend_url: str,
    *,
    connect: str = "auto",
    token: str,
    basic_auth: tuple[str, str] | None = None,
    notes: list[str] | None = None,
) -> str:
    """Connect the backend as an ML backend (``connect`` = ``ml`` or ``auto``) or a project webhook; returns
    ``"ml-backend"`` or ``"webhook"``."""
    notes = notes if notes is not None else []
    base = backend_url.rstrip("/")
    hook = f"{base}/webhook"
    headers = _webhook_headers(token)
    if connect in ("auto", "ml"):
        backends = client.ml_backends(pid)
        known = [m for m in backends if str(m.get("url", "")).rstrip("/") == base] or [
            m for m in backends if m.get("title") == "EASL"
        ]
        if known:  # repair: the URL and the credentials Label Studio uses to reach the backend
            for m in known:
                try:
                    client.update_ml_backend(int(m["id"]), project_id=pid, url=base, basic_auth=basic_auth)
                except LabelStudioError as exc:
                    what = (
                        "cannot reach" if "health check failed" in str(exc) else "is refused by or gets an error from"
                    )
                    detail = re.sub(r"<[^>]+>", "", str(exc))[:400]
                    raise LabelStudioError(
                        f"Label Studio {what} the backend at {base} ({detail}); check that `easl "
                        "serve` runs there with the same EASL_BASIC_AUTH"
                    ) from exc
        else:
            try:
                known = [client.add_ml_backend(pid, base, title="EASL", basic_auth=basic_auth)]
            except LabelStudioError as exc:
                if connect == "ml":
                    raise
                notes.append(f"ML backend registration failed ({exc}); connected a project webhook instead")
        if known:
            # the ML backend's automatic webhook carries no headers: give it ours (or create it if missing)
            _ensure_webhook(client, pid, hook, headers, create=True)
            for m in known:
                check_ml_backend(client, int(m["id"]), base)
            return "ml-backend"
    _ensure_webhook(client, pid, hook, headers, create=True)
    return "webhook"
