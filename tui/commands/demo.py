"""``easl demo``: the whole collection loop on real annotators, the default method beside DA.

By default the demo replays the shipped real study (``core/datasets.py``: 320 videos, 99 lab subjects, 1-5) through
two real projects, one with the default method and one with direct assessment: each HIT a project issues is
answered with real ratings of the pool (``core/simulate/replay.py``; per item a random half of its
ratings is held out as the truth), until both reach the target Spearman correlation with the held-out truth or the
budget is spent. It prints both curves and the annotations the default method saved. ``--simulated`` runs the
earlier demo instead: the paper's EASL on 109 everyday things with simulated annotators.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from easl_toolkit.core.errors import EaslError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

NOISE_SD = 0.15  # annotator noise on the unit scale
N_ANNOTATORS = 8


def register(subparsers) -> None:
    """Add the ``demo`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "demo",
        help="replay real annotators through the default method beside DA (or --simulated)",
        description="Replay the shipped real study (320 videos rated 1-5 by 99 lab subjects; Apache-2.0, "
        "core/data/agh_tv_quality_2017/) through two projects, the default method and direct assessment: "
        "per item a random half of its ratings is held out as the truth, and each HIT either project "
        "issues is answered with real ratings of the rest, with the real annotator ids. Prints the Spearman "
        "correlation of both projects' estimates with the held-out truth as the annotations grow, and how "
        "many annotations the default method saved to reach --target. --simulated runs the earlier demo: "
        "the paper's EASL on 109 everyday things (oracle log10 of the mass) with simulated annotators.",
    )
    p.add_argument("--output", metavar="FILE", help="write the final estimates here (.csv, .jsonl, .parquet)")
    p.add_argument(
        "--project", metavar="PATH", help="keep the project file at PATH (must not exist); default: a temporary file"
    )
    p.add_argument(
        "--target", type=float, default=0.93, metavar="RHO", help="Spearman with the held-out truth (default: 0.93)"
    )
    p.add_argument(
        "--max-per-item", type=float, default=8.0, metavar="N", help="budget in scores per item (default: 8)"
    )
    p.add_argument("--simulated", action="store_true", help="the earlier demo: EASL with simulated annotators")
    p.add_argument(
        "--iterations",
        type=int,
        default=10,
        metavar="N",
        help="--simulated: iterations after the covering one (default: 10)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of selection, of the split into truth and pool, and of the annotators (default: 0)",
    )
    p.set_defaults(func=run)


def demo_items() -> pd.DataFrame:
    """The shipped demo items (``core/data/weights.csv``) as ``item_id, text, grams, oracle``."""
    from importlib import resources

    from easl_toolkit.core.store import read_items

    with resources.as_file(resources.files("easl_toolkit.core") / "data" / "weights.csv") as path:
        return read_items(path)


def simulate_scores(
    hits: list[dict], latent: dict[str, float], rng: np.random.Generator, iteration: int, score_max: float
) -> pd.DataFrame:
    """Scores of simulated annotators: each HIT is answered by one annotator drawn at random; each score is
    ``round(clip(latent + N(0, NOISE_SD^2), 0, 1) * score_max)``."""
    import numpy as np
    import pandas as pd

    rows = [(h["hit_id"], item["item_id"]) for h in hits for item in h["items"]]
    if not rows:
        return pd.DataFrame(columns=["hit_id", "item_id", "score", "annotator"])
    hit_ids, item_ids = map(list, zip(*rows))
    who = rng.integers(0, N_ANNOTATORS, size=len(hits))
    sizes = np.asarray([len(h["items"]) for h in hits])
    truth = np.asarray([latent[i] for i in item_ids], dtype=np.float64)
    noisy = np.clip(truth + rng.normal(0.0, NOISE_SD, size=truth.size), 0.0, 1.0)
    return pd.DataFrame(
        {
            "hit_id": hit_ids,
            "item_id": item_ids,
            "score": np.round(noisy * score_max),
            "annotator": [f"sim{a}" for a in np.repeat(who, sizes)],
            "location": [f"demo iteration {iteration}:{k + 1}" for k in range(len(rows))],
        }
    )


def run(args: argparse.Namespace) -> int:
    """Run ``easl demo``; returns the exit status (user errors raise ``EaslError``)."""
    if args.simulated:
        return run_simulated(args)
    from easl_toolkit.tui.commands.demo_real import run_real

    return run_real(args)


def run_simulated(args: argparse.Namespace) -> int:
    """``easl demo --simulated``: EASL on the 109 masses with simulated annotators."""
    import tempfile

    import numpy as np
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from easl_toolkit.core.metrics import spearman_rho
    from easl_toolkit.core.models import Hyper
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.tables import write_format, write_table

    if args.iterations < 0:
        raise EaslError(f"--iterations must be >= 0, got {args.iterations}.")
    if args.output:
        write_format(args.output)
    items = demo_items()
    oracle = items["oracle"].astype(np.float64).to_numpy()
    latent01 = (oracle - oracle.min()) / (oracle.max() - oracle.min())
    latent = dict(zip(items["item_id"].tolist(), latent01.tolist()))
    rng = np.random.default_rng([args.seed, 7])  # the annotators' generator, separate from selection's
    hyper = Hyper(seed=args.seed)
    console = Console()
    tmpdir = None
    path = args.project
    if path is None:
        tmpdir = tempfile.TemporaryDirectory(prefix="easl-demo-")
        path = os.path.join(tmpdir.name, "demo.easl")
    table = Table(title=f"EASL on {len(items)} items (noise sd {NOISE_SD} on the unit scale)")
    for col in ("iteration", "annotations", "mean variance", "Spearman with oracle"):
        table.add_column(col, justify="right")
    try:
        with Project.create(path, items, hyper) as project:
            with Progress(console=console, transient=True) as progress:
                task = progress.add_task("annotating", total=args.iterations + 1)
                for _ in range(args.iterations + 1):
                    hits = project.next_hits()
                    it = project.iteration()
                    scores = simulate_scores(hits, latent, rng, it, hyper.score_max)
                    project.ingest(scores, source="demo")
                    est = project.estimates()
                    st = project.status()
                    rho = spearman_rho(est["oracle"].astype(np.float64), est["estimate"])
                    table.add_row(str(it), str(st["n_observations"]), f"{st['mean_variance']:.5f}", f"{rho:.3f}")
                    progress.advance(task)
            check = project.verify()
            console.print(table)
            console.print(f"verify: {'ok' if check['ok'] else 'FAILED'} (max abs diff {check['max_abs_diff']:.2g})")
            if args.output:
                write_table(project.estimates(), args.output)
                console.print(f"wrote the estimates of {project.n_items} items to {args.output}")
            if args.project:
                console.print(f"project kept at {args.project}")
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    return 0 if check["ok"] else 1
