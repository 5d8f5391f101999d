"""`easl simulate (prmse | metrics | easl)`: reproduce the seed papers' experiments with tables, figures and a report.

- ``prmse``: Loukina et al. (2020), the simulated dataset and sections 4.1-4.3, 5.2-5.3.
- ``metrics``: Yannakoudakis & Cummins (2015), section 4, for every agreement coefficient in ``core.metrics``.
- ``easl``: Sakaguchi & Van Durme (2018), section 5: DA, RA, TrueSkill and EASL through the real engine.

Each writes ``OUT/report.md``, ``OUT/tables/*.csv`` and ``OUT/figures/*.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import time
from pathlib import Path
from typing import Any

#: Options that change where the runs execute, never the numbers: left out of the reproduction command.
_WHERE = ("help", "dask", "dask_workers", "dask_memory")


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


def _progress(description: str, total: int):
    """A rich progress bar on stderr; returns (context manager, advance(label) callable)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[step]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    task = prog.add_task(description, total=total, step="")

    def advance(step: str = "") -> None:
        prog.update(task, advance=1, step=step)

    return prog, advance


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: X)" only for options whose default is a value (not None / False)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def _add_dask(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dask",
        metavar="local|ADDRESS",
        help="run the independent runs on Dask (needs the dask extra): 'local' starts a cluster on this machine, "
        "an address (tcp://host:8786) uses a running scheduler; same seed, same numbers as one process",
    )
    p.add_argument("--dask-workers", type=int, metavar="N", help="workers of the local Dask cluster (default: cores)")
    p.add_argument("--dask-memory", metavar="BYTES", help="memory limit per local Dask worker, e.g. 2GiB")


