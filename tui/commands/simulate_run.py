"""The work of ``easl simulate`` (its parser is ``tui/commands/simulate.py``): turn the options into each
experiment's settings, run it here or on Dask (``--dask``), write the report with the command that reproduces it,
and print the headline figures.

Only the standard library and ``core.errors`` are imported at module level (the command line starts instantly).
Core states what is wrong with a setting (:class:`core.errors.HyperParameterError`, naming the field); the options
that set it are named here (:func:`_options`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from easl_toolkit.core.errors import EaslError, HyperParameterError
from easl_toolkit.tui.commands.progress import step_progress

#: Options that change where the runs execute, never the numbers: left out of the reproduction command.
_WHERE = ("help", "dask", "dask_workers", "dask_memory")
#: Settings fields set by an option of another name (the others: ``--`` and the field with dashes).
_OPTIONS = {"n_annotators": "--annotators", "n_items": "--items", "beta": "--beta"}


@contextlib.contextmanager
def _options() -> Iterator[None]:
    """Reword a setting's error with the option that sets it: ``--noise-sd -1.0: must be >= 0.``."""
    try:
        yield
    except HyperParameterError as exc:
        option = _OPTIONS.get(exc.field, "--" + exc.field.replace("_", "-"))
        raise EaslError(f"{option} {exc.value}: {exc.need}.") from None


