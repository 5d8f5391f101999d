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
   replaced by ``--rotate-secret``, and whenever the backend's URL changes) that authorises webhook delivery and
   nothing else; an existing backend's URL and credentials and the webhook's headers are repaired, and every
   other webhook to an easl backend is deleted (``webhooks.py``: one webhook per backend); the backend's URL
   (``ls.backend_url``) and the project's easl webhooks (``ls.webhooks``) are recorded; Label Studio is then
   asked to check the connection.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, cast

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.store import Project
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.auth import GENERATED_SECRET_BYTES, MIN_TOKEN_CHARS
from easl_toolkit.easl_plugin.campaign import arrange_tabs, sync_predictions
from easl_toolkit.easl_plugin.client import LabelStudioClient, LabelStudioError
from easl_toolkit.easl_plugin.push import push
from easl_toolkit.easl_plugin.reconcile import reconcile
from easl_toolkit.easl_plugin.webhooks import hook_url, known_hook_urls, list_hooks, record_hooks, replace_hooks
from easl_toolkit.label_config.layouts import Layout, label_config, layout_for, validate_label_config

#: the Label Studio project's settings: predictions out of the labelling stream, one annotation per task
SETTINGS: dict[str, Any] = {
    "show_collab_predictions": False,
    "maximum_annotations": 1,
    "evaluate_predictions_automatically": False,
}


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
    token = project.get_meta(bk.KEY_WEBHOOK_TOKEN)
    if token is None or rotate or len(token) < MIN_TOKEN_CHARS:
        token = secrets.token_urlsafe(GENERATED_SECRET_BYTES)
        project.set_meta({bk.KEY_WEBHOOK_TOKEN: token})
    return token


def check_ml_backend(client: LabelStudioClient, backend_id: int, url: str) -> None:
    """Ask Label Studio to check its connection to the backend (it calls ``/health`` and ``/setup``); raise
    ``LabelStudioError`` with Label Studio's reason when it cannot reach the backend or is refused."""
    m = client.ml.get(backend_id)
    state = str(m.state or "")
    if state in ("CO", "TR", "PR"):
        return
    why = str(m.error_message or "").strip().splitlines()
    detail = why[-1][:300] if why else "no reason given"
    what = "cannot reach" if state == "DI" else "is refused by or gets an error from"
    raise LabelStudioError(
        f"Label Studio {what} the backend at {url} (state {state or '?'}: {detail}); check "
        "that `easl serve` runs there and that EASL_BASIC_AUTH is the same for both commands"
    )


@dataclass(frozen=True)
class ProjectChoice:
    """The Label Studio project to set up and what annotators are shown: its ``title`` (None: keep, or a default for
    a new one), the project id (None: the linked one, else a new project), the ``wording`` (``question``,
    ``low_label``, ``high_label``; None keeps, "" removes), and the stop target of an aware project (``stop_at``:
    ``core.store.settings.Settings.set_stop_at``; refused, before anything else is done, for the other methods)."""

    title: str | None = None
    ls_project_id: int | None = None
    wording: dict[str, str | None] | None = None
    stop_at: float | None = None


@dataclass(frozen=True)
class BackendLink:
    """How Label Studio reaches the backend (``easl serve``) at ``url``: as an ML backend or a webhook (``connect``:
    ``auto``, ``ml`` or ``webhook``; :func:`connect_backend`), with the ``basic_auth`` credentials of the backend, and
    whether to rotate the webhook token (``rotate_secret``)."""

    url: str
    connect: str = "auto"
    basic_auth: tuple[str, str] | None = None
    rotate_secret: bool = False


