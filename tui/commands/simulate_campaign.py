"""``easl simulate campaign``: plan an evaluation campaign before paying for it. Replays campaigns on real human
scores with a real system's scores (a pilot's, or a shipped set: WMT23 MQM, MLQE-PE Romanian-English) and/or on
the PRMSE paper's simulated raters and systems (:mod:`core.simulate.campaign_study`,
:mod:`core.simulate.campaign_replay`), and reports coverage, interval width against human scores and the human
scores each design needs for a width (:mod:`core.simulate.campaign_output`)."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from easl_toolkit.core.datasets import CAMPAIGN_SETS
from easl_toolkit.tui.commands.progress import step_progress
from easl_toolkit.tui.commands.simulate_run import _command_line, _finish

#: Metrics whose width the command can report (the study's result names).
METRICS = ("mean", "r", "qwk", "rmse", "smd", "prmse", "hh_r", "hh_qwk")
#: Rater categories of the PRMSE paper (Loukina et al. 2020, section 3).
RATERS = ("low", "moderate", "average", "high")


def register(sub: Any, formatter: Any, numbers: Any, names: Any) -> None:
    """Add ``campaign`` to the ``simulate`` sub-parsers."""
    p = sub.add_parser(
        "campaign",
        help="plan an evaluation campaign: human scores needed by active, uniform+PPI and classical designs",
        formatter_class=formatter,
        description="Evaluate a scoring system with fewer human scores: replay evaluation campaigns and report, "
        "for the classical design (score a uniform random subset), uniform sampling with the system's scores as "
        "a control variate (PPI), the active design (probabilities where the metric is uncertain), active with "
        "deliberately wrong uncertainties, and the oracle bound, the coverage of the 95%% intervals, their width "
        "against the human scores spent, and the human scores each design needs for a width. The replay draws "
        "responses with replacement from RATINGS and two of each response's real human scores. Without "
        "--ratings: a shipped set (--dataset), by default the WMT23 English-German MQM set (936 translations, 3 "
        "professional raters each, sentence chrF as the system, a weak one; Apache-2.0, see "
        "core/data/wmt23_mqm_ende/); mlqe_pe_roen is the MLQE-PE Romanian-English test set (1,000 translations, 6 "
        "direct-assessment scores each, the NMT model's own log-probability as the system, r 0.64 with the mean "
        "human score; CC0, see core/data/mlqe_pe_roen/).",
    )
    p.add_argument(
        "--ratings",
        metavar="FILE",
        help="CSV, one row per response: the system's score (--system-column) and two or more human scores in "
        "columns human_1, human_2, ... (blank where a response has fewer); other columns are ignored "
        "(default: the shipped set of --dataset)",
    )
    p.add_argument(
        "--dataset",
        choices=CAMPAIGN_SETS,
        metavar="NAME",
        help=f"shipped set to replay without --ratings: {' or '.join(CAMPAIGN_SETS)} (default: {CAMPAIGN_SETS[0]})",
    )
    p.add_argument("--system-column", default="system", metavar="COL", help="column of the system's scores")
    p.add_argument(
        "--study",
        choices=("replay", "simulated", "both"),
        default="replay",
        help="replay the ratings, run the PRMSE paper's simulated raters x systems, or both",
    )
    p.add_argument("--campaigns", type=int, default=1000, metavar="N", help="campaigns per setting")
    p.add_argument("--seed", type=int, default=2020, metavar="N", help="seed of the run")
    p.add_argument(
        "--budgets",
        type=numbers,
        default=(0.1, 0.2, 0.3, 0.5),
        metavar="B,B,...",
        help="comma-separated shares of the responses",
    )
    p.add_argument("--metric", default="r", choices=METRICS, help="metric whose interval width is planned")
    p.add_argument(
        "--width",
        type=float,
        metavar="W",
        help="width of the metric's 95%% interval to reach (default: the classical design's at the largest budget)",
    )
    p.add_argument(
        "--raters", type=names, default=RATERS, metavar="LIST", help="simulated rater categories (comma-separated)"
    )
    p.add_argument(
        "--system-r",
        type=numbers,
        default=(0.3, 0.8, 0.95),
        metavar="R,R,...",
        help="simulated systems' r with the truth",
    )
    p.add_argument("--responses", type=int, default=2000, metavar="N", help="responses per simulated campaign")
    p.add_argument(
        "--iterations",
        type=int,
        default=1,
        metavar="K",
        help="iterations after the uniform pilot, each refitted on the scores before it (as easl next runs them)",
    )
    p.add_argument(
        "--per-target",
        action="store_true",
        help="the active, wrong and oracle designs allocate for each observed metric alone (as a campaign made "
        "with easl init --target METRIC), instead of for the mean, r, QWK and RMSE together",
    )
    p.add_argument("--out", "--output", dest="out", metavar="DIR", default="simulate-campaign", help="output directory")
    p.set_defaults(func=run, parser=p)


def _check(args: argparse.Namespace) -> None:
    from easl_toolkit.core.errors import EaslError

    for option, value in (("--ratings", args.ratings), ("--dataset", args.dataset)):
        if value is not None and args.study == "simulated":
            raise EaslError(f"{option}: the simulated study reads no ratings; use --study replay or both.")
    if args.ratings is not None and args.dataset is not None:
        raise EaslError("--dataset: replays either a shipped set or --ratings FILE, not both.")
    if args.campaigns < 2:
        raise EaslError("--campaigns must be >= 2.")
    if not args.budgets or any(not 0.0 < b <= 1.0 for b in args.budgets) or len(set(args.budgets)) < 2:
        raise EaslError("--budgets: two or more shares of the responses in (0, 1], e.g. 0.1,0.2,0.3.")
    if args.width is not None and not args.width > 0:
        raise EaslError(f"--width {args.width:g}: the width of an interval must be > 0.")
    bad = [r for r in args.raters if r not in RATERS]
    if bad:
        raise EaslError(f"--raters {bad[0]}: choose from {', '.join(RATERS)}.")
    if any(not 0.0 < r < 1.0 for r in args.system_r) or not args.system_r:
        raise EaslError("--system-r: correlations between 0 and 1, e.g. 0.3,0.8,0.95.")
    if args.responses < 100:
        raise EaslError("--responses must be >= 100.")
    if not 1 <= args.iterations <= 20:
        raise EaslError(f"--iterations {args.iterations}: between 1 and 20 iterations after the pilot.")


def _load(args: argparse.Namespace) -> tuple[Any, str]:
    """The replay's data and the line that names it in the report."""
    from easl_toolkit.core.simulate.campaign_replay import read_ratings, shipped_ratings

    if args.ratings is None:
        from easl_toolkit.core.datasets import campaign_notice

        name = args.dataset or CAMPAIGN_SETS[0]
        return shipped_ratings(name), campaign_notice(name)
    data = read_ratings(args.ratings, args.system_column)
    return data, f"{args.ratings}: {data.n_responses} responses, up to {data.human.shape[1]} human scores each"