@contextlib.contextmanager
def _mapper(args: argparse.Namespace):
    """``None`` (run here, in order) or a Dask ``map_fn`` (core.distributed.runs) for ``--dask``."""
    if not getattr(args, "dask", None):
        yield None
        return
    from core.distributed.cluster import connect
    from core.distributed.runs import dask_map

    with connect(args.dask, workers=args.dask_workers, memory_limit=args.dask_memory) as client:
        yield dask_map(client)


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def register(subparsers) -> None:
    """Add ``simulate`` and its three experiments to the ``easl`` parser."""
    p = subparsers.add_parser(
        "simulate",
        help="reproduce the seed papers' experiments (prmse | metrics | easl)",
        description="Reproduce the seed papers' experiments and write CSV tables, PNG figures and a Markdown report "
        "that puts each reproduced number next to the published one.",
    )
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)

    # ---- prmse ------------------------------------------------------------------------------------------------
    q = sub.add_parser(
        "prmse",
        help="Loukina et al. (2020): PRMSE and label noise",
        formatter_class=_HelpFormatter,
        description="Simulate the PRMSE paper's dataset exactly as the authors' code does and run "
        "sections 4.1 (Fig 1), 4.2 (Fig 2, Table 3), 4.3 (Fig 3), 5.2 (Fig 4) and "
        "5.3 (Fig 5, Table 4). Defaults are the authors' settings.",
    )
    q.add_argument("--out", default="simulate-prmse", help="output directory")
    q.add_argument(
        "--quick",
        action="store_true",
        help="reduced run: 2,000 responses, 10 raters and 5 pairs per category, 3 systems per "
        "category (published numbers are then not comparable)",
    )
    q.add_argument("--responses", type=int, help="number of responses (default 10000)")
    q.add_argument("--score-range", type=int, nargs=2, metavar=("MIN", "MAX"), help="score scale (default 1 6)")
    q.add_argument("--true-mean", type=float, help="mean of the true scores (default 3.844)")
    q.add_argument("--true-sd", type=float, help="sd of the true scores (default 0.74)")
    q.add_argument("--rater-categories", type=_names, help="comma-separated names (default low,moderate,average,high)")
    q.add_argument(
        "--rater-correlations", type=_floats, help="target mean inter-rater r per category (default 0.4,0.55,0.65,0.8)"
    )
    q.add_argument("--error-sds", type=_floats, help="use these rater error sds instead of searching")
    q.add_argument("--raters-per-category", type=int, help="raters per category (default 50)")
    q.add_argument(
        "--system-categories", type=_names, help="comma-separated names (default poor,low,medium,high,perfect)"
    )
    q.add_argument("--system-r2", type=_floats, help="target R2 per system category (default 0,0.4,0.65,0.8,0.99)")
    q.add_argument("--systems-per-category", type=int, help="systems per category (default 5)")
    q.add_argument(
        "--sd-grid",
        type=float,
        nargs=3,
        metavar=("START", "STOP", "STEP"),
        help="error-sd search grid, np.arange(START, STOP, STEP) (default 0.01 1.5 0.01)",
    )
    q.add_argument("--pairs-per-category", type=int, help="rater pairs sampled per category (default 50)")
    q.add_argument("--percentages", type=_floats, help="double-scored percentages (default 1,2.5,5,10,25,50,100)")
    q.add_argument("--sample-system", help="system of sections 4.1, 4.3, 5.2, 5.3 (default sys_17)")
    q.add_argument(
        "--same-pair-category", help="category of the common pair in 4.2 and of Table 2's last column (default average)"
    )
    for name, default in (
        ("true-seed", 12345),
        ("search-seed-step", 100),
        ("search-rater-stride", 25),
        ("rater-seed", 34567),
        ("rater-stride", 123),
        ("system-seed", 67890),
        ("system-stride", 456),
        ("pair-seed", 1234567890),
        ("double-scoring-seed", 987654321),
    ):
        q.add_argument(f"--{name}", type=int, help=f"(default {default})")
    q.add_argument("--no-double-scoring", action="store_true", help="skip section 5.3 (Figure 5, Table 4)")
    _add_dask(q)
    q.set_defaults(func=run_prmse, parser=q)

    # ---- metrics ----------------------------------------------------------------------------------------------
    m = sub.add_parser(
        "metrics",
        help="Yannakoudakis & Cummins (2015): agreement coefficient properties",
        formatter_class=_HelpFormatter,
        description="The four property experiments of section 4 (trait prevalence, marginal "
        "homogeneity, magnitude of misclassification, score range) for every "
        "chance-corrected agreement coefficient in core.metrics and every weighting.",
    )
    m.add_argument("--out", default="simulate-metrics", help="output directory")
    m.add_argument("--quick", action="store_true", help="reduced run: 1,000 responses and coarser grids")
    m.add_argument("--responses", type=int, default=5000, help="gold scores per experiment")
    m.add_argument("--seed", type=int, default=2015, help="random seed")
    m.add_argument("--prevalence-sds", type=_floats, help="gold sds of 4.1 (default 0.5..5 by 0.25)")
    m.add_argument("--prevalence-error-share", type=float, default=0.25, help="share of gold scores perturbed in 4.1")
    m.add_argument(
        "--marginal-means", type=_floats, help="means of the incorrect predictions in 4.2 (default 0..9 by 0.5)"
    )
    m.add_argument("--marginal-mae", type=float, default=1.0, help="constant MAE in 4.2")
    m.add_argument("--magnitude-sizes", type=_ints, help="error sizes in 4.3 (default 1,2,3,4,5)")
    m.add_argument("--magnitude-mae", type=float, default=0.6, help="constant MAE in 4.3")
    m.add_argument("--range-points", type=_ints, help="numbers of score points in 4.4 (default 40..3)")
    m.add_argument("--prevalence-scale", type=int, nargs=2, metavar=("MIN", "MAX"), help="scale of 4.1 (default 1 5)")
    m.add_argument("--prevalence-error-size", type=int, help="points each perturbed score moves in 4.1 (default 2)")
    m.add_argument("--marginal-scale", type=int, nargs=2, metavar=("MIN", "MAX"), help="scale of 4.2 (default 0 9)")
    m.add_argument("--marginal-gold-sd", type=float, help="sd of the gold scores in 4.2 (default 1)")
    m.add_argument("--marginal-wrong-sd", type=float, help="sd of the incorrect predictions in 4.2 (default 1)")
    m.add_argument("--magnitude-scale", type=int, nargs=2, metavar=("MIN", "MAX"), help="scale of 4.3 (default 0 9)")
    m.add_argument("--magnitude-gold-sd", type=float, help="sd of the gold scores in 4.3 (default 2)")
    m.add_argument(
        "--range-scale", type=int, nargs=2, metavar=("MIN", "MAX"), help="scale of the 4.4 stand-in data (default 1 40)"
    )
    m.add_argument("--range-gold-sd", type=float, help="sd of the gold scores in 4.4 (default 6)")
    m.add_argument("--range-error-sd", type=float, help="sd of the system's error in 4.4 (default 3)")
    m.add_argument(
        "--flat",
        type=float,
        default=0.02,
        help="a change below this counts as 'robust' / 'unaffected' in the property table",
    )
    _add_dask(m)
    m.set_defaults(func=run_metrics, parser=m)

    # ---- easl -------------------------------------------------------------------------------------------------
    e = sub.add_parser(
        "easl",
        help="Sakaguchi & Van Durme (2018): DA, RA, TrueSkill and EASL at equal budgets",
        formatter_class=_HelpFormatter,
        description="Simulated annotators score the HITs that the real engine selects (project file, "
        "next HITs, ingest, estimates) for each method, against an oracle: generated "
        "latent values by default; the paper's political-spectrum run takes its data "
        "file, --oracle political_150_gold.csv (not shipped: see the README, "
        "'Reproducing the papers').",
    )
    e.add_argument("--out", default="simulate-easl", help="output directory")
    e.add_argument("--quick", action="store_true", help="reduced run: 3 runs, 6 iterations, 200 bootstrap resamples")
    e.add_argument(
        "--oracle",
        default="beta",
        metavar="beta|uniform|FILE",
        help="generated latent values ('beta': Beta(A, B) draws, see --beta; 'uniform') for --items "
        "items, or a CSV file of items and their oracle values, e.g. the paper's "
        "political_150_gold.csv",
    )
    e.add_argument("--oracle-column", help="oracle column of a CSV oracle (default: oracle, else label)")
    e.add_argument(
        "--oracle-range",
        type=float,
        nargs=2,
        metavar=("MIN", "MAX"),
        help="range mapped to 0..1 (default: -2 2 for political_150_gold.csv, else the column's min and max)",
    )
    e.add_argument("--id-column", help="item id column of a CSV oracle (default: id or item_id, else row number)")
    e.add_argument("--items", type=int, default=150, help="number of synthetic items")
    e.add_argument(
        "--beta",
        type=float,
        nargs=2,
        default=(2.0, 2.0),
        metavar=("A", "B"),
        help="Beta parameters of the synthetic oracle",
    )
    e.add_argument(
        "--methods",
        type=_names,
        default=("da", "ra", "trueskill", "easl"),
        help="comma-separated: da, ra, trueskill, easl; with --annotator-model: da, da-z, easl, aware "
        "(default then da,da-z,easl,aware)",
    )
    e.add_argument(
        "--annotator-model",
        type=_names,
        metavar="M1,...",
        help="run the annotator-aware study instead (issue 10): comma-separated annotator models M1 (noise "
        "only), M2 (offsets), M3 (offsets and slopes), M4 (M2 + 10%% random clickers), M5 "
        "(item-dependent noise), IX (item x annotator interaction), DRIFT (drifting offsets); --runs "
        "seeds each (20 for the README's table), target --target; the oracle is the Beta(2,2) "
        "quantiles of --items items (--oracle beta) or --oracle FILE with --oracle-column (default "
        "label)",
    )
    e.add_argument(
        "--max-per-item", type=float, default=12.0, help="with --annotator-model: the budget, in scores per item"
    )
    e.add_argument("--hit-size", type=int, default=5, help="items per HIT (n)")
    e.add_argument("--hits-per-iteration", type=int, default=20, help="HITs per iteration after the covering one")
    e.add_argument("--iterations", type=int, default=10, help="iterations (the first covers every item once)")
    e.add_argument("--runs", type=int, default=10, help="repeated runs per method (for the bootstrap bands)")
    e.add_argument("--gamma", type=float, default=0.1, help="skill chain gamma")
    e.add_argument("--epsilon", type=float, default=0.1, help="tie / draw margin epsilon")
    e.add_argument("--partner-pool", choices=("paper", "all"), default="paper", help="partner pool of Algorithm 1")
    e.add_argument("--noise-sd", type=float, default=0.2, help="annotator noise sd on the 0..1 scale")
    e.add_argument(
        "--noise-spread", type=float, default=0.0, help="per-annotator noise sd ~ Uniform(sd (1 - s), sd (1 + s))"
    )
    e.add_argument("--bias-sd", type=float, default=0.0, help="sd of each annotator's additive bias")
    e.add_argument("--annotators", type=int, default=50, help="size of the annotator pool")
    e.add_argument("--target", type=float, default=0.9, help="Spearman target for 'annotations needed'")
    e.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the runs for the 95%% bands")
    e.add_argument("--heatmap-iterations", type=_ints, default=(0, 3, 6, 9), help="iterations shown in the heat maps")
    e.add_argument("--seed", type=int, default=0, help="random seed")
    e.add_argument("--keep-projects", metavar="DIR", help="keep the simulated project files in DIR")
    _add_dask(e)
    e.set_defaults(func=run_easl, parser=e)


