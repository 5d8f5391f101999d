"""``easl init``: create a project file from an items file."""

from __future__ import annotations

import argparse
import os
import sys

from easl_toolkit.core.errors import EaslError

# The choices of --method and --partner-pool, spelt here so that ``easl init --help`` does not load the engine
# (numpy, SciPy, pandas); tests/test_cli_speed.py checks they equal ``core.models.METHODS`` / ``PARTNER_POOLS``.
METHODS = ("easl", "ra", "trueskill", "da", "aware", "campaign")
PARTNER_POOLS = ("paper", "all")
#: The method of a new project when --method is not given: the annotator-aware model (each annotator's offset,
#: slope and reliability), which needs fewer annotations than direct assessment on real human ratings. The paper's
#: EASL and its baselines (ra, trueskill, da) stay one flag away, exactly as published. The single place that names
#: the default: every front end that creates a project imports it from here. A project file records its method,
#: so a change of this default never changes an existing project (and a file with no method reads as easl).
DEFAULT_METHOD = "aware"
#: The method of a project made with --systems: an evaluation campaign.
CAMPAIGN_METHOD = "campaign"
#: The metrics --target may name (``core.models.hyper.CAMPAIGN_TARGETS``; a test checks they are equal).
CAMPAIGN_TARGETS = ("mean", "r", "qwk", "rmse", "smd", "prmse", "hh_r", "hh_qwk")


class _Default(str):
    """The default of --method, told apart from the same name given (--systems makes the default a campaign)."""


def register(subparsers) -> None:
    """Add the ``init`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "init",
        help="create a project file from an items file",
        description="Create a project file (one SQLite file) from an items file (CSV, TSV, JSONL or Parquet) and "
        "start iteration 0, which covers every item once. Refuses to overwrite an existing file; on any "
        "error nothing is created.",
    )
    p.add_argument("project", metavar="PROJECT", help="the project file to create (e.g. work.easl)")
    p.add_argument("--items", required=True, metavar="FILE", help="items file: one row per item with an id and a text")
    p.add_argument("--id-column", default="id", help="column holding the unique item id (default: id)")
    p.add_argument("--text-column", default="text", help="column holding the text shown to annotators (default: text)")
    p.add_argument(
        "--method",
        choices=METHODS,
        default=_Default(DEFAULT_METHOD),
        help="posterior model: aware (annotator-aware: each annotator's offset, slope and reliability; rank "
        "intervals, a stopping rule and annotator diagnostics; saves annotations over direct assessment on real "
        "ratings), or, exactly as published, easl (the paper's EASL), ra (bounded ranking aggregation), trueskill "
        "(TrueSkill) or da (direct assessment); or campaign (an evaluation campaign: the method when --systems "
        f"is given) (default: {DEFAULT_METHOD})",
    )
    add_campaign_flags(p)
    p.add_argument(
        "--uniform-passes",
        type=int,
        default=None,
        metavar="N",
        help="aware only: scores every item gets, least annotated first as in direct assessment, before "
        "the allocation adapts (default: 2)",
    )
    p.add_argument(
        "--stop-at",
        type=float,
        default=None,
        metavar="RHO",
        help="aware only: stop issuing HITs when the expected Spearman correlation of the estimates with "
        "the truth (minus a safety margin, with at least 2 scores per item) reaches RHO, e.g. 0.9",
    )
    p.add_argument("--hit-size", type=int, default=5, help="items per HIT, n (default: 5)")
    p.add_argument(
        "--gamma", type=float, default=0.1, help="skill chain of the match quality, eq 11 and 23 (default: 0.1)"
    )
    p.add_argument(
        "--epsilon", type=float, default=0.1, help="tie margin (RA) / draw margin (TrueSkill) (default: 0.1)"
    )
    p.add_argument(
        "--score-range",
        type=float,
        nargs=2,
        default=(0.0, 100.0),
        metavar=("MIN", "MAX"),
        help="range of the scores annotators give (default: 0 100, as Label Studio sliders)",
    )
    p.add_argument(
        "--partner-pool",
        choices=PARTNER_POOLS,
        default="paper",
        help="draw HIT partners from the non-anchors (paper) or from every item but the anchor (all) (default: paper)",
    )
    p.add_argument(
        "--hits-per-iteration",
        type=int,
        default=None,
        metavar="K",
        help="HITs per iteration after the first (default: number of items // hit size)",
    )
    p.add_argument(
        "--question", help="what annotators are asked, shown above every HIT (e.g. 'How fluent is each text?')"
    )
    p.add_argument("--low-label", help="what the lowest score means, shown at the low end of every slider")
    p.add_argument("--high-label", help="what the highest score means, shown at the high end of every slider")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the random generator; same seed, same HITs (default: 0)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``easl init``; returns the exit status (user errors raise ``EaslError``, worded with the flag to
    change when core names the setting or column at fault)."""
    from easl_toolkit.core.errors import HyperParameterError
    from easl_toolkit.core.store.items import MissingColumn

    try:
        return _run(args)
    except MissingColumn as exc:
        flag = "--id-column" if exc.field == args.id_column else "--text-column"
        raise EaslError(f"{str(exc).rstrip('.')}; name the right one with {flag}.") from None
    except HyperParameterError as exc:
        hint = {
            "hit_size": "give more items or a smaller --hit-size",
            "hits_per_iteration": "lower --hits-per-iteration",
        }.get(exc.field)
        if hint is None:
            raise
        raise EaslError(f"{exc}; {hint}.") from None