def _simulated_settings(args: argparse.Namespace) -> Any:
    from easl_toolkit.core.simulate.campaign_study import CampaignStudySettings

    return replace(
        CampaignStudySettings(),
        n_responses=args.responses,
        n_campaigns=args.campaigns,
        chunk=max(1, min(args.campaigns, 500_000 // args.responses)),
        budgets=tuple(sorted(args.budgets)),
        rater_categories=tuple(args.raters),
        system_r=tuple(args.system_r),
        truth_responses=400_000,
        oracle_responses=200_000,
        seed=args.seed,
        iterations=args.iterations,
        single_target=args.per_target,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``easl simulate campaign``; returns the exit status (user errors raise ``EaslError``)."""
    import pandas as pd

    from easl_toolkit.core.simulate import campaign_output
    from easl_toolkit.core.simulate.campaign_replay import replay_settings, run_replay
    from easl_toolkit.core.simulate.campaign_study import run_setting

    started = time.perf_counter()
    _check(args)
    replay = args.study in ("replay", "both")
    data, notice = _load(args) if replay else (None, "")
    sim = _simulated_settings(args)
    settings = [(r, q) for r in sim.rater_categories for q in sim.system_r] if args.study != "replay" else []
    chunks = -(-args.campaigns // sim.chunk) * len(settings)
    if data is not None:
        rs = replay_settings(data, n_campaigns=args.campaigns, budgets=tuple(sorted(args.budgets)), seed=args.seed)
        rs = replace(rs, iterations=args.iterations, single_target=args.per_target)
        chunks += -(-args.campaigns // rs.chunk)
    prog, advance = step_progress("simulate campaign", chunks)
    frames = []
    with prog:
        if data is not None:
            frames.append(run_replay(data, rs, progress=advance))
        frames += [run_setting(sim, r, q, progress=advance) for r, q in settings]
    df = pd.concat(frames, ignore_index=True)
    header = _header(args, notice, sim, data, time.perf_counter() - started)
    out, need = campaign_output.write_outputs(df, args.out, metric=args.metric, width=args.width, header=header)
    _finish(out, started, campaign_output.summary_lines(df, need, args.metric))
    return 0


def _header(args: argparse.Namespace, notice: str, sim: Any, data: Any, runtime: float) -> list[str]:
    """The report's opening lines: the command, the data, the settings and the run time."""
    lines = ["# Evaluation-campaign study", "", f"Command: `{_command_line(args)}`", ""]
    if data is not None:
        lines.append(f"Replay: {notice}; {data.n_responses} responses per campaign, drawn with replacement.")
    if args.study != "replay":
        lines.append(
            f"Simulated (Loukina et al. 2020, section 3): raters {', '.join(sim.rater_categories)} x systems at r "
            f"{', '.join(f'{r:g}' for r in sim.system_r)} with the true score; {sim.n_responses} responses."
        )
    budgets = ", ".join(f"{b:g}" for b in sorted(args.budgets))
    lines.append(
        f"{args.campaigns} campaigns per setting; budgets (share of the responses): {budgets}; seed "
        f"{args.seed}; run time {runtime:.0f} s."
    )
    targets = "each observed metric alone" if args.per_target else "the mean, r, QWK and RMSE together"
    lines.append(
        f"Designs: a uniform pilot, then {args.iterations} iteration(s); the active, wrong and oracle designs "
        f"allocate for {targets} (PRMSE for the metrics that need second scores)."
    )
    return lines