def setup_project(
    project: Project,
    client: LabelStudioClient,
    choice: ProjectChoice = ProjectChoice(),
    backend: BackendLink | None = None,
) -> SetupResult:
    """Run the set-up steps (module docstring) on the Label Studio project of ``choice`` (:class:`ProjectChoice`),
    connecting the ``backend`` when given (:class:`BackendLink`), and return what was done. Raises ``EaslError``
    (incl. ``LabelStudioError``) with the reason when a step fails."""
    title, ls_project_id, wording, stop_at = choice.title, choice.ls_project_id, choice.wording, choice.stop_at
    notes: list[str] = []
    if stop_at is not None:
        _set_stop_at(project, stop_at, notes)
    client.users.whoami()  # step 1: the key
    hyper = project.hyper
    layout = layout_for(project.model.answer, hyper.hit_size, hyper.score_min, hyper.score_max)
    before = project.wording()
    wanted = {k: v for k, v in (wording or {}).items() if v is not None}
    words = before._replace(**{k: (v.strip() or None) for k, v in wanted.items()})
    xml = label_config(layout, **words._asdict())
    validate_label_config(xml, layout)
    if ls_project_id is None and project.get_meta(bk.KEY_URL) == client.url:
        linked = project.get_meta(bk.KEY_PROJECT_ID)
        ls_project_id = None if linked is None else int(linked)
    created = ls_project_id is None
    if ls_project_id is None:
        ls_project_id = _create_project(project, client, title, xml, layout)
    else:
        _attach_project(client, ls_project_id, title, xml, layout)
    if words != before:
        project.set_wording(**words._asdict())
    n = _fill_project(project, client, ls_project_id, layout, created, notes)
    result = SetupResult(ls_project_id=ls_project_id, created=created, tasks_imported=n, notes=notes)
    if backend is not None and backend.url:
        base = backend.url.rstrip("/")
        was = project.get_meta(bk.KEY_BACKEND_URL)
        moved = was is not None and was != base
        if moved:
            notes.append(f"backend moved from {was} to {base}: its webhook replaced, the webhook token rotated")
        token = webhook_token(project, rotate=backend.rotate_secret or moved)
        result.connection = connect_backend(
            client, ls_project_id, backend, token, notes=notes, known_urls=known_hook_urls(project)
        )
        project.set_meta({bk.KEY_BACKEND_URL: base})
        record_hooks(project, list_hooks(client, ls_project_id, project))
    return result


def _set_stop_at(project: Project, stop_at: float, notes: list[str]) -> None:
    """Set an aware project's stop target, noting a change."""
    before = project.set_stop_at(stop_at)
    if before != stop_at:
        notes.append(f"stop target set to {stop_at:g} (was {'none' if before is None else f'{before:g}'})")


def _create_project(project: Project, client: LabelStudioClient, title: str | None, xml: str, layout: Layout) -> int:
    """Step 2, a new Label Studio project; returns its id."""
    p = client.projects.create(
        title=title or f"EASL {project.path.rsplit('/', 1)[-1]}",
        label_config=xml,
        description=f"Scores collected with EASL ({project.hyper.method}, {layout.n} per task)",
        **SETTINGS,
    )
    return cast(int, p.id)


def _attach_project(client: LabelStudioClient, pid: int, title: str | None, xml: str, layout: Layout) -> None:
    """Step 2, an existing Label Studio project: its label config checked (set when it has no tasks yet, or
    when only the wording changed) and its settings made ours."""
    p = client.projects.get(pid)
    try:
        validate_label_config(p.label_config or "", layout)
    except EaslError as exc:
        if int(p.task_number or 0) > 0:
            raise EaslError(
                f"Label Studio project {pid} has tasks and a label config that does not "
                f"fit this project ({layout.kind}, {layout.n} items); create a new one instead"
            ) from exc
    if (p.label_config or "").strip() != xml.strip():
        # the same controls (names, ranges) as before: Label Studio keeps every annotation valid; it refuses
        # (with its reason) a config that would invalidate one, and then nothing is changed here
        try:
            client.projects.update(pid, label_config=xml)
        except LabelStudioError as exc:
            raise EaslError(
                f"Label Studio project {pid} refused the new label config (question and "
                f"scale labels), so nothing was changed: {exc}"
            ) from exc
    named: dict[str, Any] = {"title": title} if title else {}
    client.projects.update(pid, **SETTINGS, **named)


