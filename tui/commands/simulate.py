"""`easl simulate (prmse | metrics | easl | replay | campaign)`: reproduce the seed papers' experiments, or replay
real ratings, with tables, figures and a report.

- ``prmse``: Loukina et al. (2020), the simulated dataset and sections 4.1-4.3, 5.2-5.3.
- ``metrics``: Yannakoudakis & Cummins (2015), section 4, for every agreement coefficient in ``core.metrics``.
- ``easl``: Sakaguchi & Van Durme (2018), section 5: DA, RA, TrueSkill and EASL through the real engine.
- ``replay``: real ratings replayed through the engine (``tui/commands/simulate_replay.py``).
- ``campaign``: evaluation campaigns planned on real or simulated scores (``tui/commands/simulate_campaign.py``).

Each writes ``OUT/report.md``, ``OUT/tables/*.csv`` and ``OUT/figures/*.png``.

This module is the command's parser; the work is ``tui/commands/simulate_run.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

from easl_toolkit.tui.commands import simulate_campaign, simulate_replay
from easl_toolkit.tui.commands.simulate_run import run_easl, run_metrics, run_prmse


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: X)" only for options whose default is a value (not None / False) and whose help does not
    state it already, X as a user types it: ``da,ra`` for a comma-separated option, ``2 2`` for one of two
    values (never a Python tuple); a description's ``%%`` is one ``%``."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or "(default:" in (action.help or ""):
            return action.help
        if isinstance(action.default, (tuple, list)):
            sep = " " if action.nargs not in (None, "?") else ","
            shown = sep.join(f"{v:g}" if isinstance(v, float) else str(v) for v in action.default)
            return f"{action.help} (default: {shown.replace('%', '%%')})"
        return super()._get_help_string(action)

    def _format_text(self, text):
        return super()._format_text(text if "%(prog)" in text else text.replace("%%", "%"))


def _add_dask(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dask",
        metavar="local|ADDRESS",
        help="run the independent runs on Dask (needs the dask extra): 'local' starts a cluster on this machine, "
        "an address (tcp://host:8786) uses a running scheduler; same seed, same numbers as one process",
    )
    p.add_argument("--dask-workers", type=int, metavar="N", help="workers of the local Dask cluster (default: cores)")
    p.add_argument("--dask-memory", metavar="BYTES", help="memory limit per local Dask worker, e.g. 2GiB")


def _numbers(cast, what: str):
    """An argparse type: comma-separated ``cast`` values (``what`` names them in the error)."""

    def parse(text: str) -> tuple:
        try:
            return tuple(cast(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}") from None

    return parse


_floats = _numbers(float, "numbers")
_ints = _numbers(int, "integers")


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def register(subparsers) -> None:
    """Add ``simulate`` and its five experiments to the ``easl`` parser."""
    p = subparsers.add_parser(
        "simulate",
        help="reproduce the seed papers' experiments (prmse | metrics | easl), replay real ratings (replay), or plan "
        "an evaluation campaign's budget (campaign)",
        description="Reproduce the seed papers' experiments, replay real ratings through the engine, or plan an "
        "evaluation campaign; each writes CSV tables, PNG figures and a Markdown report.",
    )
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for add in (_add_prmse, _add_metrics, _add_easl):
        add(sub)
    simulate_replay.register(sub, _HelpFormatter, _floats, _names, _add_dask)
    simulate_campaign.register(sub, _HelpFormatter, _floats, _names)


def _add_prmse(sub: Any) -> None:
    """``easl simulate prmse`` (every setting of ``core.simulate.prmse.PrmseSettings``)."""
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


def _add_metrics(sub: Any) -> None:
    """``easl simulate metrics`` (``core.simulate.agreement_properties.PropertySettings``)."""
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


def _add_easl(sub: Any) -> None:
    """``easl simulate easl``: the campaign, the annotators, the oracle, and the annotator-aware study."""
    e = sub.add_parser(
        "easl",
        help="Sakaguchi & Van Durme (2018): DA, RA, TrueSkill and EASL at equal budgets",
        formatter_class=_HelpFormatter,
        description="Simulated annotators score the HITs that the real engine selects (project file, "
        "next HITs, ingest, estimates) for each method, against an oracle: generated "
        "latent values by default; the paper's political-spectrum run takes its data "
        "file, --oracle political_150_gold.csv (not shipped: see docs/guides/simulation.md).",
    )
    e.add_argument("--out", default="simulate-easl", help="output directory")
    e.add_argument("--quick", action="store_true", help="reduced run: 3 runs, 6 iterations, 200 bootstrap resamples")
    _add_oracle(e)
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
        help="run the annotator-aware study instead: comma-separated annotator models M1 (noise "
        "only), M2 (offsets), M3 (offsets and slopes), M4 (M2 + 10%% random clickers), M5 "
        "(item-dependent noise), IX (item x annotator interaction), DRIFT (drifting offsets); --runs "
        "seeds each (20 for the study's table), target --target; the oracle is the Beta(2,2) "
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


def _add_oracle(e: argparse.ArgumentParser) -> None:
    """The oracle options of ``easl simulate easl``."""
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