def _finish(out: Path, started: float, lines: list[str]) -> None:
    from rich.console import Console

    con = Console()
    for line in lines:
        con.print(line)
    con.print(f"report: {out / 'report.md'}  ({time.perf_counter() - started:.1f} s)")


def run_prmse(args: argparse.Namespace) -> int:
    """Run ``easl simulate prmse``."""
    from core.simulate import prmse_report
    from core.simulate.prmse_data import PrmseSettings

    started = time.perf_counter()
    kw: dict[str, Any] = {}
    if args.quick:
        kw.update(
            n_responses=2000,
            raters_per_category=10,
            pairs_per_category=5,
            systems_per_category=3,
            sample_system="sys_10",
        )
    mapping = {
        "responses": "n_responses",
        "true_mean": "true_mean",
        "true_sd": "true_sd",
        "rater_categories": "rater_categories",
        "rater_correlations": "rater_rhos",
        "error_sds": "error_sds",
        "raters_per_category": "raters_per_category",
        "system_categories": "system_categories",
        "system_r2": "system_r2",
        "systems_per_category": "systems_per_category",
        "sd_grid": "sd_grid",
        "pairs_per_category": "pairs_per_category",
        "percentages": "double_scored_percentages",
        "sample_system": "sample_system",
        "same_pair_category": "same_pair_category",
        "true_seed": "true_seed",
        "search_seed_step": "search_seed_step",
        "search_rater_stride": "search_rater_stride",
        "rater_seed": "rater_seed",
        "rater_stride": "rater_stride",
        "system_seed": "system_seed",
        "system_stride": "system_stride",
        "pair_seed": "pair_seed",
        "double_scoring_seed": "double_scoring_seed",
    }
    for arg, field in mapping.items():
        value = getattr(args, arg)
        if value is not None:
            kw[field] = tuple(value) if isinstance(value, (list, tuple)) else value
    if args.score_range:
        kw["score_min"], kw["score_max"] = args.score_range
    settings = PrmseSettings(**kw)
    n_cat = len(settings.rater_categories)
    n_steps = (0 if settings.error_sds else n_cat) + 1 + n_cat + 2 + (0 if args.no_double_scoring else n_cat) + 1
    prog, advance = _progress("simulate prmse", n_steps)
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


