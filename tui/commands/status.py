"""``easl status``: iteration, counts and convergence figures of a project, the webhook queue, the most recent
rejected annotations with their reasons and the last reconciliation with Label Studio."""

from __future__ import annotations

import argparse
import json
import math

from easl_toolkit.tui.commands.options import nonnegative_int

REJECTS_SHOWN = 10  # most recent rejected annotations listed by default
#: The source of the rejects that record refused webhook deliveries: ``easl_plugin.deliveries.DELIVERY_SOURCE``, named
#: here because that module needs the labelstudio extra (tests/test_status_hints.py checks that the two agree).
DELIVERY_SOURCE = "label-studio-delivery"
_UNSET = object()  # --set-stop-at not given (None means "remove the target")


def register(subparsers) -> None:
    """Add the ``status`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "status",
        help="iteration, counts and convergence figures",
        description="Show the project's iteration, counts and convergence figures. Variances are posterior "
        "variances on the unit interval [0, 1] (multiply by (max - min)^2 of the score range for the "
        "score scale). --json prints one JSON object; a figure that is not a number is null with a "
        "<name>_reason beside it. The most recent rejected annotations are listed with their reasons "
        "(every source: `easl ingest --skip-invalid` and Label Studio); `easl ls status` lists every "
        "Label Studio reject.",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file")
    p.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object (rejects under "rejects", oldest first, with "rejects_not_shown")',
    )
    p.add_argument(
        "--annotators",
        action="store_true",
        help="aware projects: list the per-annotator diagnostics (scores, offset, slope, noise, "
        "scatter about the leave-one-out consensus, agreement with it, p_random: the one-sided p-value of that "
        "agreement under random clicking, flag: random, noisy or collapsed, and reason); with --json under "
        '"annotators", a list of objects',
    )
    p.add_argument(
        "--rejects",
        type=nonnegative_int,
        default=REJECTS_SHOWN,
        metavar="N",
        help=f"how many of the most recent rejected annotations to list (default {REJECTS_SHOWN})",
    )
    p.add_argument(
        "--set-stop-at",
        type=stop_target,
        default=_UNSET,
        metavar="RHO",
        help="aware projects: set the stop target, or change it (no new HITs once the expected Spearman "
        "correlation of the estimates with the truth, minus a safety margin, reaches RHO, e.g. 0.9); 'none' removes "
        "it. Written to the project file, then the status is shown",
    )
    p.add_argument(
        "--set-stop-width",
        type=stop_width,
        default=_UNSET,
        metavar="W",
        help="evaluation campaigns: set the stop width, or change it (no new HITs once every target metric's 95%% "
        "interval is narrower than W, e.g. 0.1); 'none' removes it. Written to the project file, then the status "
        "is shown",
    )
    p.set_defaults(func=run)


def _number_or_none(text: str, ok, expects: str, example: str) -> float | None:
    """``none`` (remove the setting) or a number for which ``ok`` holds; argparse's error otherwise."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects {expects} or 'none', got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{expects} is needed, e.g. {example}; got {text}")
    return value


def stop_target(text: str) -> float | None:
    """``--set-stop-at``: a number in (0, 1), or ``none``."""
    return _number_or_none(text, lambda v: 0.0 < v < 1.0, "a Spearman correlation in (0, 1)", "0.9")


def stop_width(text: str) -> float | None:
    """``--set-stop-width``: a positive number, or ``none``."""
    return _number_or_none(text, lambda v: v > 0.0 and math.isfinite(v), "a positive interval width", "0.1")


