"""``easl demo`` on real annotators: the shipped study replayed through a project of the default method and one of
direct assessment (``core/simulate/replay.py``), side by side."""

from __future__ import annotations

import argparse
import os
from typing import Any

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.commands.init import DEFAULT_METHOD

#: HITs per iteration after the covering one: a quarter of a score per item on the 320 videos, so that the curves
#: have a point every quarter score.
HITS_PER_ITERATION = 16


def _budget_to(curve: list[tuple[float, float]], target: float) -> float:
    """Scores per item where ``curve`` ((per_item, spearman) points) first reaches ``target`` (linear
    interpolation; NaN if it never does)."""
    import numpy as np

    from easl_toolkit.core.simulate import first_crossing

    if not curve:
        return float("nan")
    x, y = np.asarray(curve, dtype=np.float64).T
    return first_crossing(x, np.nan_to_num(y, nan=-1.0), target)


def _run_pair(projects: dict[str, Any], replays: dict[str, Any], args: argparse.Namespace, advance: Any) -> dict:
    """Both campaigns, iteration by iteration, until both reach the target or the budget is spent."""
    curves: dict[str, list[tuple[float, float]]] = {name: [] for name in projects}
    done = dict.fromkeys(projects, False)
    while not all(done.values()):
        for name, project in projects.items():
            if done[name]:
                continue
            replay = replays[name]
            hits = project.next_hits()
            if not hits:
                done[name] = True  # the stopping rule of a project with a target said stop
                continue
            project.ingest(replay.answer(hits, (project.hyper.score_min, project.hyper.score_max)), source="demo")
            per_item = replay.n_scores / project.n_items
            curves[name].append((per_item, replay.spearman(project.estimates())))
            reached = curves[name][-1][1] >= args.target
            done[name] = per_item >= args.max_per_item or (reached and all(curves[o] for o in curves))
        advance(
            min(max(r.n_scores for r in replays.values()) / next(iter(projects.values())).n_items, args.max_per_item)
        )
    return curves