def _command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this run: ``easl simulate EXPERIMENT`` plus every option not at its default."""
    parts = ["easl", "simulate", args.experiment]
    for action in args.parser._actions:
        if not action.option_strings or action.dest in _WHERE:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default or value is False:
            continue
        flag = action.option_strings[-1]
        if value is True:
            parts.append(flag)
        elif isinstance(value, (list, tuple)) and action.nargs not in (None, "?"):
            parts += [flag] + [str(v) for v in value]
        elif isinstance(value, (list, tuple)):
            parts += [flag, ",".join(str(v) for v in value)]
        else:
            parts += [flag, str(value)]
    return " ".join(shlex.quote(p) for p in parts)


@contextlib.contextmanager
def _mapper(args: argparse.Namespace):
    """``None`` (run here, in order) or a Dask ``map_fn`` (core.distributed.cluster) for ``--dask``."""
    if not getattr(args, "dask", None):
        yield None
        return
    from easl_toolkit.core.distributed.cluster import connect, dask_map

    with connect(args.dask, workers=args.dask_workers, memory_limit=args.dask_memory) as client:
        yield dask_map(client)


def _finish(out: Path, started: float, lines: list[str]) -> None:
    from rich.console import Console

    con = Console()
    for line in lines:
        con.print(line)
    con.print(f"report: {out / 'report.md'}  ({time.perf_counter() - started:.1f} s)")


def _given(args: argparse.Namespace, settings: Any, renamed: dict[str, str] | None = None) -> dict[str, Any]:
    """``{field: value}`` for every option set on the command line that names a field of the dataclass ``settings``
    (its own name, or ``renamed[option]``); lists become tuples."""
    names = {f.name for f in dataclasses.fields(settings)}
    kw: dict[str, Any] = {}
    for arg, value in vars(args).items():
        field = (renamed or {}).get(arg, arg)
        if field in names and value is not None:
            kw[field] = tuple(value) if isinstance(value, (list, tuple)) else value
    return kw


#: ``easl simulate prmse`` options named otherwise than their ``PrmseSettings`` field.
_PRMSE_RENAMED = {
    "responses": "n_responses",
    "rater_correlations": "rater_rhos",
    "percentages": "double_scored_percentages",
}
_QUICK_PRMSE: dict[str, Any] = dict(
    n_responses=2000, raters_per_category=10, pairs_per_category=5, systems_per_category=3, sample_system="sys_10"
)


def run_prmse(args: argparse.Namespace) -> int:
    """Run ``easl simulate prmse``."""
    from easl_toolkit.core.simulate import prmse_report
    from easl_toolkit.core.simulate.prmse import PrmseSettings

    started = time.perf_counter()
    kw = (_QUICK_PRMSE if args.quick else {}) | _given(args, PrmseSettings, _PRMSE_RENAMED)
    if args.score_range:
        kw["score_min"], kw["score_max"] = args.score_range
    settings = PrmseSettings(**kw)
    n_cat = len(settings.rater_categories)
    n_steps = (0 if settings.error_sds else n_cat) + 1 + n_cat + 2 + (0 if args.no_double_scoring else n_cat) + 1
    prog, advance = step_progress("simulate prmse", n_steps)
    with _mapper(args) as map_fn, prog:
        res = prmse_report.run(settings, progress=advance, double_scoring=not args.no_double_scoring, map_fn=map_fn)
        rep = prmse_report.write_report(res, args.out, _command_line(args))
        advance("report")
    lines = []
    if res.comparisons:
        rows = [r for c in res.comparisons.values() for r in c.rows if r["within_tolerance"] is not None]
        ok = sum(bool(r["within_tolerance"]) for r in rows)
        lines.append(f"{ok} of {len(rows)} published numbers reproduced within tolerance")
    lines.append(
        "rater error sds: " + ", ".join(f"{c} {v:.2f}" for c, v in zip(res.table1["category"], res.table1["error_sd"]))
    )
    _finish(rep.out, started, lines)
    return 0


_QUICK_METRICS: dict[str, Any] = dict(
    prevalence_sds=(0.5, 1.0, 1.5, 2.5, 5.0),
    marginal_means=(0.0, 2.0, 4.5, 7.0, 9.0),
    range_points=(40, 20, 10, 5, 3),
)


def run_metrics(args: argparse.Namespace) -> int:
    """Run ``easl simulate metrics``."""
    import numpy as np

    from easl_toolkit.core.simulate import agreement_properties as metrics
    from easl_toolkit.core.simulate.agreement_properties import PropertySettings

    started = time.perf_counter()
    kw = (_QUICK_METRICS if args.quick else {}) | _given(args, PropertySettings, {"responses": "n"})
    settings = PropertySettings(**kw | ({"n": 1000} if args.quick else {}))  # --quick: 1,000 responses
    prog, advance = step_progress("simulate metrics", 6)
    with _mapper(args) as map_fn, prog, _options():
        res = metrics.run(
            settings, np.random.default_rng(settings.seed), progress=advance, flat=args.flat, map_fn=map_fn
        )
        rep = metrics.write_report(res, args.out, _command_line(args))
        advance("report")
    _finish(rep.out, started, [])
    return 0


def _campaign(args: argparse.Namespace, rng: Any) -> tuple[Any, Any, Any]:
    """``easl simulate easl``'s ``(CampaignSettings, AnnotatorModel, Oracle)`` (``--quick``: at most 6 iterations,
    3 runs, 200 bootstrap resamples)."""
    from easl_toolkit.core.simulate import annotation

    iterations, runs, boot = args.iterations, args.runs, args.bootstrap
    if args.quick:
        iterations, runs, boot = min(iterations, 6), min(runs, 3), min(boot, 200)
    with _options():
        settings = annotation.CampaignSettings(
            methods=tuple(args.methods),
            hit_size=args.hit_size,
            hits_per_iteration=args.hits_per_iteration,
            iterations=iterations,
            runs=runs,
            gamma=args.gamma,
            epsilon=args.epsilon,
            partner_pool=args.partner_pool,
            seed=args.seed,
            target=args.target,
            bootstrap=boot,
            heatmap_iterations=tuple(i for i in args.heatmap_iterations if i < iterations),
        )
        annotators = annotation.AnnotatorModel(
            noise_sd=args.noise_sd, n_annotators=args.annotators, bias_sd=args.bias_sd, noise_spread=args.noise_spread
        )
        if args.oracle in ("beta", "uniform"):
            return settings, annotators, annotation.synthetic_oracle(args.oracle, args.items, rng, *args.beta)
    value_range = tuple(args.oracle_range) if args.oracle_range else None
    if value_range is None and Path(args.oracle).name == annotation.POLITICAL_ORACLE_FILE:
        value_range = annotation.POLITICAL_RANGE
    return settings, annotators, annotation.csv_oracle(args.oracle, args.oracle_column, value_range, args.id_column)


def run_easl(args: argparse.Namespace) -> int:
    """Run ``easl simulate easl``."""
    import numpy as np

    from easl_toolkit.core.simulate import annotation

    if getattr(args, "annotator_model", None):
        return run_aware_study(args)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    settings, annotators, oracle = _campaign(args, rng)
    prog, advance = step_progress("simulate easl", len(settings.methods) * settings.runs + 1)
    with _mapper(args) as map_fn, prog:
        res = annotation.compare_methods(
            oracle,
            settings,
            annotators,
            rng,
            workdir=args.keep_projects,
            progress=lambda method, run: advance(f"{method} run {run + 1}"),
            map_fn=map_fn,
        )
        rep = annotation.write_report(
            res, oracle, settings, annotators, args.out, _command_line(args), runtime=time.perf_counter() - started
        )
        advance("report")
    lines = []
    reach = annotation.annotations_to_reach(res["summary"], res["curves"], settings.target)
    for row in reach.itertuples():
        val = "not reached" if np.isnan(row.mean_curve_annotations) else f"{row.mean_curve_annotations:.0f}"
        lines.append(f"{annotation.METHOD_LABELS[row.method]}: annotations to Spearman {settings.target:g}: {val}")
    _finish(rep.out, started, lines)
    return 0


def _study_options(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...], str | None, str]:
    """``easl simulate easl --annotator-model ...``'s annotator models, methods, oracle file (None: generated) and
    the oracle's description, checked."""
    from easl_toolkit.core.simulate import aware_study
    from easl_toolkit.core.simulate.aware_world import ANNOTATOR_MODELS

    models = tuple(args.annotator_model)
    bad = [m for m in models if m not in ANNOTATOR_MODELS]
    if bad:
        raise EaslError(f"--annotator-model {bad[0]}: choose from {', '.join(ANNOTATOR_MODELS)}.")
    methods = tuple(args.methods)
    if methods == ("da", "ra", "trueskill", "easl"):  # the parser's default: the study's methods instead
        methods = aware_study.METHODS
    bad = [m for m in methods if m not in aware_study.METHODS]
    if bad:
        raise EaslError(f"--methods {bad[0]}: with --annotator-model choose from {', '.join(aware_study.METHODS)}.")
    if "da" not in methods:
        raise EaslError("--methods must include da: the savings are measured against it.")
    if args.oracle in ("beta", "uniform"):
        if args.oracle != "beta" or tuple(args.beta) != (2.0, 2.0):
            raise EaslError("--annotator-model uses the generated Beta(2,2) oracle or --oracle FILE.")
        return models, methods, None, f"generated: the quantiles of Beta(2, 2) at {args.items} items"
    if not Path(args.oracle).is_file():
        raise EaslError(f"--oracle {args.oracle}: no such file.")
    return models, methods, args.oracle, f"{Path(args.oracle).name} (column {args.oracle_column or 'label'})"