def _set_stop(args: argparse.Namespace, value: float | None, option: str, field: str, label: str) -> None:
    """Write ``--set-stop-at`` or ``--set-stop-width`` to the project (one transaction), and say what changed on
    stderr."""
    import sys

    from easl_toolkit.core.errors import EaslError, HyperParameterError
    from easl_toolkit.core.store import Project

    with Project.open(args.project) as project:
        try:
            before = project.set_stop_width(value) if field == "stop_width" else project.set_stop_at(value)
        except HyperParameterError as exc:
            if exc.field != field:
                raise
            raise EaslError(f"{args.project}: {option} is refused: it needs {exc.need}.") from None
    shown = "none" if value is None else f"{value:g}"
    was = "none" if before is None else f"{before:g}"
    print(f"{label}: {shown} (was {was})", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Run ``easl status``; returns the exit status (user errors raise ``EaslError``)."""
    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin.bookkeeping import status_figures

    if "set_stop_at" in vars(args) and args.set_stop_at is not _UNSET:
        _set_stop(args, args.set_stop_at, "--set-stop-at", "stop_at", "stop target")
    if "set_stop_width" in vars(args) and args.set_stop_width is not _UNSET:
        _set_stop(args, args.set_stop_width, "--set-stop-width", "stop_width", "stop width")
    from easl_toolkit.core.models.hyper import method_fields

    with Project.open(args.project, readonly=True) as project:
        status = project.status()
        extra = status_figures(project)
        recent, total = project.rejects(limit=args.rejects)
        refused = project.rejects(source=DELIVERY_SOURCE, limit=0)[1]
        annotators = annotator_table_of(project, args.project) if args.annotators else None
        linked = linked_to_label_studio(project, status.events)
        passes = project.hyper.uniform_passes if "uniform_passes" in method_fields(status.method) else None
    if args.json:
        # rejected rows: scores that failed validation (`easl ingest --skip-invalid`, Label Studio annotations: the
        # "rejected annotations" of `easl ls status`); webhook deliveries the service refused are counted apart
        out = status.to_json(extra=extra)
        out["n_rejected_rows"] = status.n_rejects - refused
        out["n_deliveries_refused"] = refused
        out["rejects"] = [r.to_json() for r in recent]
        out["rejects_not_shown"] = total - len(recent)
        if annotators is not None:
            out["annotators"] = annotator_records(annotators)
        print(json.dumps(out, allow_nan=False))
        return 0
    from rich.console import Console

    con = Console(soft_wrap=True)
    con.print(status_table(status, refused, extra["last_reconciliation"], linked=linked, uniform_passes=passes))
    if status.stop is not None and "systems" in status.stop:
        con.print(campaign_table(status.stop))
    if annotators is not None:
        con.print(annotator_table(annotators))
    if recent:
        con.print(f"most recent rejected annotations ({len(recent)} of {total}, oldest first):")
        for r in recent:
            con.print(
                f"  {r.created_at}  [{r.source}] {r.location or '(no location)'}: {r.reason}",
                markup=False,
                highlight=False,
            )
    if total > len(recent):
        also = f"`easl ls status {args.project}` lists every Label Studio reject; " if linked else ""
        con.print(
            f"  ... and {total - len(recent)} more ({also}--rejects N lists more here).",
            markup=False,
            highlight=False,
        )
    return 0


def annotator_table_of(project, path: str):
    """``Project.annotator_table`` of the project at ``path``, or one located error for a model without annotators
    (:class:`core.errors.UnsupportedByModel`)."""
    from easl_toolkit.core.errors import EaslError, UnsupportedByModel

    try:
        return project.annotator_table()
    except UnsupportedByModel as exc:
        raise EaslError(
            f"{path}: --annotators needs an {exc.needs} project; this one uses {exc.method}, fixed when it was "
            f"created (a new one: easl init NEW.easl --items FILE --method {exc.needs})."
        ) from None


def linked_to_label_studio(project, events: dict) -> bool:
    """Whether the project has seen Label Studio: linked by ``easl ls setup``, reconciled, or sent webhook events
    (a file campaign, ``easl next`` / ``easl ingest`` alone, has none of them)."""
    from easl_toolkit.easl_plugin import bookkeeping as bk

    seen = any(project.get_meta(k) is not None for k in (bk.KEY_PROJECT_ID, bk.KEY_LAST_RECONCILIATION))
    return seen or any(events.values())


def variance_note(status) -> str:
    """What the posterior variances of the status table are, with the mean one in score points."""
    lo, hi = status.score_range
    text = "variance: the posterior variance of an item's estimate, on the score range mapped to [0, 1] (unit scale)"
    if status.mean_variance is not None:
        sd = status.mean_variance**0.5
        text += (
            f"; the mean, {status.mean_variance:.3g}, is a standard deviation of {sd:.3g} of the range, "
            f"{sd * (hi - lo):.3g} points on {lo:g}-{hi:g}"
        )
    return text


def status_table(
    status, refused: int, last_reconciliation: str | None, *, linked: bool = True, uniform_passes: int | None = None
):
    """The figures of a ``ProjectStatus`` as a rich table; ``refused``: webhook deliveries the service refused
    (counted apart from the rejected rows), ``last_reconciliation``: the Label Studio plugin's figure; ``linked``:
    False for a file campaign, whose table leaves out the Label Studio rows (events, reconciliation);
    ``uniform_passes``: an aware project's, shown with what they are."""
    from rich.table import Table

    def fmt(value) -> str:
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    def variance(value: float | None) -> str:
        return f"n/a ({status.variance_reason})" if value is None else fmt(value)

    ann, ev, stop = status.n_annotations, status.events, status.stop
    rows = [
        ("iteration", fmt(status.iteration)),
        ("items", fmt(status.n_items)),
        ("observations (live)", fmt(status.n_observations)),
        ("log records", fmt(status.n_log_records)),
        ("HITs open / complete (this iteration)", f"{status.n_hits_open} / {status.n_hits_complete}"),
        ("HITs in all iterations", fmt(status.n_hits_total)),
        ("mean variance (unit scale)", variance(status.mean_variance)),
        ("max variance (unit scale)", variance(status.max_variance)),
        (
            "annotations per item (min / mean / max)",
            "n/a" if ann["min"] is None else f"{ann['min']} / {ann['mean']:.3g} / {ann['max']}",
        ),
    ]
    if stop is not None and "systems" in stop:  # an evaluation campaign's figures (campaign_table, below)
        width = "none" if stop["stop_width"] is None else f"{stop['stop_width']:g}"
        rows.append(("targets / stop width", f"{', '.join(stop['targets'])} / {width}"))
        rows.append(("stop", ("reached: " if stop["reached"] else "not reached: ") + stop["reason"]))
        rows.append(
            (
                "human scores spent (counted)",
                f"{stop['human_scores_spent']} ({stop['human_scores_counted']}: {stop['responses_scored']} responses "
                f"scored, {stop['responses_double_scored']} twice)",
            )
        )
        if "ratings_unchecked" in stop:
            rows.append(("human raters", _raters_line(stop)))
        rows.append(
            (
                "scoring every response once / twice",
                f"{stop['cost_score_all_once']} / {stop['cost_score_all_twice']} human scores",
            )
        )
    elif stop is not None:
        target = "none" if stop["target"] is None else f"{stop['target']:.3g}"
        rows.append(("expected Spearman / stop target", f"{stop['expected_spearman']:.3f} / {target}"))
        rows.append(("stop", ("reached: " if stop["reached"] else "not reached: ") + stop["reason"]))
    if uniform_passes is not None:
        rows.append(
            (
                "uniform passes",
                f"{uniform_passes}: every item gets {uniform_passes} scores, in HITs handed out evenly, before the "
                "model picks which items to score next",
            )
        )
    if linked:
        rows.append(("events pending / failed", f"{ev['pending']} / {ev['failed']}"))
    rows.append(("rejected rows (scores that failed validation)", fmt(status.n_rejects - refused)))
    if refused:
        rows.append(("webhook deliveries refused or malformed", fmt(refused)))
    if linked:
        rows.append(("last reconciliation", last_reconciliation or "never"))
    table = Table(title=f"{status.path} ({status.method})", show_header=False, caption=variance_note(status))
    table.add_column("figure", style="bold")
    table.add_column("value")
    for row in rows:
        table.add_row(*row)
    return table


def _raters_line(stop: dict) -> str:
    """Whose ratings count in a campaign: random clickers left out, and ratings counted unchecked (their annotators
    have too few ratings yet for the random-clicker test; ``easl status --annotators`` shows them)."""

    def annotators(n: int) -> str:
        return f"{n} annotator" + ("" if n == 1 else "s")

    left = (
        f"{annotators(stop['annotators_left_out'])} left out as random clickers ({stop['ratings_left_out']} ratings)"
        if stop["annotators_left_out"]
        else "no annotator left out"
    )
    if not stop["ratings_unchecked"]:
        return left
    return (
        f"{left}; {stop['ratings_unchecked']} counted ratings from {annotators(stop['annotators_unchecked'])} "
        "with too few ratings yet to be checked for random clicking"
    )


def campaign_table(stop: dict):
    """An evaluation campaign's metrics (``ProjectStatus.stop`` of a campaign) as a rich table: one row per system
    and metric, the estimate and its 95% interval, then the human scores alone (mean, human-human agreement)."""
    from rich.table import Table

    table = Table(title="evaluation: estimates with 95% intervals")
    for name in ("system", "metric", "estimate", "95% interval", "width"):
        table.add_column(name)

    def add(system: str, metric: str, fig: dict | None) -> None:
        if fig is None:
            return
        if fig["estimate"] is None:
            table.add_row(system, metric, "n/a", fig.get("reason", ""), "")
            return
        interval = "n/a" if fig["width"] is None else f"[{fig['ci_low']:.3f}, {fig['ci_high']:.3f}]"
        width = "" if fig["width"] is None else f"{fig['width']:.3f}"
        table.add_row(system, metric, f"{fig['estimate']:.3f}", interval, width)

    add("(humans)", "mean", stop.get("mean_human_score"))
    for metric, fig in stop.get("human", {}).items():
        add("(humans)", metric, fig)
    for system, metrics in stop["systems"].items():
        for metric, fig in metrics.items():
            add(system, metric, fig)
    return table


def annotator_records(frame) -> list[dict]:
    """The annotator table as JSON-ready objects (a number that is not finite becomes null)."""
    import math

    def clean(v):
        v = v.item() if hasattr(v, "item") else v
        return None if isinstance(v, float) and not math.isfinite(v) else v

    return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


#: How each flag is shown: ``random`` and ``collapsed`` in red, the soft ``noisy`` in yellow.
FLAG_STYLES = {"random": "bold red", "collapsed": "bold red", "noisy": "yellow"}


def p_random_text(v) -> str:
    """``p_random`` for a table: two significant digits, ``<0.001`` below that, ``n/a`` when undefined."""
    if v is None or v != v:
        return "n/a"
    return "<0.001" if v < 0.001 else f"{v:.2g}"


def annotator_table(frame):
    """The annotator diagnostics (``Project.annotator_table``) for a terminal of 80 columns or more: a table of the
    figures and flags, a key to the columns, then the reason of each flag (a rich renderable; its lines wrap to the
    terminal's width even on a console that soft-wraps)."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title="annotators", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True)
    table.add_column("annotator", overflow="fold")
    for col in ("n", "offset", "slope", "noise", "scatter", "agree", "p_random"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("flag", no_wrap=True)
    notes = Table.grid()  # table cells wrap; a soft-wrapping console's plain lines would not
    notes.add_column()
    notes.add_row(
        Text(
            "n: scores; offset on the score range; slope and noise (the fit's r_a) relative to the pool; "
            "scatter: mean squared residual about the leave-one-out consensus, relative to the median "
            "annotator's; agree: agreement, the correlation with that consensus; p_random: the chance of that "
            "agreement from a random clicker",
            style="dim",
        )
    )

    def num(v) -> str:
        return "n/a" if v is None or v != v else f"{v:.3g}"

    for r in frame.itertuples(index=False):
        name = "(none)" if r.annotator is None else str(r.annotator)
        flag = r.flag or ""
        table.add_row(
            name,
            str(r.n_scores),
            num(r.offset),
            num(r.slope),
            num(r.noise),
            num(getattr(r, "scatter", None)),
            num(r.agreement),
            p_random_text(getattr(r, "p_random", None)),
            Text(flag, style=FLAG_STYLES.get(flag, "")),
        )
        if flag and r.reason:
            notes.add_row(Text.assemble(f"{name} (", (flag, FLAG_STYLES.get(flag, "")), f"): {r.reason}"))
    return Group(table, notes)
