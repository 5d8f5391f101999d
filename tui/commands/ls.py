"""``easl ls setup``: link a project file to Label Studio (create or attach a project, import the first HITs,
connect the backend). The API key comes from ``LABEL_STUDIO_API_KEY`` (never from the command line)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from easl_toolkit.core.errors import EaslError

if TYPE_CHECKING:
    from easl_toolkit.core.store import Project


def basic_auth_from_env() -> tuple[str, str] | None:
    """``EASL_BASIC_AUTH`` as ``user:password`` (None when unset)."""
    raw = os.environ.get("EASL_BASIC_AUTH")
    if not raw:
        return None
    user, sep, pw = raw.partition(":")
    if not sep or not user or not pw:
        raise EaslError("EASL_BASIC_AUTH must be 'user:password'")
    return user, pw


def register(subparsers) -> None:
    """Add the sub-command's parser."""
    p = subparsers.add_parser(
        "ls",
        help="Label Studio: set up a project for the EASL loop",
        description="Label Studio integration. Keys come from the environment: "
        "LABEL_STUDIO_API_KEY (personal access token or legacy token), "
        "EASL_WEBHOOK_SECRET and EASL_BASIC_AUTH (user:password) when the "
        "backend uses them.",
    )
    sub = p.add_subparsers(dest="ls_command", metavar="SUBCOMMAND", required=True)
    s = sub.add_parser(
        "setup",
        help="create or attach a Label Studio project, import the first HITs, connect the backend",
        description="Create (or attach to) a Label Studio project with the label config of the "
        "project's method (one 0-100 slider per item for EASL), predictions hidden "
        "from annotators; import the open HITs as tasks (item order shuffled, the "
        "permutation kept in the task data); with --backend-url, connect `easl serve` "
        "as ML backend (or as a project webhook). Safe to run again.",
    )
    s.add_argument("project", metavar="PROJECT", help="the project file (from easl init)")
    s.add_argument("--url", required=True, help="Label Studio URL, e.g. http://127.0.0.1:8080")
    s.add_argument("--title", help="title of a new Label Studio project (default: 'EASL <file name>')")
    s.add_argument("--project-id", type=int, help="attach to this existing Label Studio project")
    s.add_argument("--backend-url", help="URL at which Label Studio reaches `easl serve`, e.g. http://127.0.0.1:9090")
    s.add_argument(
        "--connect",
        choices=["auto", "ml", "webhook"],
        default="auto",
        help="how to connect the backend: ML backend, project webhook, or ML backend with webhook fallback (default)",
    )
    s.add_argument(
        "--question",
        help="what annotators are asked, shown above every task (stored in the project "
        "file; default: the one given to easl init; '' removes it)",
    )
    s.add_argument("--low-label", help="what the lowest score means, shown at the low end of every slider")
    s.add_argument("--high-label", help="what the highest score means, shown at the high end of every slider")
    s.add_argument(
        "--rotate-secret",
        action="store_true",
        help="replace the webhook's dedicated token (kept in the project file; a running `easl serve` "
        "takes the new one at once)",
    )
    s.add_argument(
        "--stop-at",
        type=float,
        metavar="RHO",
        help="aware projects: set the stop target (no new HITs once the expected Spearman correlation of the "
        "estimates with the truth, minus a safety margin, reaches RHO, e.g. 0.9); refused for other methods",
    )
    s.add_argument("--json", action="store_true", help="print the result as one JSON object")
    s.set_defaults(func=run)
    st = sub.add_parser(
        "status",
        help="the Label Studio link: queue, reconciliation, rejected annotations",
        description="Show the Label Studio project this file is linked to, the webhook queue "
        "(pending, done, failed events, with the errors of failed ones), the last "
        "reconciliation and what it applied, the open HITs (task; idle: seconds since the last activity "
        "Label Studio shows on the task, the clock of --hit-timeout; the annotator of its draft when Label "
        "Studio lists one), annotations whose scores equal a prediction their task carried, every rejected "
        "annotation with its reason, and for aware projects the stopping rule and the per-annotator diagnostics (as "
        "`easl status --annotators`). Reads the project file only (safe while `easl serve` runs).",
    )
    st.add_argument("project", metavar="PROJECT", help="the project file")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.set_defaults(func=run_status)


@contextlib.contextmanager
def _stop_at_refusal(args: argparse.Namespace) -> Iterator[None]:
    """Word the store's refusal of a stop target (``field="stop_at"``) with the option's name."""
    from easl_toolkit.core.errors import HyperParameterError

    try:
        yield
    except HyperParameterError as exc:
        if exc.field != "stop_at":
            raise
        raise EaslError(f"{args.project}: --stop-at {args.stop_at:g} is refused: it needs {exc.need}.") from None


