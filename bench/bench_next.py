"""``easl next`` alone at scale, through the real CLI, each run from the same prepared project.

Target: ``easl next --output hits.csv`` <= 3 s in every iteration at 1,000,000 items and HIT size 5, the first
(iteration 0, created by ``easl init``: read back) and later ones (Algorithm 1 on the posterior, then the new rows
recorded and the file written).

The project is prepared once (``easl init --method easl``, then ``next`` and ``ingest`` of one noisy score per item
for each earlier iteration, as ``bench/bench_scale.py`` does) and copied before each timed ``easl next``, so that
every run of an iteration starts from the same file and must write the same bytes (checked: the runs of one
iteration are compared with its first). Each line gives the wall time, the CPU seconds of the command (user +
system, from ``os.wait4``), its peak resident memory (its own VmHWM, as ``bench_scale.run`` polls it) and the
1-minute load average: on a shared machine the wall time grows with the load, the CPU time much less. Figures are
printed per run and as the median per iteration.

    python bench/bench_next.py                         # 1,000,000 items, iterations 0-2, 3 runs each (minutes)
    python bench/bench_next.py --items 10000 --runs 5  # a quick run
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.bench_scale import CPU, EASL, run, write_items, write_scores  # noqa: E402

TARGET_S = 3.0


def timed_next(project: str, output: str) -> tuple[float, float, float]:
    """Run ``easl next PROJECT --output OUTPUT``; returns (wall s, CPU s, peak RSS MB) as
    :func:`bench.bench_scale.run` measures them (the peak is the command's own, not this process's)."""
    wall, peak = run("next", project, "--output", output)
    return wall, CPU.pop("last"), peak / 2**20


def prepare(tmp: str, n: int, iterations: int) -> list[str]:
    """The project before each iteration's ``easl next``: ``before{t}.easl`` for t = 0 .. iterations."""
    rng = np.random.default_rng(0)
    items = os.path.join(tmp, "items.csv")
    write_items(items, n)
    oracle = dict(zip(np.char.add("item", np.arange(n).astype("U7")).tolist(), rng.uniform(0, 100, n).tolist()))
    project = os.path.join(tmp, "work.easl")
    run("init", project, "--items", items, "--method", "easl", "--hit-size", "5", "--seed", "1")
    copies = []
    for it in range(iterations + 1):
        copy = os.path.join(tmp, f"before{it}.easl")
        shutil.copy(project, copy)  # easl closes the file with its WAL checkpointed: the one file is the project
        copies.append(copy)
        if it == iterations:
            break
        hits = os.path.join(tmp, f"prep{it}.csv")
        run("next", project, "--output", hits)
        scores = os.path.join(tmp, f"scores{it}.csv")
        write_scores(hits, scores, oracle, rng)
        run("ingest", project, scores)
    return copies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=1_000_000, help="items (default 1,000,000)")
    ap.add_argument("--iterations", type=int, default=2, help="iterations after the first (default 2)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per iteration (default 3)")
    ap.add_argument("--dir", help="work directory (default: a temporary directory)")
    args = ap.parse_args()
    if not os.access(EASL, os.X_OK):
        raise SystemExit(f"{EASL} not found: run `make venv` first")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        started = time.perf_counter()
        copies = prepare(tmp, args.items, args.iterations)
        print(
            f"{args.items:,} items, HIT size 5: prepared in {time.perf_counter() - started:.0f} s; "
            f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
            flush=True,
        )
        missed = []
        for it, before in enumerate(copies):
            walls, cpus = [], []
            first = os.path.join(tmp, f"next{it}.csv")
            for r in range(args.runs):
                project = os.path.join(tmp, "timed.easl")
                shutil.copy(before, project)
                output = first if r == 0 else os.path.join(tmp, "again.csv")
                wall, cpu, rss = timed_next(project, output)
                same = r == 0 or filecmp.cmp(first, output, shallow=False)
                walls.append(wall)
                cpus.append(cpu)
                peak = f"peak {rss:,.0f} MB, "
                print(
                    f"  next (iteration {it}) run {r + 1}: {wall:6.3f} s wall, cpu {cpu:.3f} s, {peak}"
                    f"load {os.getloadavg()[0]:.2f}{'' if same else '  (FILE DIFFERS from run 1)'}",
                    flush=True,
                )
                os.remove(project)
                if not same:
                    missed.append(f"iteration {it}: run {r + 1} wrote another file")
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            ok = max(walls) <= TARGET_S
            if not ok:
                missed.append(f"iteration {it}: {max(walls):.3f} s")
            print(
                f"next (iteration {it}), median of {args.runs}: {wall:.3f} s wall (max {max(walls):.3f}), "
                f"cpu {cpu:.3f} s  target <= {TARGET_S} s  {'ok' if ok else 'MISSED'}",
                flush=True,
            )
    print(f"load average (1 min) at the end {os.getloadavg()[0]:.2f}")
    print("all targets met" if not missed else "missed: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