def _run(args: argparse.Namespace) -> int:
    from easl_toolkit.core.models import Hyper
    from easl_toolkit.core.models.hyper import method_fields
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.store.items import chunk_rows
    from easl_toolkit.core.tables import check_input, iter_table

    if os.path.lexists(args.project):
        raise EaslError(
            f"{args.project}: already exists; easl init never overwrites a project (choose another "
            f"name or delete the file first)."
        )
    check_input(args.items)  # before any work: an input that is not a regular file may never end
    method = CAMPAIGN_METHOD if args.systems and isinstance(args.method, _Default) else str(args.method)
    aware = {}
    for flag, name in (("--uniform-passes", "uniform_passes"), ("--stop-at", "stop_at")):
        value = getattr(args, name, None)
        if value is None:
            continue
        if name not in method_fields(method):
            raise EaslError(f"{flag} needs --method aware (the method is {method}).")
        aware[name] = value
    aware.update(campaign_settings(args, method))
    if "stop_at" in aware and not 0.0 < aware["stop_at"] < 1.0:
        raise EaslError(f"--stop-at {aware['stop_at']:g}: the target is a Spearman correlation in (0, 1), e.g. 0.9.")
    if aware.get("uniform_passes", 0) < 0:
        raise EaslError(f"--uniform-passes {aware['uniform_passes']}: give a whole number >= 0.")
    hyper = Hyper(
        method=method,
        hit_size=args.hit_size,
        gamma=args.gamma,
        epsilon=args.epsilon,
        score_min=args.score_range[0],
        score_max=args.score_range[1],
        partner_pool=args.partner_pool,
        hits_per_iteration=args.hits_per_iteration,
        seed=args.seed,
        **aware,
    )
    # the items file is read, checked and stored chunk by chunk: memory stays flat whatever its size
    chunks = iter_table(args.items, chunk_rows(args.items))
    with Project.create_from_chunks(
        args.project, chunks, hyper, id_column=args.id_column, text_column=args.text_column
    ) as project:
        project.set_wording(question=args.question, low_label=args.low_label, high_label=args.high_label)
        if not (args.question or "").strip():
            print(
                "warning: no --question: annotators will see no question, only the score range "
                "(set one later with: easl ls setup ... --question TEXT)",
                file=sys.stderr,
            )
        n_hits = project.n_open_hits()
        print(
            f"created {args.project}: {project.n_items} items, method {hyper.method}, {hyper.hit_size} items per "
            f"HIT, scores {hyper.score_min:g}-{hyper.score_max:g}{_aware_note(hyper)}{_campaign_note(hyper)}; "
            f"iteration 0 has {n_hits} HITs\nnext: {label_studio_hint(args.project)}, "
            f"easl tui {args.project} (terminal), or easl next {args.project} --output hits.jsonl (files)"
        )
    return 0