def run(args: argparse.Namespace) -> int:
    """Run the sub-command; returns the exit status."""
    from rich.console import Console

    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin.client import LabelStudioClient
    from easl_toolkit.easl_plugin.setup import BackendLink, ProjectChoice, setup_project

    if args.stop_at is not None and not 0.0 < args.stop_at < 1.0:
        raise EaslError(f"--stop-at {args.stop_at:g}: the target is a Spearman correlation in (0, 1), e.g. 0.9.")
    client = LabelStudioClient(args.url, os.environ.get("LABEL_STUDIO_API_KEY", ""))
    err = Console(stderr=True)
    with (
        Project.open(args.project) as project,
        err.status(f"setting up Label Studio at {client.url} ({client.kind})"),
        _stop_at_refusal(args),
    ):
        choice = ProjectChoice(
            title=args.title,
            ls_project_id=args.project_id,
            wording={"question": args.question, "low_label": args.low_label, "high_label": args.high_label},
            stop_at=args.stop_at,
        )
        backend = BackendLink(args.backend_url, args.connect, basic_auth_from_env(), args.rotate_secret)
        res = setup_project(project, client, choice, backend if args.backend_url else None)
        stop = project.hyper.stop_at  # (None for a model without a stopping rule: Hyper refuses one)
    out = {
        "ls_project_id": res.ls_project_id,
        "created": res.created,
        "tasks_imported": res.tasks_imported,
        "connection": res.connection,
        "url": f"{client.url}/projects/{res.ls_project_id}",
        "notes": res.notes,
        "stop_at": stop,
    }
    if args.json:
        print(json.dumps(out))
    else:
        Console().print(
            f"Label Studio project {res.ls_project_id} ({'created' if res.created else 'attached'}): "
            f"{out['url']}\n  tasks imported: {res.tasks_imported}\n  backend: {res.connection}"
        )
        for note in res.notes:
            Console().print(f"  note: {note}")
    return 0


IDLE_MEANING = (
    "idle: seconds since an annotator was last seen working on the HIT's current task (a draft saved, an "
    "annotation), as of the last reconciliation, measured now; the clock of --hit-timeout for a task somebody worked "
    "on. A task nobody changed anything on has no idle time (Label Studio shows no task locks: it may be open in "
    "someone's browser); waiting: seconds since the task was created or re-issued"
)
NOT_OPENED = "nobody worked on it as far as Label Studio shows (no draft yet; Label Studio shows no task locks)"


def _idle(held: dict | None, created: str | None, now: float) -> dict:
    """``idle_seconds`` and ``idle_since`` (:data:`IDLE_MEANING`; null with ``idle_reason`` for a task nobody
    worked on), and ``waiting_seconds`` of an open HIT; ``held`` is its current task's record in
    ``ls.task_holders``, ``created`` when the HIT was chosen."""
    from easl_toolkit.easl_plugin.campaign import seconds_since

    born = (held or {}).get("created_at") or created
    waiting = seconds_since(born, now) if born else None
    out: dict = {"waiting_seconds": None if waiting is None else round(waiting, 1)}
    active = (held or {}).get("active_at")
    idle = seconds_since(active, now) if active else None
    if idle is None:
        return {"idle_seconds": None, "idle_since": None, "idle_reason": NOT_OPENED, **out}
    return {"idle_seconds": round(idle, 1), "idle_since": active, **out}


