"""``easl serve``: the Label Studio ML backend / webhook service for one project file."""

from __future__ import annotations

import argparse
import os

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.commands.options import nonnegative_int, port, positive_float


def _connections(text: str) -> int:
    """``--max-connections``: an integer >= 1."""
    value = nonnegative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("needs an integer >= 1, got 0")
    return value


def register(subparsers) -> None:
    """Add the sub-command's parser."""
    p = subparsers.add_parser(
        "serve",
        help="run the Label Studio backend: ingest annotations, push the next HITs",
        description="Serve the ML-backend protocol (/health, /setup, /predict, /webhook, /versions) for PROJECT. "
        "Webhooks are queued durably in the project file and applied by a background worker, which "
        "also reconciles with Label Studio (on start, every --reconcile-interval seconds and on "
        "'Start training') and pushes the next HITs as tasks. May be started before or after "
        "`easl ls setup`. Environment: LABEL_STUDIO_API_KEY (needed to push and reconcile), "
        "EASL_WEBHOOK_SECRET (require this value in the X-EASL-Secret header of /webhook; it authenticates "
        "/webhook alone), EASL_BASIC_AUTH (user:password for every endpoint but /health; /status shows the "
        "queue and worker figures). Secrets need at least 12 characters, 8 of them different. Without "
        "EASL_BASIC_AUTH the service only listens on a loopback address (pass --insecure to override).",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file")
    _campaign_options(p)
    _connection_options(p)
    p.set_defaults(func=run)


def _campaign_options(p: argparse.ArgumentParser) -> None:
    """Where to listen and how the campaign runs: streaming, reconciliation, the queue, re-issue."""
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port, default=9090, help="port (default 9090)")
    p.add_argument(
        "--streaming",
        type=nonnegative_int,
        default=0,
        metavar="N",
        help="keep N HITs open and top up as annotations arrive (default 0: batch mode, the next "
        "iteration once every HIT of the current one is annotated)",
    )
    p.add_argument(
        "--reconcile-interval",
        type=positive_float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between reconciliations with Label Studio (default 60)",
    )
    p.add_argument(
        "--queue-depth",
        type=nonnegative_int,
        default=None,
        metavar="N",
        help="keep at least N HITs open, topping up from the current posterior (items of open HITs excluded) "
        "so that annotators never run out of tasks (default: measured, the active annotators A (last 5 "
        "minutes) + max(A, submissions/s x the backend's cycle) + 1; 0: the paper's batches alone, the next "
        "iteration once every HIT is done)",
    )
    p.add_argument(
        "--hit-timeout",
        type=positive_float,
        default=1800.0,
        metavar="SECONDS",
        help="re-issue a HIT as a fresh Label Studio task when somebody worked on its task (a draft) and "
        "nothing happened on it for this long since, or when nobody visibly did, it was created this long ago "
        "and it holds the queue up (the old task is closed, never deleted under a reader); checked at each "
        "reconciliation; skipped or rejected HITs are re-issued at once (default 1800)",
    )


def _connection_options(p: argparse.ArgumentParser) -> None:
    """What a connection may send and how long it may take; the Label Studio URL, logging, --insecure."""
    p.add_argument(
        "--max-body-mb", type=positive_float, default=4.0, help="largest request body accepted (default 4 MB)"
    )
    p.add_argument(
        "--header-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="close a connection whose request head has not arrived this long after it opened or after the "
        "previous answer (default 10)",
    )
    p.add_argument(
        "--body-timeout",
        type=positive_float,
        default=30.0,
        metavar="SECONDS",
        help="close a connection whose request body has not arrived this long after its head (default 30)",
    )
    p.add_argument(
        "--max-connections",
        type=_connections,
        default=2048,
        metavar="N",
        help="open connections at most (lowered to what the file-descriptor limit allows); beyond it the "
        "connection idle longest is closed (default 2048)",
    )
    p.add_argument("--url", help="Label Studio URL to use instead of the one recorded by `easl ls setup`")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--access-log", action="store_true", help="log every request line (never headers or bodies)")
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without EASL_BASIC_AUTH (anyone who can reach the port can then "
        "read the project's figures and, without EASL_WEBHOOK_SECRET, post annotations)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the sub-command; returns the exit status."""
    import logging

    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin import bookkeeping as bk
    from easl_toolkit.easl_plugin.config import ServiceConfig
    from easl_toolkit.easl_plugin.connections import ConnectionLimits
    from easl_toolkit.easl_plugin.server import UnprotectedAddress, serve
    from easl_toolkit.tui.commands.ls import basic_auth_from_env

    with Project.open(args.project) as project:  # fail early, with the store's message, on a missing or foreign file
        depth = None if args.queue_depth is None else str(args.queue_depth)
        project.set_meta({bk.KEY_HIT_TIMEOUT: repr(float(args.hit_timeout)), bk.KEY_QUEUE_DEPTH: depth})  # worker
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    config = ServiceConfig(
        project_path=args.project,
        host=args.host,
        port=args.port,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        basic_auth=basic_auth_from_env(),
        webhook_secret=os.environ.get("EASL_WEBHOOK_SECRET") or None,
        streaming=args.streaming,
        reconcile_interval_s=args.reconcile_interval,
        api_key=os.environ.get("LABEL_STUDIO_API_KEY") or None,
        ls_url=args.url,
        insecure=args.insecure,
        max_connections=args.max_connections,
    )
    limits = ConnectionLimits(
        header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout, max_connections=args.max_connections
    )
    try:
        serve(config, log_level=args.log_level, access_log=args.access_log, limits=limits)
    except UnprotectedAddress as exc:
        raise EaslError(f"{exc} (or pass --insecure)") from None
    return 0
