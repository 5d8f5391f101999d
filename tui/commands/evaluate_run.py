"""The work of ``easl evaluate`` (its parser is ``tui/commands/evaluate.py``): check the options, load the data
(a wide or long file, a campaign's ratings, or partitions on Dask), evaluate, and write the report, the JSON or the
terminal tables (``tui/commands/evaluate_tables.py``).

Only the standard library and ``core.errors`` are imported at module level (the command line starts instantly).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.commands.evaluate_tables import print_tables
from easl_toolkit.tui.commands.progress import bootstrap_progress, stage_progress
from easl_toolkit.tui.evaluation import evaluate_loaded, nothing_left


def run(args: argparse.Namespace) -> int:
    """Run ``easl evaluate`` (exit status 0; a bad option or input is a ``EaslError``)."""
    import numpy as np

    from easl_toolkit.core.metrics.data import Scale
    from easl_toolkit.core.metrics.load import load_long, load_wide

    if args.bootstrap < 0:
        raise EaslError(f"--bootstrap must be 0 or more, got {args.bootstrap}.")
    if args.rater_error_variance is not None and not (
        np.isfinite(args.rater_error_variance) and args.rater_error_variance >= 0
    ):
        raise EaslError(f"--rater-error-variance must be a finite number >= 0, got {args.rater_error_variance}.")
    scale = None
    if args.scale:
        try:
            scale = Scale(*args.scale)
        except ValueError as exc:
            raise EaslError(f"--scale {args.scale[0]:g} {args.scale[1]:g}: {exc}.") from None
    if args.population_size is not None and not (np.isfinite(args.population_size) and args.population_size > 0):
        raise EaslError(f"--population-size must be a finite positive number, got {args.population_size:g}.")
    _check_repeats(args)
    _check_project_options(args)
    if args.dask:
        return _run_dask(args, scale)
    if args.project:
        if args.file:
            raise EaslError("give either FILE or --project, not both.")
        data, project_scale = _load_project(args)
        scale = scale or project_scale
        source = args.project
    elif not args.file:
        raise EaslError("name the FILE to evaluate (or --project PROJECT --system SCORES).")
    elif args.long:
        data = load_long(
            args.file, columns=_long_columns(args), system=args.system, human=args.human, group_col=args.group_col
        )
        source = args.file
    else:
        _check_wide(args)
        data = load_wide(args.file, human=args.human, system=args.system, id_col=args.id_col, group_col=args.group_col)
        source = args.file

    _check_population(args, data, source)
    if args.base_group is not None and (data.groups is None or args.base_group not in set(map(str, data.groups))):
        raise EaslError(f"--base-group {args.base_group!r}: not a group of the --group column.")
    progress_cb, finish = bootstrap_progress(args.bootstrap, quiet=False)
    try:
        ev = evaluate_loaded(
            data, source, group_name=args.group_col or "group", progress=progress_cb, options=_options(args, scale)
        )
    finally:
        finish()
    return _emit(ev, args, source)


def _options(args, scale):
    """The options of the evaluation from the command line (``core.metrics.options.EvaluationOptions``), the
    same for both engines."""
    from easl_toolkit.core.metrics.options import EvaluationOptions

    return EvaluationOptions(
        scale=scale,
        exclude_zeros=args.exclude_zeros,
        rater_error_variance=args.rater_error_variance,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        population_size=args.population_size,
        base_group=args.base_group,
        weights=tuple(args.weights),
    )


def _check_project_options(args) -> None:
    """``--against`` and ``--raw-ratings`` evaluate a project's ratings: refused without ``--project``, and
    ``--raw-ratings`` with ``--against estimates`` (the estimates are the model's, not ratings)."""
    if not args.project and (args.against != "ratings" or args.raw_ratings):
        flag = "--raw-ratings" if args.raw_ratings else f"--against {args.against}"
        raise EaslError(f"{flag} evaluates a project's ratings: give --project PROJECT.")
    if args.raw_ratings and args.against == "estimates":
        raise EaslError("--raw-ratings applies to the ratings; --against estimates evaluates the model's estimates.")


def _long_columns(args) -> tuple[str, str, str]:
    parts = tuple(s.strip() for s in args.long.split(","))
    if len(parts) != 3 or not all(parts):
        raise EaslError(f"--long expects three column names ITEM,RATER,SCORE, got {args.long!r}.")
    return parts[0], parts[1], parts[2]


def _check_repeats(args) -> None:
    """A column (or rater) named twice in --human or --system is refused: a rater compared with itself agrees
    perfectly (r = 1, alpha = 1), and a system named twice would be reported once."""
    for flag, names in (("--human", args.human or []), ("--system", args.system or [])):
        seen = set()
        for name in names:
            if name in seen:
                raise EaslError(
                    f"{flag} names {name!r} twice; each rater or system is one column, and a rater compared "
                    f"with itself would agree perfectly."
                )
            seen.add(name)


def _check_population(args, data, source) -> None:
    """--population-size below the responses evaluated is refused: the finite-population correction
    f = n / N of the agreement standard errors (core/metrics/intervals/agreement_variance.py) needs n <= N."""
    n = len(data.ids)
    if args.population_size is not None and args.population_size < n:
        raise EaslError(
            f"{source}: --population-size {args.population_size:g} is smaller than the {n} responses of the "
            f"sample; the population includes every response of the sample."
        )


def _check_wide(args) -> None:
    if not args.human:
        raise EaslError("--human is required: name the human score column(s) of the file.")
    overlap = set(args.human) & set(args.system)
    if overlap:
        raise EaslError(f"{args.file}: column {sorted(overlap)[0]!r} is given both as --human and --system.")


def _emit(ev, args, source) -> int:
    """Refuse an empty evaluation, then write the report directory, the JSON or the tables."""
    from easl_toolkit.core.metrics.output_schema import as_schema
    from easl_toolkit.core.metrics.report import to_json_text, write_output

    if ev.n_responses == 0 and ev.human_human.all_raters is None:
        raise nothing_left(source, ev.dropped)
    if args.output:
        write_output(ev, Path(args.output), source=str(source), seed=args.seed, schema=args.schema)
    if args.json:
        sys.stdout.write(to_json_text(as_schema(ev.to_json(), args.schema)) + "\n")
    else:
        print_tables(ev, args)
    return 0


def _run_dask(args, scale) -> int:
    """``--dask``: the partitioned FILE evaluated on a Dask cluster (core.distributed), same outputs."""
    from easl_toolkit.core.distributed.cluster import connect
    from easl_toolkit.core.distributed.evaluate import Columns, evaluate_dask

    if args.project:
        raise EaslError("--dask evaluates partitioned files; --project is evaluated in memory.")
    if not args.file:
        raise EaslError("name the FILE (a glob or directory of Parquet or CSV partitions) to evaluate with --dask.")
    long = _long_columns(args) if args.long else None
    if long is None:
        _check_wide(args)
    update, finish = stage_progress()
    try:
        with connect(args.dask, workers=args.dask_workers, memory_limit=args.dask_memory) as client:
            columns = Columns(
                human=tuple(args.human or ()),
                system=tuple(args.system),
                group=args.group_col,
                id=args.id_col,
                long=long,
            )
            ev = evaluate_dask(client, args.file, columns, options=_options(args, scale), progress=update)
    except ValueError as exc:
        raise EaslError(f"{args.file}: {exc}.") from None
    finally:
        finish()
    return _emit(ev, args, args.file)


def _load_project(args):
    """The campaign's human raters (``core.metrics.project_raters``: annotator-corrected, random clickers left out,
    repeats averaged; or, ``--against estimates``, the project's own estimates) and the system scores file; the
    project's score range as scale."""
    from easl_toolkit.core.metrics.data import Scale
    from easl_toolkit.core.metrics.load import SystemFile, load_campaign
    from easl_toolkit.core.metrics.project_raters import estimate_table, rater_table
    from easl_toolkit.tui.evaluation import read_project

    system_file, *columns = args.system
    against_estimates = args.against == "estimates"
    source = read_project(args.project, estimates=against_estimates)
    raters = estimate_table(source) if against_estimates else rater_table(source, raw=args.raw_ratings)
    scores = SystemFile(system_file, columns or None, args.id_col or "item_id", args.group_col)
    data = load_campaign(raters, source.items, scores)
    return _with_design(args.project, data), Scale(*source.scale)


def _with_design(path: str, data):
    """``data`` with an evaluation campaign's design-weighted estimates of the systems in its raters' summary
    (``Project.design_estimates``), when the project drew its responses with recorded probabilities and every
    response has each system's score (else the reason why not); else as it is."""
    from dataclasses import replace

    import numpy as np
    import pandas as pd

    from easl_toolkit.core.store import Project

    if data.raters is None or data.raters.against != "ratings":
        return data
    names = list(data.system)
    with Project.open(path, readonly=True) as project:
        at = pd.Index(data.ids).get_indexer(project.item_index().astype(str))
        systems = np.column_stack([np.where(at >= 0, data.system[s][at], np.nan) for s in names])
        figures = project.design_estimates(systems, names)
    return data if figures is None else replace(data, raters=replace(data.raters, design=figures))
