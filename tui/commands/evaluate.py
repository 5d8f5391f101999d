"""``easl evaluate``: every agreement, association, accuracy, true-score and fairness metric, with uncertainty.

This module is the command's parser; the work is ``tui/commands/evaluate_run.py`` (``run``) and the terminal
tables ``tui/commands/evaluate_tables.py``.
"""

from __future__ import annotations

import argparse

from easl_toolkit.tui.commands.evaluate_run import run

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
  easl evaluate --project work.easl --system scores.csv --against estimates   (... against its estimates)
  easl evaluate 'ratings/*.parquet' --human h1 h2 --system model --scale 1 6 --dask local
  easl evaluate 'ratings/*.csv' --human h1 h2 --system model --scale 1 6 --dask tcp://scheduler:8786
"""


def register(subparsers) -> None:
    """Add ``evaluate`` to the ``easl`` parser (the work: ``evaluate_run.run``)."""
    p = subparsers.add_parser(
        "evaluate",
        help="metrics of system scores against human ratings (RSMTool-compatible)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for arguments in (_data_arguments, _metric_arguments, _output_arguments, _agreement_arguments, _large_arguments):
        arguments(p)
    p.set_defaults(func=run)


def _data_arguments(p: argparse.ArgumentParser) -> None:
    """Where the ratings and the system scores are: FILE or --project, the columns."""
    p.add_argument(
        "file", metavar="FILE", nargs="?", help="CSV, TSV, JSONL or Parquet file (by extension); not with --project"
    )
    p.add_argument(
        "--project",
        metavar="PROJECT",
        help="evaluate against the ratings of this easl project; --system then names a file of system scores "
        "per item (id column: --id, default item_id) and optionally its score columns. Every annotator is a "
        "rater (ratings without one: the rater (none)), the mean of their ratings of an item its score; on an "
        "annotator-aware project the scores are annotator-corrected (each annotator's offset and slope from the "
        "model) and annotators flagged random are left out, named in the notes",
    )
    p.add_argument(
        "--against",
        choices=("ratings", "estimates"),
        default="ratings",
        help="with --project: evaluate against the ratings (default) or against the project's own per-item "
        "estimates (easl export's estimate column; one consensus score per item, so no human-human or PRMSE figures)",
    )
    p.add_argument(
        "--raw-ratings",
        action="store_true",
        help="with --project on an annotator-aware project: the ratings as given, without the annotator calibration "
        "(random clickers are still left out)",
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


def _metric_arguments(p: argparse.ArgumentParser) -> None:
    """The scale, the score policy, the true-score input and the bootstrap."""
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


def _output_arguments(p: argparse.ArgumentParser) -> None:
    """--json, its layout, and the --output directory."""
    p.add_argument("--json", action="store_true", help="write one JSON object to stdout instead of tables")
    p.add_argument(
        "--schema",
        type=int,
        choices=(1, 2, 3),
        default=3,
        metavar="V",
        help="layout of the JSON object (--json and evaluation.json): 3, the current one (default); 2, without the "
        "raters object; or 1, the layout of easl-toolkit 0.1.0 for scripts written against it "
        "(docs/reference/outputs.md)",
    )
    p.add_argument("--output", metavar="DIR", help="write CSV tables, evaluation.json, report.md and PNG plots here")


def _agreement_arguments(p: argparse.ArgumentParser) -> None:
    """More weightings, the fairness models' base group, the finite-population correction."""
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


def _large_arguments(p: argparse.ArgumentParser) -> None:
    """The long form and data larger than memory on Dask."""
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