def link_status(project: Project) -> dict:
    """The plugin's figures from the project file (``meta``, ``events``, ``rejects``, the open HITs)."""
    import time

    from easl_toolkit.easl_plugin import bookkeeping as bk
    from easl_toolkit.easl_plugin.campaign import HOLDER_UNKNOWN, repeated_predictions
    from easl_toolkit.easl_plugin.deliveries import DELIVERY_MALFORMED, DELIVERY_REFUSED, DELIVERY_SOURCE

    report = project.get_meta(bk.KEY_RECONCILIATION_REPORT)
    pid = project.get_meta(bk.KEY_PROJECT_ID)
    counts = project.event_counts()
    deliveries = project.rejects(source=DELIVERY_SOURCE)[0]
    kinds = {
        k: sum(1 for r in deliveries if (r.location or "").startswith(k))
        for k in (DELIVERY_REFUSED, DELIVERY_MALFORMED)
    }
    failed = project.events("failed")
    problems = [
        {
            "id": r.id,
            "kind": (r.location or "?").split(" ", 1)[0],
            "received_at": r.created_at,
            "reason": r.reason,
            "where": r.location,
        }
        for r in deliveries[-5:]
    ]
    tasks: dict[str, list[str]] = {}
    for tid, hit_id in project.external_map(bk.TASK).items():
        tasks.setdefault(hit_id, []).append(tid)
    now = time.time()
    raw_holders = project.get_meta(bk.KEY_TASK_HOLDERS)
    holders = json.loads(raw_holders) if raw_holders else {}
    open_hits = []
    for h, created in project.open_hit_times().items():
        task_id = int(max(tasks[h], key=int)) if h in tasks else None
        # the HIT's current task only: a re-issued HIT's earlier task names who skipped, had an annotation
        # rejected or abandoned it, not who holds it now
        held = holders.get(str(task_id)) if task_id is not None else None
        row = {"hit_id": h, "task_id": task_id, **_idle(held, created, now)}
        if held and held.get("annotator") and held.get("how") == "draft":
            row["annotator"] = held["annotator"]
            row["annotator_source"] = f"draft at {held['at']}"
        else:
            row["annotator"] = None
            row["annotator_reason"] = (
                "no reconciliation with Label Studio yet" if raw_holders is None else HOLDER_UNKNOWN
            )
        open_hits.append(row)
    out = {
        "linked": pid is not None,
        **webhook_figures(project),
        "queue": _queue_figures(project),
        "url": project.get_meta(bk.KEY_URL),
        "ls_project_id": int(pid) if pid is not None else None,
        "events": counts,
        "deliveries_refused": kinds[DELIVERY_REFUSED],
        "deliveries_malformed": kinds[DELIVERY_MALFORMED],
        "deliveries_failed": len(failed),
        "recent_refused_or_malformed": problems,
        "failed_events": [{"id": e.id, "kind": e.kind, "error": e.note} for e in failed],
        "last_reconciliation": project.get_meta(bk.KEY_LAST_RECONCILIATION),
        "last_reconciliation_report": json.loads(report) if report else None,
        "tasks": len(project.external_map(bk.TASK)),
        "open_hits": open_hits,
        "open_hits_annotator_reason": HOLDER_UNKNOWN,
        "idle_meaning": IDLE_MEANING,
        "repeated_predictions": repeated_predictions(project),
        "rejects": [r.to_json() for r in project.rejects(source=bk.SOURCE)[0]],
    }
    if pid is None:
        out["linked_reason"] = "not linked yet: run easl ls setup"
    out.update(annotator_figures(project))
    return out


def _queue_figures(project: Project) -> dict | None:
    """The queue's depth and what `easl serve` last measured it from (``easl_plugin.queue.QueuePlan``)."""
    from easl_toolkit.easl_plugin.queue import QueuePlan

    plan = QueuePlan.read(project)
    return None if plan is None else dataclasses.asdict(plan)


def webhook_figures(project: Project) -> dict:
    """``webhooks``: every webhook of the Label Studio project that points at an easl backend, as last listed by
    ``easl ls setup`` or a reconciliation (``easl_plugin.webhooks.describe_hooks``: ``id``, ``url``, ``active``,
    ``stale``, ``stale_reason``), with ``webhooks_listed_at``; ``stale_webhooks``: how many are stale (Label
    Studio posts every annotation, with the webhook token, to each of them). Null with ``webhooks_reason`` before
    the first listing."""
    from easl_toolkit.easl_plugin.webhooks import recorded_hooks

    rec = recorded_hooks(project)
    if rec is None:
        return {
            "webhooks": None,
            "webhooks_reason": "not listed yet: easl ls setup --backend-url or a reconciliation lists them",
            "webhooks_listed_at": None,
            "stale_webhooks": None,
        }
    hooks = rec["hooks"]
    return {
        "webhooks": hooks,
        "webhooks_listed_at": rec["listed_at"],
        "stale_webhooks": sum(bool(h["stale"]) for h in hooks),
    }


def annotator_figures(project: Project) -> dict:
    """Aware projects: ``annotators`` (the figures of ``easl status --annotators``) and ``stop`` (the stopping
    rule's); other methods: both null with ``annotators_reason``."""
    from easl_toolkit.core.errors import UnsupportedByModel
    from easl_toolkit.tui.commands.status import annotator_records

    try:
        table = project.annotator_table()
    except UnsupportedByModel as exc:
        reason = f"annotator diagnostics need the method {exc.needs}; this project uses {exc.method}"
        return {"annotators": None, "annotators_reason": reason, "stop": None}
    return {"annotators": annotator_records(table), "stop": project.stop_figures()}


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _print_webhooks(con, out: dict) -> None:
    """The easl webhooks of the Label Studio project, and a warning line for each stale one."""
    if out["webhooks"] is None:
        con.print(f"webhooks to easl: {out['webhooks_reason']}", markup=False)
        return
    con.print(f"webhooks to easl (as listed at {out['webhooks_listed_at']}): {len(out['webhooks'])}", markup=False)
    for h in out["webhooks"]:
        state = f"STALE: {h['stale_reason']}" if h["stale"] else "current"
        con.print(f"  webhook {h['id']} -> {h['url']}: {state}", markup=False)
    if not out["webhooks"]:
        con.print("warning: no webhook to easl: run easl ls setup --backend-url URL", markup=False)
    for h in out["webhooks"]:
        if h["stale"]:
            con.print(
                f"warning: webhook {h['id']} to {h['url']} is stale ({h['stale_reason']}); Label Studio posts "
                "every annotation there with the webhook token: run easl ls setup --backend-url with the current "
                "URL, which deletes it",
                markup=False,
            )