def _aware_note(hyper) -> str:
    """The aware settings for the summary line (empty for the other methods)."""
    from easl_toolkit.core.models.hyper import method_fields

    if "uniform_passes" not in method_fields(hyper.method):
        return ""
    stop = f", stop at expected Spearman {hyper.stop_at:g}" if hyper.stop_at is not None else ""
    return f", {hyper.uniform_passes} uniform passes{stop}"


def add_campaign_flags(p) -> None:
    """The flags of an evaluation campaign: --systems, --target, --stop-at-width."""
    p.add_argument(
        "--systems",
        nargs="+",
        default=None,
        metavar="COL",
        help="an evaluation campaign: the items are responses and these columns of the items file hold each "
        "scoring system's score (kept from annotators); easl status reports each system's metrics with intervals",
    )
    p.add_argument(
        "--target",
        default=None,
        metavar="METRIC[,METRIC]",
        help="campaign only: the metrics that choose the responses and stop the campaign, of mean, r, qwk, rmse, "
        "smd, prmse, hh_r, hh_qwk (default: r,prmse of every system)",
    )
    p.add_argument(
        "--stop-at-width",
        type=float,
        default=None,
        metavar="W",
        help="campaign only: stop issuing HITs when every target metric's 95%% interval is narrower than W, e.g. 0.04",
    )


def campaign_settings(args: argparse.Namespace, method: str) -> dict:
    """The campaign fields of the hyper-parameters from --systems, --target and --stop-at-width, each checked
    (one sentence naming the flag when a value is refused or the method cannot use it)."""
    from easl_toolkit.core.models.hyper import method_fields

    given = {"--systems": args.systems, "--target": args.target, "--stop-at-width": args.stop_at_width}
    fields = method_fields(method)
    for flag, value in given.items():
        if value is not None and "systems" not in fields:
            raise EaslError(
                f"{flag} needs an evaluation campaign (--method campaign, the default with --systems); the method "
                f"{method} cannot use it."
            )
    if "systems" not in fields:
        return {}
    if not args.systems:
        raise EaslError("--method campaign needs --systems COL [COL ...]: the columns holding each system's score.")
    for system in args.systems:
        for flag, column in (("--id-column", args.id_column), ("--text-column", args.text_column)):
            if system == column:
                raise EaslError(
                    f"{args.items}: column {system!r} is both a system column (--systems) and the {flag[2:-7]} "
                    f"column ({flag}); a system's scores need a column of their own."
                )
    out: dict = {"systems": tuple(args.systems)}
    if args.target is not None:
        targets = tuple(t.strip() for t in args.target.split(",") if t.strip())
        unknown = [t for t in targets if t not in CAMPAIGN_TARGETS] or ([] if targets else [args.target])
        if unknown:
            raise EaslError(f"--target {unknown[0]!r}: no such metric; give some of: {', '.join(CAMPAIGN_TARGETS)}.")
        out["targets"] = targets
    if args.stop_at_width is not None:
        w = args.stop_at_width
        if not (w > 0 and w != float("inf")):
            raise EaslError(f"--stop-at-width {w:g}: give a positive interval width, e.g. 0.04.")
        out["stop_width"] = w
    return out


def label_studio_hint(project: str) -> str:
    """How to take the project to Label Studio: ``easl ls setup`` when the Label Studio SDK is installed, else the
    extra that installs it."""
    from importlib.util import find_spec

    if find_spec("label_studio_sdk") is not None:
        return f"easl ls setup {project} --url URL --backend-url URL (Label Studio)"
    return "pip install 'easl-toolkit[labelstudio]' then easl ls setup (Label Studio)"


def _campaign_note(hyper) -> str:
    """The campaign settings for the summary line (empty for the other methods)."""
    if not hyper.systems:
        return ""
    stop = f", stop at interval width {hyper.stop_width:g}" if hyper.stop_width is not None else ""
    return f", systems {', '.join(hyper.systems)}, targets {','.join(hyper.campaign_targets)}{stop}"
