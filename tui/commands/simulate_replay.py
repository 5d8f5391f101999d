"""``easl simulate replay``: replay real ratings through the engine to choose a method and a budget
(``core/simulate/replay.py``); its parser and its run. Without a file it replays the shipped real study
(``core/datasets.py``)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from easl_toolkit.tui.commands.progress import step_progress
from easl_toolkit.tui.commands.simulate_run import _command_line, _finish, _mapper


def register(sub: Any, formatter: Any, numbers: Any, names: Any, add_dask: Any) -> None:
    """Add ``replay`` to the ``simulate`` sub-parsers."""
    p = sub.add_parser(
        "replay",
        help="replay real ratings (yours, or the shipped study) to compare methods and budgets",
        formatter_class=formatter,
        description="Replay real ratings through the real engine. Per item and seed a random half of its ratings "
        "is held out as the truth and the campaign draws from the rest: a HIT goes to one real annotator who "
        "rated all its items, else each item to a random unused rater of its own. Reports per method the "
        "Spearman and Kendall curves against annotations per item, the best Spearman reached, the budget to each "
        "target and the share saved vs DA with paired bootstrap intervals, the split-half reliability of the "
        "truth, and how the annotator flags compare with each annotator's agreement over all their ratings. "
        "Without RATINGS: the shipped AGH TV study (99 lab "
        "subjects, 1-5; Apache-2.0, see core/data/agh_tv_quality_2017/).",
    )
    p.add_argument(
        "ratings",
        nargs="?",
        metavar="RATINGS",
        help="long-form ratings, one row per rating (CSV, TSV, JSONL or Parquet); default: the shipped study",
    )
    p.add_argument("--item-column", default="item_id", help="item id column")
    p.add_argument("--annotator-column", help="annotator id column (default: annotator, else annotator_id)")
    p.add_argument("--score-column", default="score", help="score column")
    p.add_argument(
        "--scale",
        type=float,
        nargs=2,
        metavar=("MIN", "MAX"),
        help="score range (default: the smallest and largest score; 1 5 for the shipped study)",
    )
    p.add_argument(
        "--methods",
        type=names,
        default=("da", "da-z", "easl", "aware"),
        help="comma-separated: da, da-z (DA on WMT z-scores), easl (the paper's), aware, ra, trueskill",
    )
    p.add_argument(
        "--targets",
        type=numbers,
        help="comma-separated Spearman correlations to reach (default: chosen from the data, 0.02, 0.05 and 0.1 "
        "below the best Spearman any method reached)",
    )
    p.add_argument("--runs", type=int, default=20, help="seeds: each is one split and one stream of annotators")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--hit-size", type=int, default=5, help="items per HIT")
    p.add_argument("--batch-hits", type=int, default=15, help="HITs chosen at a time")
    p.add_argument(
        "--max-per-item",
        type=float,
        help="budget in scores per item (default: 12, or less when the median item's pool is smaller)",
    )
    p.add_argument("--out", default="simulate-replay", help="output directory")
    add_dask(p)
    p.set_defaults(func=run, parser=p)


def _load(args: argparse.Namespace) -> tuple[Any, str | None]:
    from easl_toolkit.core.simulate.replay_data import read_ratings, shipped_ratings

    if args.ratings is None:
        from easl_toolkit.core.datasets import agh_tv_notice

        if args.scale is not None and tuple(args.scale) != (1.0, 5.0):
            from easl_toolkit.core.errors import EaslError

            raise EaslError("--scale: the shipped study is on the 1-5 scale; give RATINGS for another.")
        return shipped_ratings(), agh_tv_notice()
    r = read_ratings(
        args.ratings,
        item_column=args.item_column,
        annotator_column=args.annotator_column,
        score_column=args.score_column,
        scale=None if args.scale is None else tuple(args.scale),
    )
    return r, None


def _check(args: argparse.Namespace) -> None:
    from easl_toolkit.core.errors import EaslError
    from easl_toolkit.core.simulate.replay import METHODS

    bad = [m for m in args.methods if m not in METHODS]
    if bad:
        raise EaslError(f"--methods {bad[0]}: choose from {', '.join(METHODS)}.")
    if "da" not in args.methods:
        raise EaslError("--methods must include da: the savings are measured against it.")
    if args.targets is not None and (any(not 0.0 < t < 1.0 for t in args.targets) or not args.targets):
        raise EaslError("--targets: Spearman correlations between 0 and 1, e.g. 0.9,0.93.")
    for name in ("runs", "hit_size", "batch_hits"):
        if getattr(args, name) < (2 if name == "hit_size" else 1):
            raise EaslError(f"--{name.replace('_', '-')} must be >= {2 if name == 'hit_size' else 1}.")
    if args.max_per_item is not None and args.max_per_item <= 0:
        raise EaslError("--max-per-item must be > 0.")


def run(args: argparse.Namespace) -> int:
    """Run ``easl simulate replay``; returns the exit status (user errors raise ``EaslError``)."""
    import numpy as np

    from easl_toolkit.core.errors import EaslError
    from easl_toolkit.core.simulate import replay, replay_report

    started = time.perf_counter()
    _check(args)
    r, notice = _load(args)
    if args.hit_size > r.n_items:
        raise EaslError(f"--hit-size {args.hit_size}: the ratings have only {r.n_items} items.")
    pool = np.ceil(r.per_item() / 2)
    per_item = args.max_per_item if args.max_per_item is not None else float(min(12.0, np.median(pool)))
    batch = args.batch_hits * args.hit_size / r.n_items
    runs = len({"da" if m == "da-z" else m for m in args.methods})
    prog, advance = step_progress("simulate replay", runs * args.runs + 1)
    with _mapper(args) as map_fn, prog:
        kw: dict[str, Any] = {} if map_fn is None else {"map_fn": map_fn}
        result = replay.run_replay(
            r,
            methods=tuple(args.methods),
            n_seeds=args.runs,
            first_seed=args.seed,
            targets=None if args.targets is None else tuple(args.targets),
            progress=lambda done, total: advance(""),
            hit_size=args.hit_size,
            batch_hits=args.batch_hits,
            max_per_item=per_item,
            **kw,
        )
        run = replay_report.ReplayRun(
            n_seeds=args.runs,
            batch=batch,
            settings=f"HITs of {args.hit_size} items, {args.batch_hits} HITs at a time, up to {per_item:g} scores "
            "per item",
            notice=notice,
            runtime=time.perf_counter() - started,
        )
        rep = replay_report.write_report(result, r, args.out, _replay_command(args), run)
        advance("report")
    _finish(rep.out, started, replay_report.summary_lines(result, args.runs))
    return 0


def _replay_command(args: argparse.Namespace) -> str:
    """The command that reruns this replay: :func:`~tui.commands.simulate_run._command_line` with the ratings
    file, as given, after the experiment's name."""
    import shlex

    line = _command_line(args)
    if args.ratings is None:
        return line
    head = "easl simulate replay"
    return f"{head} {shlex.quote(args.ratings)}{line[len(head) :]}"