def _summary(out: dict):
    """The first table of ``easl ls status``: the queue of events, the deliveries, the reconciliation, the open
    HITs and the queue's depth."""
    from rich.table import Table

    ev = out["events"]
    summary = Table(show_header=False, box=None, pad_edge=False)
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("webhook events", f"{ev['pending']} pending, {ev['done']} done, {ev['failed']} failed")
    summary.add_row("deliveries refused", str(out["deliveries_refused"]))
    summary.add_row("deliveries malformed", str(out["deliveries_malformed"]))
    summary.add_row("deliveries failed", str(out["deliveries_failed"]))
    summary.add_row("last reconciliation", out["last_reconciliation"] or "never")
    summary.add_row("open HITs", str(len(out["open_hits"])))
    q = out["queue"]
    if q is not None:
        how = "--queue-depth" if q["fixed"] else "measured"
        summary.add_row(
            "queue depth",
            f"{q['depth']} ({how}: {q['active']} active annotators, {q['rate_per_s']:g} submissions/s, "
            f"backend cycle {q['cycle_s']:g} s)",
        )
    return summary


def run_status(args: argparse.Namespace) -> int:
    """``easl ls status``: ``link_status`` as readable tables (or one JSON object with ``--json``)."""
    from rich.console import Console
    from rich.table import Table

    from easl_toolkit.core.store import Project

    with Project.open(args.project, readonly=True) as project:
        out = link_status(project)
    if args.json:
        print(json.dumps(out))
        return 0
    con = Console(soft_wrap=True)
    if not out["linked"]:
        con.print(f"{args.project}: {out['linked_reason']}", markup=False)
    else:
        con.print(
            f"linked to Label Studio project {out['ls_project_id']} at {out['url']} ({out['tasks']} tasks)",
            markup=False,
        )
    con.print(_summary(out))
    if out["open_hits"]:
        t = Table(title="open HITs", title_justify="left")
        for col in ("HIT", "task", "idle", "waiting", "annotator"):
            t.add_column(col)
        for h in out["open_hits"]:
            idle = "not opened" if h["idle_seconds"] is None else _age(h["idle_seconds"])
            t.add_row(h["hit_id"], str(h["task_id"] or "-"), idle, _age(h["waiting_seconds"]), h["annotator"] or "-")
        con.print(t)
        con.print(f"{out['idle_meaning']}; annotator '-': {out['open_hits_annotator_reason']}.", markup=False)
    _print_webhooks(con, out)
    if out["recent_refused_or_malformed"]:
        t = Table(title="last refused or malformed deliveries", title_justify="left")
        for col in ("received", "kind", "reason"):
            t.add_column(col)
        for p in out["recent_refused_or_malformed"]:
            t.add_row(p["received_at"], p["kind"], str(p["reason"]))
        con.print(t)
    if out["stop"] is not None and "systems" in out["stop"]:  # an evaluation campaign's figures
        from easl_toolkit.tui.commands.status import campaign_table

        stop = out["stop"]
        con.print(("stop: reached: " if stop["reached"] else "stop: not reached: ") + stop["reason"], markup=False)
        con.print(campaign_table(stop))
    elif out["stop"] is not None:
        stop = out["stop"]
        target = "none" if stop["target"] is None else f"{stop['target']:.3g}"
        con.print(
            f"expected Spearman {stop['expected_spearman']:.3f}, stop target {target}: "
            + ("reached" if stop["reached"] else "not reached")
            + f" ({stop['reason']})",
            markup=False,
        )
    if out["annotators"] is not None:
        from easl_toolkit.tui.commands.status import annotator_table

        with Project.open(args.project, readonly=True) as project:
            con.print(annotator_table(project.annotator_table()))
    for f in out["failed_events"]:
        con.print(f"failed event {f['id']} ({f['kind']}): {f['error']}", markup=False)
    repeated = out["repeated_predictions"]
    con.print(f"annotations equal to a prediction their task carried: {len(repeated)}")
    for r in repeated:
        con.print(
            f"  annotation {r['annotation_id']} (task {r['task_id']}, HIT {r['hit_id']}) by {r['annotator']}: "
            f"every score equals the estimates shown from {r['prediction_at']}",
            markup=False,
        )
    con.print(f"rejected annotations: {len(out['rejects'])}")
    for r in out["rejects"]:
        con.print(f"  {r['location']}: {r['reason']}", markup=False)
    return 0