def run_aware_study(args: argparse.Namespace) -> int:
    """``easl simulate easl --annotator-model ...``: the annotator-aware study (``core.simulate.aware_study``)."""
    from easl_toolkit.core.simulate import aware_study

    started = time.perf_counter()
    models, methods, oracle, description = _study_options(args)
    seeds = min(args.runs, 3) if args.quick else args.runs
    per_item = min(args.max_per_item, 8.0) if args.quick else args.max_per_item
    prog, advance = step_progress("simulate easl (annotator-aware study)", len(models) * len(methods) * seeds + 1)
    with _mapper(args) as map_fn, prog:
        truth = aware_study.Truth(oracle, args.oracle_column or "label", args.items)
        result = aware_study.run_study(
            aware_study.StudyDesign(models, methods, seeds, args.seed, args.target, truth),
            aware_study.RunSettings(hit_size=args.hit_size, max_per_item=per_item),
            progress=lambda done, total: advance(""),
            **({} if map_fn is None else {"map_fn": map_fn}),
        )
        run = aware_study.StudyRun(args.target, description, seeds, time.perf_counter() - started)
        rep = aware_study.write_report(result, args.out, _command_line(args), run)
        advance("report")
    lines = [
        f"{row.model} {aware_study.METHOD_LABELS.get(row.method, row.method)}: "
        f"{getattr(row, 'saved_vs_da', float('nan')):+.0f}% annotations saved vs DA "
        f"{getattr(row, 'saved_vs_da_ci', '')}"
        for row in result["budget"].itertuples()
        if row.method != "da"
    ]
    _finish(rep.out, started, lines)
    return 0
