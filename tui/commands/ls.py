"""``easl ls setup``: link a project file to Label Studio (create or attach a project, import the first HITs,
connect the backend). The API key comes from ``LABEL_STUDIO_API_KEY`` (never from the command line)."""
from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING

from core.errors import UserError

if TYPE_CHECKING:
    from core.store import Project


def basic_auth_from_env() -> tuple[str, str] | None:
    """``EASL_BASIC_AUTH`` as ``user:password`` (None when unset)."""
    raw = os.environ.get("EASL_BASIC_AUTH")
    if not raw:
        return None
    user, sep, pw = raw.partition(":")
    if not sep or not user or not pw:
        raise UserError("EASL_BASIC_AUTH must be 'user:password'")
    return user, pw


def register(subparsers) -> None:
    """Add the sub-command's parser."""
    p = subparsers.add_parser("ls", help="Label Studio: set up a project for the EASL loop",
                              description="Label Studio integration. Keys come from the environment: "
                                          "LABEL_STUDIO_API_KEY (personal access token or legacy token), "
                                          "EASL_WEBHOOK_SECRET and EASL_BASIC_AUTH (user:password) when the "
                                          "backend uses them.")
    sub = p.add_subparsers(dest="ls_command", metavar="SUBCOMMAND", required=True)
    s = sub.add_parser("setup", help="create or attach a Label Studio project, import the first HITs, connect "
                                     "the backend",
                       description="Create (or attach to) a Label Studio project with the label config of the "
                                   "project's method (one 0-100 slider per item for EASL), predictions hidden "
                                   "from annotators; import the open HITs as tasks (item order shuffled, the "
                                   "permutation kept in the task data); with --backend-url, connect `easl serve` "
                                   "as ML backend (or as a project webhook). Safe to run again.")
    s.add_argument("project", metavar="PROJECT", help="the project file (from easl init)")
    s.add_argument("--url", required=True, help="Label Studio URL, e.g. http://127.0.0.1:8080")
    s.add_argument("--title", help="title of a new Label Studio project (default: 'EASL <file name>')")
    s.add_argument("--project-id", type=int, help="attach to this existing Label Studio project")
    s.add_argument("--backend-url", help="URL at which Label Studio reaches `easl serve`, e.g. http://127.0.0.1:9090")
    s.add_argument("--connect", choices=["auto", "ml", "webhook"], default="auto",
                   help="how to connect the backend: ML backend, project webhook, or ML backend with webhook "
                        "fallback (default)")
    s.add_argument("--question", help="what annotators are asked, shown above every task (stored in the project "
                                      "file; default: the one given to easl init; '' removes it)")
    s.add_argument("--low-label", help="what the lowest score means, shown at the low end of every slider")
    s.add_argument("--high-label", help="what the highest score means, shown at the high end of every slider")
    s.add_argument("--json", action="store_true", help="print the result as one JSON object")
    s.set_defaults(func=run)
    st = sub.add_parser("status", help="the Label Studio link: queue, reconciliation, rejected annotations",
                        description="Show the Label Studio project this file is linked to, the webhook queue "
                                    "(pending, done, failed events, with the errors of failed ones), the last "
                                    "reconciliation and what it applied, and every rejected annotation with its "
                                    "reason. Reads the project file only (safe while `easl serve` runs).")
    st.add_argument("project", metavar="PROJECT", help="the project file")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.set_defaults(func=run_status)


def run(args: argparse.Namespace) -> int:
    """Run the sub-command; returns the exit status."""
    from rich.console import Console

    from core.store import Project
    from easl_plugin.client import LabelStudioClient
    from easl_plugin.setup import setup_project

    client = LabelStudioClient(args.url, os.environ.get("LABEL_STUDIO_API_KEY", ""))
    secret = os.environ.get("EASL_WEBHOOK_SECRET") or None
    err = Console(stderr=True)
    with Project.open(args.project) as project:
        with err.status(f"setting up Label Studio at {client.url} ({client.kind})"):
            res = setup_project(project, client, title=args.title, ls_project_id=args.project_id,
                                backend_url=args.backend_url, connect=args.connect, webhook_secret=secret,
                                basic_auth=basic_auth_from_env(),
                                wording={"question": args.question, "low_label": args.low_label,
                                         "high_label": args.high_label})
    out = {"ls_project_id": res.ls_project_id, "created": res.created, "tasks_imported": res.tasks_imported,
           "connection": res.connection, "url": f"{client.url}/projects/{res.ls_project_id}", "notes": res.notes}
    if args.json:
        print(json.dumps(out))
    else:
        Console().print(f"Label Studio project {res.ls_project_id} ({'created' if res.created else 'attached'}): "
                        f"{out['url']}\n  tasks imported: {res.tasks_imported}\n  backend: {res.connection}")
        for note in res.notes:
            Console().print(f"  note: {note}")
    return 0


def link_status(project: Project) -> dict:
    """The plugin's figures from the project file (``meta``, ``events``, ``rejects``)."""
    from easl_plugin import bookkeeping as bk

    report = project.get_meta(bk.KEY_RECONCILIATION_REPORT)
    pid = project.get_meta(bk.KEY_PROJECT_ID)
    out = {
        "linked": pid is not None,
        "url": project.get_meta(bk.KEY_URL),
        "ls_project_id": int(pid) if pid is not None else None,
        "events": project.event_counts(),
        "failed_events": [{"id": e.id, "kind": e.kind, "error": e.note} for e in project.events("failed")],
        "last_reconciliation": project.get_meta(bk.KEY_LAST_RECONCILIATION),
        "last_reconciliation_report": json.loads(report) if report else None,
        "tasks": len(project.external_map(bk.TASK)),
        "rejects": [r.to_json() for r in project.rejects(source=bk.SOURCE)[0]],
    }
    if pid is None:
        out["linked_reason"] = "not linked yet: run easl ls setup"
    return out


def run_status(args: argparse.Namespace) -> int:
    """``easl ls status``: print ``link_status``."""
    from rich.console import Console

    from core.store import Project

    with Project.open(args.project, readonly=True) as project:
        out = link_status(project)
    if args.json:
        print(json.dumps(out))
        return 0
    con = Console(soft_wrap=True)
    if not out["linked"]:
        con.print(f"{args.project}: {out['linked_reason']}")
    else:
        con.print(f"linked to Label Studio project {out['ls_project_id']} at {out['url']} ({out['tasks']} tasks)")
    ev = out["events"]
    con.print(f"webhook events: {ev['pending']} pending, {ev['done']} done, {ev['failed']} failed")
    for f in out["failed_events"]:
        con.print(f"  failed event {f['id']} ({f['kind']}): {f['error']}")
    con.print(f"last reconciliation: {out['last_reconciliation'] or 'never'}"
              + (f" {out['last_reconciliation_report']}" if out["last_reconciliation_report"] else ""))
    con.print(f"rejected annotations: {len(out['rejects'])}")
    for r in out["rejects"]:
        con.print(f"  {r['location']}: {r['reason']}", markup=False)
    return 0