def run_real(args: argparse.Namespace) -> int:
    """Run ``easl demo`` on the shipped study (module docstring); returns the exit status."""
    import tempfile

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    from easl_toolkit.core.datasets import agh_tv_items, agh_tv_notice
    from easl_toolkit.core.simulate.replay import ProjectReplay
    from easl_toolkit.core.simulate.replay_data import shipped_ratings
    from easl_toolkit.core.tables import write_format, write_table

    if not 0.0 < args.target < 1.0:
        raise EaslError(f"--target must be a Spearman correlation between 0 and 1, got {args.target}.")
    if args.max_per_item <= 0:
        raise EaslError(f"--max-per-item must be > 0, got {args.max_per_item}.")
    if args.output:
        write_format(args.output)
    if args.project and os.path.lexists(args.project):
        raise EaslError(f"{args.project}: the file exists; the demo makes a new project (remove it or pick a name).")
    ratings = shipped_ratings()
    items = agh_tv_items()[["item_id", "text", "content_id", "path"]]
    console = Console()
    tmpdir = tempfile.TemporaryDirectory(prefix="easl-demo-")
    projects: dict[str, Any] = {}
    try:
        _create_projects(projects, items, args, tmpdir.name)
        replays = {m: ProjectReplay(ratings, p.item_index(), args.seed) for m, p in projects.items()}
        console.print(f"[bold]Real annotators[/]: {agh_tv_notice()}.")
        console.print(
            f"Per video, half of its ratings are held out as the truth; each HIT is answered with real ratings of "
            f"the rest. Default method ({DEFAULT_METHOD}) beside direct assessment (da), until both reach "
            f"Spearman {args.target:g} or {args.max_per_item:g} scores per video."
        )
        with Progress(
            TextColumn("replaying"),
            BarColumn(),
            TextColumn("{task.completed:.1f} scores per video"),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("replay", total=args.max_per_item)
            curves = _run_pair(projects, replays, args, lambda x: progress.update(task, completed=x))
        console.print(_curve_table(curves, args, len(items)))
        console.print(_saving({m: _budget_to(curves[m], args.target) for m in curves}, args))
        check = projects[DEFAULT_METHOD].verify()
        console.print(f"verify: {'ok' if check['ok'] else 'FAILED'} (max abs diff {check['max_abs_diff']:.2g})")
        if args.output:
            write_table(projects[DEFAULT_METHOD].estimates(), args.output)
            console.print(f"wrote the estimates of {len(items)} videos to {args.output}")
        if args.project:
            _keep(projects[DEFAULT_METHOD], args, console)
    finally:
        for project in projects.values():
            project.close()
        tmpdir.cleanup()
    return 0 if check["ok"] else 1


def _create_projects(projects: dict[str, Any], items: Any, args: argparse.Namespace, tmpdir: str) -> None:
    """The default method's project (at ``--project``, else in ``tmpdir``) and DA's, added to ``projects`` as they
    are made (so that the caller closes whichever were)."""
    from easl_toolkit.core.datasets import AGH_TV_SCALE
    from easl_toolkit.core.models import Hyper
    from easl_toolkit.core.store import Project

    paths = {DEFAULT_METHOD: args.project or os.path.join(tmpdir, "demo.easl"), "da": os.path.join(tmpdir, "da.easl")}
    for m, path in paths.items():
        hyper = Hyper(
            method=m,
            seed=args.seed,
            score_min=AGH_TV_SCALE[0],
            score_max=AGH_TV_SCALE[1],
            hits_per_iteration=HITS_PER_ITERATION,
        )
        projects[m] = Project.create(path, items, hyper)


def _keep(project: Any, args: argparse.Namespace, console: Any) -> None:
    """Give the kept project the demo's target as its stop target, so that the monitor shows it, and say what the
    monitor compares it with."""
    project.set_stop_at(args.target)
    console.print(
        f"project kept at {args.project}, stop target {args.target:g}: its monitor (easl tui {args.project} "
        "--monitor) compares it with the expected Spearman, the model's own estimate of its Spearman with the truth "
        "(no held-out ratings needed)."
    )


def _curve_table(curves: dict[str, list[tuple[float, float]]], args: argparse.Namespace, n_items: int) -> Any:
    """Both curves at every whole number of scores per video, and at each curve's last point (where it first
    reached the target, or the budget)."""
    import numpy as np
    from rich.console import Group
    from rich.table import Table

    longest = max(curves.values(), key=len)
    step = longest[-1][0] - longest[-2][0] if len(longest) > 1 else 1.0
    table = Table(title=f"Spearman with the held-out truth, {n_items} videos")
    table.add_column("scores per video", justify="right")
    for m in curves:
        table.add_column(m if m != DEFAULT_METHOD else f"{m} (default)", justify="right")
    last = {m: curves[m][-1][0] for m in curves if curves[m] and curves[m][-1][1] >= args.target}
    whole = np.arange(1.0, args.max_per_item + 1e-9, 1.0)
    for x in np.unique(np.round(np.concatenate([whole, list(last.values())]), 9)):
        cells = []
        for m in curves:
            pts = np.asarray(curves[m])
            near = pts[np.abs(pts[:, 0] - x) < 1e-6] if pts.size else pts
            mark = " *" if m in last and abs(last[m] - x) < 1e-6 else ""
            cells.append(f"{near[0, 1]:.3f}{mark}" if len(near) else "")
        if any(cells):
            table.add_row(f"{x:g}", *cells)
    note = (
        f"Measured every {step:g} scores per video (whole numbers shown); *: where a curve first reached "
        f"{args.target:g}, and its run stopped."
    )
    return Group(table, note)


def _saving(need: dict[str, float], args: argparse.Namespace) -> str:
    """The annotations the default method saved against DA to reach ``--target`` (``need``: scores per video)."""
    import numpy as np

    a, d = need[DEFAULT_METHOD], need["da"]
    if np.isfinite(a) and np.isfinite(d):
        return (
            f"[bold]Spearman {args.target:g}[/] (where each curve crosses it, linear between the two points around "
            f"it): {DEFAULT_METHOD} after {a:.2f} scores per video, DA after {d:.2f}: "
            f"[bold]{100 * (1 - a / d):+.0f}%[/] annotations saved ({a / d:.2f}x DA's) on this split. "
            "Over 20 splits, with intervals: easl simulate replay."
        )
    if np.isfinite(a):
        return (
            f"[bold]Spearman {args.target:g}[/]: {DEFAULT_METHOD} after {a:.2f} scores per video; DA did not reach "
            f"it within {args.max_per_item:g}: at least [bold]{100 * (1 - a / args.max_per_item):+.0f}%[/] "
            "annotations saved on this split."
        )
    return f"{DEFAULT_METHOD} did not reach Spearman {args.target:g} within {args.max_per_item:g} scores per video."