def run_metrics(args: argparse.Namespace) -> int:
    """Run ``easl simulate metrics``."""
    import numpy as np

    from core.simulate import metrics_report
    from core.simulate.agreement_properties import PropertySettings

    started = time.perf_counter()
    kw = dict(
        n=args.responses,
        seed=args.seed,
        prevalence_error_share=args.prevalence_error_share,
        marginal_mae=args.marginal_mae,
        magnitude_mae=args.magnitude_mae,
    )
    if args.quick:
        kw.update(
            n=1000,
            prevalence_sds=(0.5, 1.0, 1.5, 2.5, 5.0),
            marginal_means=(0.0, 2.0, 4.5, 7.0, 9.0),
            range_points=(40, 20, 10, 5, 3),
        )
    for arg in (
        "prevalence_sds",
        "marginal_means",
        "magnitude_sizes",
        "range_points",
        "prevalence_scale",
        "prevalence_error_size",
        "marginal_scale",
        "marginal_gold_sd",
        "marginal_wrong_sd",
        "magnitude_scale",
        "magnitude_gold_sd",
        "range_scale",
        "range_gold_sd",
        "range_error_sd",
    ):
        value = getattr(args, arg)
        if value is not None:
            kw[arg] = tuple(value) if isinstance(value, (list, tuple)) else value
    settings = PropertySettings(**kw)
    prog, advance = _progress("simulate metrics", 6)
    with _mapper(args) as map_fn, prog:
        res = metrics_report.run(
            settings, np.random.default_rng(settings.seed), progress=advance, flat=args.flat, map_fn=map_fn
        )
        rep = metrics_report.write_report(res, args.out, _command_line(args))
        advance("report")
    _finish(rep.out, started, [])
    return 0


