"""``easl evaluate``: every agreement, association, accuracy, true-score and fairness metric, with uncertainty."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from pathlib import Path

from core.errors import UserError

DESCRIPTION = """\
Evaluate system scores against human ratings: RSMTool's observed-score metrics (against the first human column),
human-human agreement and degradation, Spearman and Kendall, chance-corrected agreement (Gwet's AC1/AC2,
Brennan-Prediger, Scott's pi, Cohen's kappa, Krippendorff's alpha) with identity/linear/quadratic weights,
true-score metrics (PRMSE) for any number of ratings per response, fairness by subgroup, and bootstrap intervals.

Categorical metrics compare the human score with the system score rounded half-to-even and clipped to the scale;
correlations, QWK, SMD, MSE, R2 and PRMSE use the raw system scores."""

EPILOG = """\
examples:
  easl evaluate scores.csv --human h1 h2 --system model --scale 1 6
  easl evaluate scores.parquet --human h1 h2 --system a b --group L1 --bootstrap 1000 --seed 7 --output report/
  easl evaluate ratings.csv --long item_id,annotator,score --system estimate --scale 0 100 --json
  easl evaluate --project work.easl --system scores.csv          (a system against a campaign's ratings)
  easl evaluate 'ratings/*.parquet' --human h1 h2 --system model --scale 1 6 --dask local
  easl evaluate 'ratings/*.csv' --human h1 h2 --system model --scale 1 6 --dask tcp://scheduler:8786
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="metrics of system scores against human ratings (RSMTool-compatible)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "file", metavar="FILE", nargs="?", help="CSV, TSV, JSONL or Parquet file (by extension); not with --project"
    )
    p.add_argument(
        "--project",
        metavar="PROJECT",
        help="evaluate against the ratings of this easl project (every annotator a rater); --system then "
        "names a file of system scores per item (id column: --id, default item_id) and optionally "
        "its score columns",
    )
    p.add_argument(
        "--human",
        nargs="+",
        metavar="COL",
        help="human score columns, the first is the reference (wide form; required there). With --long: "
        "the rater ids to treat as human (default: every rater that is not a system)",
    )
    p.add_argument(
        "--system",
        nargs="+",
        metavar="COL",
        required=True,
        help="system score columns (with --long: rater ids or per-item columns)",
    )
    p.add_argument("--id", dest="id_col", metavar="COL", help="response id column (checked for duplicates)")
    p.add_argument("--group", dest="group_col", metavar="COL", help="subgroup column: DSM by subgroup and fairness")
    p.add_argument(
        "--scale",
        nargs=2,
        type=float,
        metavar=("MIN", "MAX"),
        help="score scale; integer bounds give the categories MIN..MAX (default: the human scores' range, with a note)",
    )
    p.add_argument(
        "--exclude-zeros",
        action="store_true",
        help="drop responses whose first human score is 0 and treat other 0 human scores as missing "
        "(RSMTool's default)",
    )
    p.add_argument(
        "--rater-error-variance",
        type=float,
        metavar="V",
        help="rater error variance estimated on another sample, for the true-score metrics",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        metavar="N",
        help="bootstrap resamples of responses for percentile intervals (default 0: none)",
    )
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the bootstrap (default 0)")
    p.add_argument("--json", action="store_true", help="write one JSON object to stdout instead of tables")
    p.add_argument("--output", metavar="DIR", help="write CSV tables, evaluation.json, report.md and PNG plots here")
    p.add_argument(
        "--weights",
        nargs="+",
        metavar="W",
        default=(),
        choices=("ordinal", "radical", "ratio", "circular", "bipolar"),
        help="more weightings of the all-raters coefficients beside identity, linear and quadratic "
        "(irrCAC's ordinal, radical, ratio, circular, bipolar)",
    )
    p.add_argument(
        "--base-group",
        metavar="G",
        help="reference group of the fairness models' coefficients (default: the largest group)",
    )
    p.add_argument(
        "--population-size",
        type=float,
        metavar="N",
        help="number of responses in the population: finite-population correction of the analytic "
        "standard errors of the agreement coefficients (default: infinite)",
    )
    p.add_argument(
        "--long",
        metavar="ITEM,RATER,SCORE",
        help="FILE is in long form (one rating per row), e.g. from `easl export --ratings`",
    )
    p.add_argument(
        "--dask",
        metavar="local|ADDRESS",
        help="evaluate data larger than memory on Dask (needs the dask extra): FILE may be a glob or directory of "
        "Parquet or CSV partitions; 'local' starts a cluster on this machine, an address (tcp://host:8786) "
        "uses a running scheduler. Same figures as in memory; the bootstrap draws Poisson weights per partition",
    )
    p.add_argument(
        "--dask-workers", type=int, metavar="N", help="workers of the local Dask cluster (default: one per core)"
    )
    p.add_argument(
        "--dask-memory",
        metavar="BYTES",
        help="memory limit per local Dask worker, e.g. 2GiB (default: 3/4 of the memory shared out, at most 4GiB)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from core.metrics.data import Scale
    from core.metrics.loading import load_long, load_wide
    from core.metrics.pipeline import evaluate

    if args.bootstrap < 0:
        raise UserError(f"--bootstrap must be 0 or more, got {args.bootstrap}.")
    if args.rater_error_variance is not None and not (
        np.isfinite(args.rater_error_variance) and args.rater_error_variance >= 0
    ):
        raise UserError(f"--rater-error-variance must be a finite number >= 0, got {args.rater_error_variance}.")
    scale = None
    if args.scale:
        try:
            scale = Scale(*args.scale)
        except ValueError as exc:
            raise UserError(f"--scale {args.scale[0]:g} {args.scale[1]:g}: {exc}.") from None
    if args.population_size is not None and not args.population_size > 0:
        raise UserError(f"--population-size must be a positive number, got {args.population_size:g}.")
    if args.dask:
        return _run_dask(args, scale)
    if args.project:
        if args.file:
            raise UserError("give either FILE or --project, not both.")
        data, project_scale = _load_project(args)
        scale = scale or project_scale
        source = args.project
    elif not args.file:
        raise UserError("name the FILE to evaluate (or --project PROJECT --system SCORES).")
    elif args.long:
        data = load_long(
            args.file, columns=_long_columns(args), system=args.system, human=args.human, group_col=args.group_col
        )
        source = args.file
    else:
        _check_wide(args)
        data = load_wide(args.file, human=args.human, system=args.system, id_col=args.id_col, group_col=args.group_col)
        source = args.file

    if args.base_group is not None and (data.groups is None or args.base_group not in set(map(str, data.groups))):
        raise UserError(f"--base-group {args.base_group!r}: not a group of the --group column.")
    progress_cb, finish = _progress(args.bootstrap, quiet=False)
    try:
        ev = evaluate(
            data.human,
            data.system,
            human_names=data.human_names,
            groups=data.groups,
            group_name=args.group_col or "group",
            progress=progress_cb,
            extra_notes=data.notes,
            **_options(args, scale),
        )
    except ValueError as exc:
        raise UserError(f"{source}: {exc}.") from None
    finally:
        finish()
    return _emit(ev, args, source)


def _options(args, scale) -> dict:
    """The keyword arguments both engines take from the command line."""
    return dict(
        scale=scale,
        exclude_zeros=args.exclude_zeros,
        rater_error_variance=args.rater_error_variance,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        population_size=args.population_size,
        base_group=args.base_group,
        weights=tuple(args.weights),
    )


def _long_columns(args) -> tuple[str, str, str]:
    parts = tuple(s.strip() for s in args.long.split(","))
    if len(parts) != 3 or not all(parts):
        raise UserError(f"--long expects three column names ITEM,RATER,SCORE, got {args.long!r}.")
    return parts[0], parts[1], parts[2]


def _check_wide(args) -> None:
    if not args.human:
        raise UserError("--human is required: name the human score column(s) of the file.")
    overlap = set(args.human) & set(args.system)
    if overlap:
        raise UserError(f"{args.file}: column {sorted(overlap)[0]!r} is given both as --human and --system.")


def _emit(ev, args, source) -> int:
    """Refuse an empty evaluation, then write the report directory, the JSON or the tables."""
    from core.metrics.writer import to_json_text, write_output

    if ev.n_responses == 0 and ev.human_human.all_raters is None:
        raise UserError(f"{source}: no response left to evaluate ({_dropped_text(ev.dropped)}).")
    if args.output:
        write_output(ev, Path(args.output), source=str(source), seed=args.seed)
    if args.json:
        sys.stdout.write(to_json_text(ev.to_json()) + "\n")
    else:
        _print_tables(ev, args)
    return 0


def _run_dask(args, scale) -> int:
    """``--dask``: the partitioned FILE evaluated on a Dask cluster (core.distributed), same outputs."""
    from core.distributed.cluster import connect
    from core.distributed.evaluate import evaluate_dask

    if args.project:
        raise UserError("--dask evaluates partitioned files; --project is evaluated in memory.")
    if not args.file:
        raise UserError("name the FILE (a glob or directory of Parquet or CSV partitions) to evaluate with --dask.")
    long = _long_columns(args) if args.long else None
    if long is None:
        _check_wide(args)
    update, finish = _stage_progress()
    try:
        with connect(args.dask, workers=args.dask_workers, memory_limit=args.dask_memory) as client:
            ev = evaluate_dask(
                client,
                args.file,
                human=args.human,
                system=args.system,
                group_col=args.group_col,
                id_col=args.id_col,
                long=long,
                progress=update,
                **_options(args, scale),
            )
    except ValueError as exc:
        raise UserError(f"{args.file}: {exc}.") from None
    finally:
        finish()
    return _emit(ev, args, args.file)


def _stage_progress():
    """A progress bar on stderr for the Dask stages (scale pass, partitions)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict = {}
    prog.start()

    def update(stage, done, total):
        if stage not in tasks:
            tasks[stage] = prog.add_task(stage, total=total)
        prog.update(tasks[stage], completed=done)

    return update, prog.stop


def _load_project(args):
    """The campaign's ratings (public store API) and the system scores file; the project's score range as scale."""
    from core.metrics.data import Scale
    from core.metrics.loading import load_campaign
    from core.store import Project

    system_file, *columns = args.system
    with Project.open(args.project, readonly=True) as project:
        ratings = project.ratings()
        items = project.items()
        hyper = getattr(project, "hyper", None)
    scale = None
    if hyper is not None and hasattr(hyper, "score_min"):
        scale = Scale(float(hyper.score_min), float(hyper.score_max))
    data = load_campaign(
        ratings, items, system_file, system=columns or None, id_col=args.id_col or "item_id", group_col=args.group_col
    )
    return data, scale


def _dropped_text(dropped: Mapping[str, int]) -> str:
    return "; ".join(f"{v} dropped: {k}" for k, v in dropped.items()) or "the file has no usable rows"


def _progress(total: int, quiet: bool):
    if total <= 0 or quiet:
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    prog = Progress(
        TextColumn("bootstrap"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = prog.add_task("bootstrap", total=total)
    prog.start()

    def update(done, _total):
        prog.update(task, completed=done)

    return update, prog.stop


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 1e4 else f"{v:.4g}"
    return str(v)


def _ci(fig) -> str:
    """``[low, high]`` of a figure's bootstrap interval, or empty."""
    if fig is None or fig.ci is None:
        return ""
    return f"[{_fmt(fig.ci.low)}, {_fmt(fig.ci.high)}]"


def _count(v: float) -> str:
    return "n/a" if not math.isfinite(v) else str(int(v)) if float(v).is_integer() else _fmt(v)


def _print_tables(ev, args) -> None:
    from rich.console import Console
    from rich.table import Table

    from core.metrics.registry import COUNT_KEYS, OBSERVED, TRUE_SCORE_KEYS

    con = Console()
    con.print(
        f"[bold]{args.project or args.file}[/]: {ev.n_responses} responses evaluated, {ev.n_dropped} dropped; scale "
        f"[{ev.scale.min:g}, {ev.scale.max:g}]; human columns {', '.join(ev.human_columns)}"
    )
    for k, v in ev.dropped.items():
        con.print(f"  dropped {v}: {k}")
    t = Table(title="Observed scores (system vs first human; human-human on double-scored responses)")
    t.add_column("metric")
    systems = list(ev.systems)
    for s in systems:
        t.add_column(s, justify="right")
    has_ci = ev.bootstrapped
    if has_ci:
        for s in systems:
            t.add_column(f"{s} CI", justify="right")
    t.add_column("human-human", justify="right")
    hh = ev.human_human.pair
    for metric in OBSERVED:
        key = metric.name
        show = _count if key in COUNT_KEYS else _fmt
        row = [key] + [show(ev.systems[s].observed.value(key)) for s in systems]
        if has_ci:
            row += [_ci(ev.systems[s].observed.figures.get(key)) for s in systems]
        row.append(show(hh.value(key)) if key in hh else "n/a")
        t.add_row(*row)
    con.print(t)
    allr = ev.human_human.all_raters
    if allr is not None:
        a = Table(
            title=f"Agreement among all {len(ev.human_columns)} human raters ({_count(allr.value('N'))} "
            f"responses, {_count(allr.value('N_pairable'))} with two or more ratings)"
        )
        for c in ("coefficient", "value", "se", "interval (t, capped at 1)", "p"):
            a.add_column(c, justify="left" if c == "coefficient" else "right")
        for key, fig in allr.figures.items():
            if key in COUNT_KEYS:
                continue
            an = fig.analytic
            a.add_row(
                key,
                _fmt(fig.value),
                "" if an is None else _fmt(an.se),
                "" if an is None else f"[{_fmt(an.low)}, {_fmt(an.high)}]",
                "" if an is None else _fmt(an.p_value),
            )
        con.print(a)
    ts = Table(title="True scores (PRMSE)")
    ts.add_column("figure")
    for s_name in systems:
        ts.add_column(s_name, justify="right")
        if has_ci:
            ts.add_column(f"{s_name} CI", justify="right")
    for k in (*[k for k in TRUE_SCORE_KEYS if k != "N_raters"], "disattenuated_corr"):
        row = [k]
        for s_name in systems:
            e = ev.systems[s_name]
            fig = e.disattenuated_corr if k == "disattenuated_corr" else e.true_score[k]
            row.append(_count(fig.value) if k in COUNT_KEYS else _fmt(fig.value))
            if has_ci:
                row.append("" if k in COUNT_KEYS else _ci(fig))
        ts.add_row(*row)
    con.print(ts)
    for gname, groups in ev.subgroups.items():
        g = Table(title=f"By {gname} (DSM uses the whole set's means and sds)")
        for c in ("group", "system", "N", "corr", "qwk", "smd", "dsm"):
            g.add_column(c, justify="left" if c in ("group", "system") else "right")
        for label, per_sys in groups.items():
            for s, block in per_sys.items():
                g.add_row(
                    label, s, _count(block.value("N")), *[_fmt(block.value(k)) for k in ("corr", "qwk", "smd", "dsm")]
                )
        con.print(g)
    for gname, per_sys in ev.fairness.items():
        f = Table(title=f"Fairness by {gname} (base group: largest)")
        fair_ci = any(rec.bootstrapped for rec in per_sys.values())
        for c in ("system", "metric", "value", *(("CI",) if fair_ci else ()), "p"):
            f.add_column(c, justify="left" if c in ("system", "metric") else "right")
        for s, rec in per_sys.items():
            for k, label in (("osa", "OSA adjR2"), ("osd", "OSD adjR2"), ("csd", "CSD delta adjR2")):
                fig = rec.figures()[k]
                cells = [s, label, _fmt(fig.value)]
                if fair_ci:
                    cells.append("" if fig.ci is None else f"[{_fmt(fig.ci.low)}, {_fmt(fig.ci.high)}]")
                f.add_row(*cells, _fmt(fig.p_value))
        con.print(f)
        for s, rec in per_sys.items():
            by_reason: dict[str, list[str]] = {}
            for k, fig in rec.figures().items():
                if fig.ci_reason:
                    by_reason.setdefault(fig.ci_reason, []).append(k.upper())
            for why, keys in by_reason.items():
                con.print(f"[yellow]note:[/] {s}: fairness {'/'.join(keys)} interval n/a: {why}")
    reasons = sorted(
        {
            fig.reason
            for s in systems
            for fig in ev.systems[s].observed.figures.values()
            if fig.reason and not fig.is_defined
        }
    )
    for note in [*ev.notes, *(f"n/a: {r}" for r in reasons)]:
        con.print(f"[yellow]note:[/] {note}")
    if args.output:
        con.print(f"wrote {args.output}/ (eval.csv, eval_short.csv, true_score_eval.csv, report.md, figures)")
