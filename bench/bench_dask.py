"""Benchmark of ``easl evaluate --dask``: 100,000,000 ratings (2 raters) in partitioned Parquet on disk.

Target: the full suite of metrics completes on this machine with a peak memory per worker of at most
2 GiB. Beside it, the in-memory command on 10,000,000 ratings (time and peak memory of the process).

The data (:mod:`core.distributed.synthetic`, files of 1,000,000 responses) are written once under
``.cache/bench-dask/`` and reused. A LocalCluster of ``--workers`` single-threaded processes with a memory limit of
``--memory`` each runs the evaluation; a worker's peak is its process's maximum resident set size
(``getrusage``), read from every worker at the end (a worker restarted for memory would show as a new process).

Usage: python bench/bench_dask.py [--ratings 100000000] [--in-memory-ratings 10000000] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from easl_toolkit.core.distributed.synthetic import ratings_frame, write_partitions  # noqa: E402
from easl_toolkit.core.metrics.data import Scale  # noqa: E402

PER_FILE = 1_000_000  # responses per Parquet file
GIB = 2**30


def data_set(ratings: int) -> Path:
    """The partitioned Parquet files of ``ratings`` ratings (2 per response), written once."""
    directory = ROOT / ".cache" / "bench-dask" / f"ratings-{ratings}"
    done = directory / ".complete"
    if not done.exists():
        responses = ratings // 2
        started = time.perf_counter()
        write_partitions(directory, responses, max(1, -(-responses // PER_FILE)), seed=15)
        done.write_text("ok\n")
        print(f"wrote {responses:,} responses to {directory} in {time.perf_counter() - started:.0f} s")
    return directory


def one_file(ratings: int) -> Path:
    """One Parquet file of ``ratings`` ratings for the in-memory command."""
    path = ROOT / ".cache" / "bench-dask" / f"in-memory-{ratings}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        ratings_frame(ratings // 2, 15, 0).to_parquet(path, index=False)
    return path


ARGS = ["--human", "h1", "h2", "--system", "model", "--group", "group", "--scale", "1", "6"]


def run_dask(directory: Path, workers: int, memory: int) -> tuple[float, list[int], int, int]:
    """(seconds, peak RSS of every worker in bytes, restarts, responses) of the evaluation on a LocalCluster."""
    from distributed import Client, LocalCluster

    from easl_toolkit.core.distributed.evaluate import evaluate_dask

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, memory_limit=memory, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        pids = set(client.run(os.getpid).values())
        started = time.perf_counter()
        last = [0.0]

        def progress(stage: str, done: int, total: int) -> None:
            now = time.perf_counter()
            if now - last[0] > 15 or done == total:
                print(f"  {stage}: {done}/{total} partitions, {now - started:.0f} s", flush=True)
                last[0] = now

        ev = evaluate_dask(
            client,
            str(directory / "*.parquet"),
            human=["h1", "h2"],
            system=["model"],
            group_col="group",
            scale=Scale(1, 6),
            progress=progress,
        )
        seconds = time.perf_counter() - started
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        restarts = len(set(client.run(os.getpid).values()) - pids)
    corr = ev.systems["model"].observed.value("corr")
    print(f"  corr {corr:.6f}, kendall_tau_b {ev.systems['model'].observed.value('kendall_tau_b'):.6f}, "
          f"prmse {ev.systems['model'].true_score.value('prmse'):.6f}")  # fmt: skip
    return seconds, sorted(peaks.values()), restarts, ev.n_responses


def run_in_memory(path: Path) -> tuple[float, int]:
    """(seconds, peak RSS in bytes) of ``easl evaluate FILE`` in one process."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "easl_toolkit.tui.cli", "evaluate", str(path), *ARGS, "--json"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ratings", type=int, default=100_000_000, help="ratings of the Dask run (2 per response)")
    p.add_argument("--in-memory-ratings", type=int, default=10_000_000, help="ratings of the in-memory run")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory", type=float, default=2.0, help="memory limit per worker, GiB")
    args = p.parse_args()
    limit = int(args.memory * GIB)
    directory = data_set(args.ratings)
    files = len(list(directory.glob("*.parquet")))
    print(f"easl evaluate --dask: {args.ratings:,} ratings in {files} Parquet files, {args.workers} workers "
          f"x {args.memory:g} GiB")  # fmt: skip
    seconds, peaks, restarts, n = run_dask(directory, args.workers, limit)
    worst = max(peaks) / GIB
    verdict = "OK" if worst <= 2.0 and restarts == 0 else "OVER TARGET"
    print(f"dask      {args.ratings:>12,} ratings ({n:,} responses): {seconds:7.1f} s, peak per worker "
          f"{', '.join(f'{x / GIB:.2f}' for x in peaks)} GiB, {restarts} restarts   target <= 2 GiB per worker: "
          f"{verdict}")  # fmt: skip
    path = one_file(args.in_memory_ratings)
    seconds_mem, peak_mem = run_in_memory(path)
    print(f"in memory {args.in_memory_ratings:>12,} ratings: {seconds_mem:7.1f} s, peak {peak_mem / GIB:.2f} GiB "
          f"(one process)")  # fmt: skip


if __name__ == "__main__":
    main()