def run_easl(args: argparse.Namespace) -> int:
    """Run ``easl simulate easl``."""
    import numpy as np

    from core.simulate import annotation, easl_report

    if getattr(args, "annotator_model", None):
        return run_aware_study(args)
    started = time.perf_counter()
    iterations, runs, boot = args.iterations, args.runs, args.bootstrap
    if args.quick:
        iterations, runs, boot = min(iterations, 6), min(runs, 3), min(boot, 200)
    heat = tuple(i for i in args.heatmap_iterations if i < iterations)
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
        heatmap_iterations=heat,
    )
    annotators = annotation.AnnotatorModel(
        noise_sd=args.noise_sd, n_annotators=args.annotators, bias_sd=args.bias_sd, noise_spread=args.noise_spread
    )
    rng = np.random.default_rng(args.seed)
    if args.oracle in ("beta", "uniform"):
        oracle = annotation.synthetic_oracle(args.oracle, args.items, rng, *args.beta)
    else:
        value_range = tuple(args.oracle_range) if args.oracle_range else None
        if value_range is None and Path(args.oracle).name == annotation.POLITICAL_ORACLE_FILE:
            value_range = annotation.POLITICAL_RANGE
        oracle = annotation.csv_oracle(args.oracle, args.oracle_column, value_range, args.id_column)
    prog, advance = _progress("simulate easl", len(settings.methods) * settings.runs + 1)
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
        rep = easl_report.write_report(
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


def run_aware_study(args: argparse.Namespace) -> int:
    """``easl simulate easl --annotator-model ...``: the annotator-aware study (``core.simulate.aware_study``)."""
    import inspect

    from core.errors import UserError
    from core.simulate import aware_report, aware_study

    started = time.perf_counter()
    models = tuple(args.annotator_model)
    bad = [m for m in models if m not in aware_study.ANNOTATOR_MODELS]
    if bad:
        raise UserError(f"--annotator-model {bad[0]}: choose from {', '.join(aware_study.ANNOTATOR_MODELS)}.")
    methods = tuple(args.methods)
    if methods == ("da", "ra", "trueskill", "easl"):  # the parser's default: the study's methods instead
        methods = aware_study.METHODS
    bad = [m for m in methods if m not in aware_study.METHODS]
    if bad:
        raise UserError(f"--methods {bad[0]}: with --annotator-model choose from {', '.join(aware_study.METHODS)}.")
    if "da" not in methods:
        raise UserError("--methods must include da: the savings are measured against it.")
    seeds = min(args.runs, 3) if args.quick else args.runs
    per_item = min(args.max_per_item, 8.0) if args.quick else args.max_per_item
    if args.oracle in ("beta", "uniform"):
        if args.oracle != "beta" or tuple(args.beta) != (2.0, 2.0):
            raise UserError("--annotator-model uses the generated Beta(2,2) oracle or --oracle FILE.")
        oracle, description = None, f"generated: the quantiles of Beta(2, 2) at {args.items} items"
    else:
        if not Path(args.oracle).is_file():
            raise UserError(f"--oracle {args.oracle}: no such file.")
        oracle, description = args.oracle, f"{Path(args.oracle).name} (column {args.oracle_column or 'label'})"
    prog, advance = _progress("simulate easl (annotator-aware study)", len(models) * len(methods) * seeds + 1)
    with _mapper(args) as map_fn, prog:
        kw: dict[str, Any] = {}
        if map_fn is not None:
            if "map_fn" in inspect.signature(aware_study.run_study).parameters:
                kw["map_fn"] = map_fn
            else:  # this version of the study has no map_fn: it runs here, in order (same numbers)
                prog.console.print("note: this version of the annotator-aware study runs in one process")
        result = aware_study.run_study(
            models=models,
            methods=methods,
            n_seeds=seeds,
            first_seed=args.seed,
            target=args.target,
            oracle=oracle,
            oracle_column=args.oracle_column or "label",
            n_items=args.items,
            hit_size=args.hit_size,
            max_per_item=per_item,
            progress=lambda done, total: advance(""),
            **kw,
        )
        rep = aware_report.write_report(
            result,
            args.out,
            _command_line(args),
            target=args.target,
            oracle=description,
            n_seeds=seeds,
            runtime=time.perf_counter() - started,
        )
        advance("report")
    lines = []
    for row in result["budget"].itertuples():
        if row.method != "da":
            lines.append(
                f"{row.model} {aware_report.METHOD_LABELS.get(row.method, row.method)}: "
                f"{getattr(row, 'saved_vs_da', float('nan')):+.0f}% annotations saved vs DA "
                f"{getattr(row, 'saved_vs_da_ci', '')}"
            )
    _finish(rep.out, started, lines)
    return 0
