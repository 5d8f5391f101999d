"""``easl evaluate``: every agreement, association, accuracy, true-score and fairness metric, with uncertainty."""
from __future__ import annotations

import argparse
import sys
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
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("evaluate", help="metrics of system scores against human ratings (RSMTool-compatible)",
                              description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="CSV, TSV, JSONL or Parquet file (by extension)")
    p.add_argument("--human", nargs="+", metavar="COL",
                   help="human score columns, the first is the reference (wide form; required there). With --long: "
                        "the rater ids to treat as human (default: every rater that is not a system)")
    p.add_argument("--system", nargs="+", metavar="COL", required=True,
                   help="system score columns (with --long: rater ids or per-item columns)")
    p.add_argument("--id", dest="id_col", metavar="COL", help="response id column (checked for duplicates)")
    p.add_argument("--group", dest="group_col", metavar="COL", help="subgroup column: DSM by subgroup and fairness")
    p.add_argument("--scale", nargs=2, type=float, metavar=("MIN", "MAX"),
                   help="score scale; integer bounds give the categories MIN..MAX (default: the human scores' range, "
                        "with a note)")
    p.add_argument("--exclude-zeros", action="store_true",
                   help="drop responses whose first human score is 0 and treat other 0 human scores as missing "
                        "(RSMTool's default)")
    p.add_argument("--rater-error-variance", type=float, metavar="V",
                   help="rater error variance estimated on another sample, for the true-score metrics")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N",
                   help="bootstrap resamples of responses for percentile intervals (default 0: none)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the bootstrap (default 0)")
    p.add_argument("--json", action="store_true", help="write one JSON object to stdout instead of tables")
    p.add_argument("--output", metavar="DIR", help="write CSV tables, evaluation.json, report.md and PNG plots here")
    p.add_argument("--long", metavar="ITEM,RATER,SCORE",
                   help="FILE is in long form (one rating per row), e.g. from `easl export --ratings`")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from core.metrics.data import Scale
    from core.metrics.loading import load_long, load_wide
    from core.metrics.report import evaluate
    from core.metrics.writer import to_json_text, write_output

    if args.bootstrap < 0:
        raise UserError(f"--bootstrap must be 0 or more, got {args.bootstrap}.")
    if args.rater_error_variance is not None and not (np.isfinite(args.rater_error_variance)
                                                      and args.rater_error_variance >= 0):
        raise UserError(f"--rater-error-variance must be a finite number >= 0, got {args.rater_error_variance}.")
    scale = None
    if args.scale:
        try:
            scale = Scale(*args.scale)
        except ValueError as exc:
            raise UserError(f"--scale {args.scale[0]:g} {args.scale[1]:g}: {exc}.") from None
    if args.long:
        data = load_long(args.file, spec=args.long, system=args.system, human=args.human, group_col=args.group_col)
    else:
        if not args.human:
            raise UserError("--human is required: name the human score column(s) of the file.")
        overlap = set(args.human) & set(args.system)
        if overlap:
            raise UserError(f"{args.file}: column {sorted(overlap)[0]!r} is given both as --human and --system.")
        data = load_wide(args.file, human=args.human, system=args.system, id_col=args.id_col, group_col=args.group_col)

    progress_cb, finish = _progress(args.bootstrap, quiet=False)
    try:
        ev = evaluate(data.human, data.system, human_names=data.human_names, scale=scale, groups=data.groups,
                      group_name=args.group_col or "group", exclude_zeros=args.exclude_zeros,
                      rater_error_variance=args.rater_error_variance, n_bootstrap=args.bootstrap, seed=args.seed,
                      progress=progress_cb, extra_notes=data.notes)
    finally:
        finish()
    if ev.data["n_responses"] == 0:
        raise UserError(f"{args.file}: no response left to evaluate ({_dropped_text(ev.data['dropped'])}).")
    if args.output:
        write_output(ev, Path(args.output), source=str(args.file), seed=args.seed)
    if args.json:
        sys.stdout.write(to_json_text(ev.data) + "\n")
    else:
        _print_tables(ev, args)
    return 0


def _dropped_text(dropped: dict) -> str:
    return "; ".join(f"{v} dropped: {k}" for k, v in dropped.items()) or "the file has no usable rows"