def _fill_project(
    project: Project, client: LabelStudioClient, pid: int, layout: Layout, created: bool, notes: list[str]
) -> int:
    """Steps 3 and 4: reconcile an attached project, import the open HITs, arrange the tabs, give every task its
    prediction, then record the link. Returns how many tasks were imported."""
    if not created:
        rep = reconcile(project, client, pid, layout)
        if rep.ingested:
            notes.append(f"applied {rep.ingested} annotation(s) already in Label Studio")
    n = len(push(project, client, pid, layout, project.next_hits()))
    arrange_tabs(client, pid)
    sync_predictions(project, client, pid, layout, refresh_backends=False, via_backend=False)
    project.set_meta({bk.KEY_URL: client.url, bk.KEY_PROJECT_ID: str(pid), bk.KEY_LAYOUT: json.dumps(layout.to_dict())})
    return n


def connect_backend(
    client: LabelStudioClient,
    pid: int,
    backend: BackendLink,
    token: str,
    *,
    notes: list[str] | None = None,
    known_urls: set[str] | frozenset[str] = frozenset(),
) -> str:
    """Connect the ``backend`` as an ML backend (``backend.connect`` = ``ml`` or ``auto``) or a project webhook;
    returns ``"ml-backend"`` or ``"webhook"``. Exactly one easl webhook is left, at the backend's ``/webhook`` with
    ``token`` (``webhooks.replace_hooks``; ``known_urls``: the ``/webhook`` addresses of earlier backends)."""
    notes = notes if notes is not None else []
    base = backend.url.rstrip("/")
    former: set[str] = set()
    known = _ml_backends(client, pid, backend, notes, former) if backend.connect in ("auto", "ml") else []
    # the ML backend's automatic webhook carries no headers: give it ours (or create it if missing); the webhooks
    # of former addresses go
    done = replace_hooks(client, pid, hook_url(base), token, {*known_urls, *(hook_url(u) for u in former)})
    if done["deleted"]:
        notes.append(f"deleted {done['deleted']} webhook(s) to a former easl backend")
    for backend_id in known:
        check_ml_backend(client, backend_id, base)
    return "ml-backend" if known else "webhook"


def _ml_backends(
    client: LabelStudioClient, pid: int, backend: BackendLink, notes: list[str], former: set[str]
) -> list[int]:
    """The ids of our ML backends on the project: the known ones repaired (URL and the credentials Label Studio
    uses to reach the backend; their former URLs are added to ``former``), else a new one; none when it could not
    be added and ``backend.connect`` is ``auto``."""
    base, connect, basic_auth = backend.url.rstrip("/"), backend.connect, backend.basic_auth
    auth = (
        {"auth_method": "BASIC_AUTH", "basic_auth_user": basic_auth[0], "basic_auth_pass": basic_auth[1]}
        if basic_auth
        else {}
    )
    backends = client.ml.list(project=pid)
    known = [m for m in backends if str(m.url or "").rstrip("/") == base] or [m for m in backends if m.title == "EASL"]
    for m in known:
        if str(m.url or "").rstrip("/") != base:
            former.add(str(m.url or "").rstrip("/"))
        try:
            # the project goes with them: Label Studio 1.23 checks the connection on PATCH and fails with HTTP 500
            # when the body has no project
            client.ml.update(int(m.id), project=pid, url=base, **(auth or {"auth_method": "NONE"}))
        except LabelStudioError as exc:
            what = "cannot reach" if "health check failed" in str(exc) else "is refused by or gets an error from"
            detail = re.sub(r"<[^>]+>", "", str(exc))[:400]
            raise LabelStudioError(
                f"Label Studio {what} the backend at {base} ({detail}); check that `easl "
                "serve` runs there with the same EASL_BASIC_AUTH"
            ) from exc
    if known:
        return [int(m.id) for m in known]
    try:
        return [int(client.ml.create(project=pid, url=base, title="EASL", is_interactive=False, **auth).id)]
    except LabelStudioError as exc:
        if connect == "ml":
            raise
        notes.append(f"ML backend registration failed ({exc}); connected a project webhook instead")
        return []
