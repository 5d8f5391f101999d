"""An evaluation campaign as a project at scale: ``easl next`` and the choice of an iteration with every interval.

Targets (issue "evaluation campaigns"): on a project of 1,000,000 responses and 3 systems, ``easl next --output
hits.csv`` within 3 s (the command's wall time, through the real CLI, after the pilot is answered: the iteration
is chosen, drawn, recorded with its design and written), and choosing an iteration plus every metric's interval
within 5 s (``CampaignModel.choose`` and ``CampaignModel.estimates`` on the stored state, in this process).

Each figure is printed with its ratio to a floor measured in the same run on the same file: reading the systems'
scores (``core.store.inputs.read_covariates``), the least any choice must do; on a shared machine the ratio moves
less than the wall time.

The project: ``easl init --systems s1 s2 s3`` on responses whose true score is N(3.5, 0.9), the systems the truth
plus noise of sd 0.3, 0.6 and 1.2 (r about 0.95, 0.83, 0.6), then the pilot (iteration 0) answered by three
annotators (one offset by +0.5), one per HIT; the timed ``easl next`` runs on a copy of that file.

    python bench/bench_campaign_project.py                       # 1,000,000 responses (a few minutes)
    python bench/bench_campaign_project.py --responses 20000     # a quick run
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pandas as pd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.bench_scale import CPU, run  # noqa: E402

NEXT_TARGET_S = 3.0
CHOOSE_TARGET_S = 5.0


def write_items(path: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """The responses with three systems' scores; returns the true scores."""
    truth = rng.normal(3.5, 0.9, n)
    frame = pd.DataFrame({"id": np.char.add("r", np.arange(n).astype("U7")), "text": "a response"})
    for k, sd in enumerate((0.3, 0.6, 1.2)):
        frame[f"s{k + 1}"] = np.round(truth + rng.normal(0, sd, n), 3)
    frame.to_csv(path, index=False)
    return truth


def answer_pilot(project: str, truth: np.ndarray, rng: np.random.Generator) -> int:
    """Score iteration 0's HITs: each HIT by one of three annotators (the second offset by +0.5)."""
    from easl_toolkit.core.store import Project

    with Project.open(project) as p:
        hits = p.open_hits_frame()
        idx = hits["item_id"].str[1:].astype(np.int64).to_numpy()
        codes, which = np.unique(hits["hit_id"].to_numpy(), return_inverse=True)
        ann = rng.integers(3, size=codes.size)[which]
        score = np.clip(np.round(truth[idx] + 0.5 * (ann == 1) + rng.normal(0, 0.5, idx.size)), 1, 6)
        rows = pd.DataFrame(
            {"hit_id": hits["hit_id"], "item_id": hits["item_id"], "annotator": np.char.add("a", ann.astype("U1"))}
        )
        rows["score"] = score
        p.ingest(rows, source="bench")
        return len(rows)


def floor_s(project: str) -> float:
    """Seconds to read the systems' scores of the project (the floor)."""
    from easl_toolkit.core.store import Project
    from easl_toolkit.core.store.inputs import read_covariates

    with Project.open(project, readonly=True) as p:
        started = time.perf_counter()
        read_covariates(p.db.conn, p.n_items)
        return time.perf_counter() - started


def choose_and_estimate_s(project: str) -> tuple[float, float]:
    """(wall, CPU) seconds of ``CampaignModel.choose`` for the next iteration plus ``CampaignModel.estimates`` (every
    metric of every system with its interval), on the stored state."""
    from easl_toolkit.core.store import Project

    with Project.open(project, readonly=True) as p:
        model, state = p.model, p.state()
        n_hits = model.hits_per_iteration(p.n_items)
        started, cpu = time.perf_counter(), time.process_time()
        model.choose(state, n_hits=n_hits, rng=np.random.default_rng(1))
        model.estimates(state)
        return time.perf_counter() - started, time.process_time() - cpu


def main() -> int:
    """Prepare the project, then time the floor, the choice with every interval, and ``easl next``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to build the project (default: a temporary directory)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        items, project = os.path.join(tmp, "responses.csv"), os.path.join(tmp, "campaign.easl")
        truth = write_items(items, args.responses, rng)
        wall, _ = run("init", project, "--items", items, "--systems", "s1", "s2", "s3", "--score-range", "1", "6")
        print(f"init: {wall:.2f} s for {args.responses:,} responses and 3 systems")
        started = time.perf_counter()
        n = answer_pilot(project, truth, rng)
        print(f"pilot: {n:,} human scores ingested in {time.perf_counter() - started:.2f} s")
        floors, chooses, choose_cpu, nexts, next_cpu = [], [], [], [], []
        for r in range(args.runs):
            floors.append(floor_s(project))
            wall_s, cpu_s = choose_and_estimate_s(project)
            chooses.append(wall_s)
            choose_cpu.append(cpu_s)
            copy = os.path.join(tmp, f"run{r}.easl")
            shutil.copy(project, copy)
            nexts.append(run("next", copy, "--output", os.path.join(tmp, f"hits{r}.csv"))[0])
            next_cpu.append(CPU.pop("last"))
            os.remove(copy)
            print(f"run {r}: floor {floors[-1]:.3f} s, choose + intervals {wall_s:.2f} s, easl next {nexts[-1]:.2f} s")
        floor, choose, nxt = (statistics.median(x) for x in (floors, chooses, nexts))
        print(f"floor (read the systems' scores): {floor:.3f} s; load average {os.getloadavg()[0]:.1f}")
        print(
            f"choose an iteration + every interval: {choose:.2f} s wall, {statistics.median(choose_cpu):.2f} s CPU "
            f"(target {CHOOSE_TARGET_S:g} s; {choose / floor:.0f}x the floor)"
        )
        print(
            f"easl next (CLI): {nxt:.2f} s wall, {statistics.median(next_cpu):.2f} s CPU (target {NEXT_TARGET_S:g} "
            f"s; {nxt / floor:.0f}x the floor)"
        )
        ok = choose <= CHOOSE_TARGET_S and nxt <= NEXT_TARGET_S
        print("targets met" if ok else "a target is missed")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