def _progress(total: int, quiet: bool):
    if total <= 0 or quiet:
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    prog = Progress(TextColumn("bootstrap"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)
    task = prog.add_task("bootstrap", total=total)
    prog.start()

    def update(done, _total):
        prog.update(task, completed=done)
    return update, prog.stop


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 1e4 else f"{v:.4g}"
    return str(v)


def _print_tables(ev, args) -> None:
    from rich.console import Console
    from rich.table import Table

    from core.metrics.report import OBSERVED_KEYS

    con = Console()
    d = ev.data
    con.print(f"[bold]{args.file}[/]: {d['n_responses']} responses evaluated, {d['n_dropped']} dropped; scale "
              f"[{d['scale']['min']:g}, {d['scale']['max']:g}]; human columns {', '.join(d['human_columns'])}")
    for k, v in d["dropped"].items():
        con.print(f"  dropped {v}: {k}")
    t = Table(title="Observed scores (system vs first human; human-human on double-scored responses)")
    t.add_column("metric")
    systems = list(d["systems"])
    for s in systems:
        t.add_column(s, justify="right")
    has_ci = any(d["systems"][s]["ci"] for s in systems)
    if has_ci:
        for s in systems:
            t.add_column(f"{s} CI", justify="right")
    t.add_column("human-human", justify="right")
    for key in OBSERVED_KEYS:
        row = [key] + [_fmt(d["systems"][s]["observed"].get(key)) for s in systems]
        if has_ci:
            for s in systems:
                ci = d["systems"][s]["ci"].get(key)
                row.append("" if not ci else f"[{_fmt(ci[0])}, {_fmt(ci[1])}]")
        row.append(_fmt(d["human_human"].get(key)))
        t.add_row(*row)
    con.print(t)
    ts = Table(title="True scores (PRMSE)")
    ts.add_column("figure")
    for s_name in systems:
        ts.add_column(s_name, justify="right")
        if has_ci:
            ts.add_column(f"{s_name} CI", justify="right")
    keys = ("N", "N_single", "N_multiple", "rater_error_variance", "true_score_variance", "mse_true", "prmse",
            "disattenuated_corr")
    for k in keys:
        row = [k]
        for s_name in systems:
            e = d["systems"][s_name]
            row.append(_fmt(e.get(k) if k == "disattenuated_corr" else e["true_score"].get(k)))
            if has_ci:
                ci = e["ci"].get(k)
                row.append("" if not ci else f"[{_fmt(ci[0])}, {_fmt(ci[1])}]")
        ts.add_row(*row)
    con.print(ts)
    for gname, groups in d["subgroups"].items():
        g = Table(title=f"By {gname} (DSM uses the whole set's means and sds)")
        for c in ("group", "system", "N", "corr", "qwk", "smd", "dsm"):
            g.add_column(c, justify="left" if c in ("group", "system") else "right")
        for label, per_sys in groups.items():
            for s, vals in per_sys.items():
                g.add_row(label, s, *[_fmt(vals.get(k)) for k in ("N", "corr", "qwk", "smd", "dsm")])
        con.print(g)
    for gname, per_sys in d["fairness"].items():
        f = Table(title=f"Fairness by {gname} (base group: largest)")
        fair_ci = any(rec.get("ci") for rec in per_sys.values())
        for c in ("system", "metric", "value", *(("CI",) if fair_ci else ()), "p"):
            f.add_column(c, justify="left" if c in ("system", "metric") else "right")
        for s, rec in per_sys.items():
            for k, label in (("osa", "OSA adjR2"), ("osd", "OSD adjR2"), ("csd", "CSD delta adjR2")):
                cells = [s, label, _fmt(rec[k].get("value"))]
                if fair_ci:
                    ci = rec.get("ci", {}).get(k)
                    cells.append("" if not ci else f"[{_fmt(ci[0])}, {_fmt(ci[1])}]")
                f.add_row(*cells, _fmt(rec[k].get("p_value")))
        con.print(f)
        for s, rec in per_sys.items():
            by_reason: dict[str, list[str]] = {}
            for k, why in rec.get("ci_reason", {}).items():
                by_reason.setdefault(why, []).append(k.upper())
            for why, keys in by_reason.items():
                con.print(f"[yellow]note:[/] {s}: fairness {'/'.join(keys)} interval n/a: {why}")
    reasons = sorted({v for s in systems for k, v in d["systems"][s]["observed"].items() if k.endswith("_reason")})
    for note in d["notes"] + [f"n/a: {r}" for r in reasons]:
        con.print(f"[yellow]note:[/] {note}")
    if args.output:
        con.print(f"wrote {args.output}/ (eval.csv, eval_short.csv, true_score_eval.csv, report.md, figures)")
