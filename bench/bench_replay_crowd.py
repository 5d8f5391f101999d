"""Benchmark of ``easl simulate replay`` on a crowd study, run with `make bench` or
`.venv/bin/python bench/bench_replay_crowd.py [--keep DIR]`.

The crowd study the target is set on (600 items, 67 workers, 15 ratings per item, scores 0-100) is not shipped, so
this builds a synthetic stand-in of the same shape: a Beta(2, 2) truth per item, 15 distinct workers per item drawn
with unequal weights (a crowd's few prolific workers and many occasional ones, Dirichlet(1) shares), and the
workers of the annotator model ``M4`` of :class:`core.simulate.aware_world.World` (an offset per worker, a tenth of
them spammers who answer at random), rounded to whole points on 0-100. It then times the command with its default
options in a subprocess, as a user runs it, and checks that nothing is printed on stderr.
Target: under 90 s, nothing on stderr.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from easl_toolkit.core.simulate.aware_world import World  # noqa: E402

N_ITEMS, N_WORKERS, PER_ITEM, SCALE = 600, 67, 15, (0, 100)
TARGET_SECONDS = 90.0


def crowd_ratings(seed: int = 0) -> pd.DataFrame:
    """The synthetic crowd study (module docstring) as long-form ``item_id, annotator, score`` rows."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2.0, 2.0, N_ITEMS)
    share = rng.dirichlet(np.ones(N_WORKERS))
    workers = np.concatenate([rng.choice(N_WORKERS, PER_ITEM, replace=False, p=share) for _ in range(N_ITEMS)])
    items = np.repeat(np.arange(N_ITEMS), PER_ITEM)
    world = World.make("M4", N_ITEMS, N_WORKERS, rng)
    unit = world.scores(truth, items, workers, 0.0, rng)
    return pd.DataFrame(
        {
            "item_id": [f"clip{i:03d}" for i in items],
            "annotator": [f"w{a:02d}" for a in workers],
            "score": np.round(SCALE[0] + unit * (SCALE[1] - SCALE[0])).astype(int),
        }
    )


def main() -> int:
    """Write the study, time ``easl simulate replay FILE --scale 0 100`` and print the figures beside the target."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="write the ratings and the report here (default: a temporary dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="easl-crowd-") as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        ratings = where / "crowd.csv"
        crowd_ratings().to_csv(ratings, index=False)
        easl = Path(sys.executable).with_name("easl")
        cmd = [str(easl), "simulate", "replay", str(ratings), "--scale", "0", "100", "--output", str(where / "report")]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - t0
    print(done.stdout)
    print(f"crowd replay ({N_ITEMS} items, {N_WORKERS} workers, {PER_ITEM} ratings per item, 0-100, default options)")
    verdict = "ok" if seconds < TARGET_SECONDS else "MISSED"
    print(f"  time:   {seconds:6.1f} s   (target < {TARGET_SECONDS:g} s)  {verdict}")
    print(f"  stderr: {len(done.stderr)} characters (target 0)  {'ok' if not done.stderr else 'MISSED'}")
    if done.stderr:
        print(done.stderr)
    return 0 if done.returncode == 0 and seconds < TARGET_SECONDS and not done.stderr else 1


if __name__ == "__main__":
    sys.exit(main())
