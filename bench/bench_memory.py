"""Memory and speed of ``easl ingest`` on a huge annotation file, through the real CLI.

Generates a CSV of about ``--size`` MB (default 1024: about 33 million rows of ``item_id,score,annotator``, 32
bytes a row), creates a project of ``--items`` items with ``easl init``, runs ``easl ingest PROJECT FILE`` in a
subprocess and prints its wall time, rows per second and peak resident memory (the child's ``ru_maxrss`` from
``wait4``) beside the targets: peak memory at most 1 GiB whatever the file size, at least 100,000 rows/s. The
machine's load average is printed with the figures, since the machine may be shared.

    python bench/bench_memory.py               # the full 1 GB file (minutes)
    python bench/bench_memory.py --size 50     # a quick run
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_RSS_MB = 1024.0
TARGET_ROWS_S = 100_000.0
BYTES_PER_ROW = 32


def write_annotations(path: str, size_mb: float, n_items: int, seed: int = 0) -> int:
    """Write ``item_id,score,annotator`` rows until the file holds about ``size_mb`` MB; returns the row count."""
    rng = np.random.default_rng(seed)
    target = int(size_mb * 1e6)
    chunk = 500_000
    n = 0
    with open(path, "w") as fh:
        fh.write("item_id,score,annotator\n")
        written = 24
        while written < target:
            k = min(chunk, max(1, (target - written) // BYTES_PER_ROW))
            items = rng.integers(0, n_items, k)
            scores = rng.integers(0, 101, k)
            who = np.arange(n, n + k)
            text = "".join(
                f"i{i:07d},{s},annotator{w:09d}\n" for i, s, w in zip(items.tolist(), scores.tolist(), who.tolist())
            )
            fh.write(text)
            written += len(text)
            n += k
    return n


CPU: list[float] = []  # CPU seconds (user + system) of each child, in order


WAL_MB: list[float] = []  # the largest size of the project's WAL seen during each child, in order


def run_child(args: list[str], wal: str | None = None) -> tuple[float, float, int, str]:
    """Run ``python -m tui.cli ARGS``; returns (seconds, peak RSS in MB, exit status, stderr), appends the
    child's CPU seconds to ``CPU`` and the largest size of the file ``wal`` seen while it ran (polled every 0.2 s)
    to ``WAL_MB``."""
    started = time.perf_counter()
    peak_wal = 0
    with tempfile.TemporaryFile() as errors:  # not a pipe: a child writing much to stderr never blocks on it
        proc = subprocess.Popen(
            [sys.executable, "-m", "easl_toolkit.tui.cli", *args], cwd=REPO, stdout=subprocess.DEVNULL, stderr=errors
        )
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if wal is not None and os.path.exists(wal):
                peak_wal = max(peak_wal, os.path.getsize(wal))
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    CPU.append(usage.ru_utime + usage.ru_stime)
    WAL_MB.append(peak_wal / 1e6)
    return elapsed, usage.ru_maxrss / 1024.0, proc.returncode, err


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1024.0, help="annotation file size in MB (default 1024)")
    parser.add_argument("--items", type=int, default=100_000, help="items in the project (default 100,000)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed afterwards)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        items = os.path.join(work, "items.csv")
        with open(items, "w") as fh:
            fh.write("id,text\n" + "".join(f"i{k:07d},text {k}\n" for k in range(args.items)))
        project = os.path.join(work, "bench.easl")
        t, rss, rc, err = run_child(["init", project, "--items", items])
        if rc != 0:
            print(f"easl init failed: {err}")
            return 1
        print(f"easl init: {args.items:,} items in {t:.1f} s, peak RSS {rss:,.0f} MB")
        path = os.path.join(work, "annotations.csv")
        started = time.perf_counter()
        n = write_annotations(path, args.size, args.items)
        size = os.path.getsize(path) / 1e6
        print(
            f"generated {path.rsplit(os.sep, 1)[-1]}: {size:,.0f} MB, {n:,} rows in "
            f"{time.perf_counter() - started:.1f} s"
        )
        load_before = os.getloadavg()
        t, rss, rc, err = run_child(["ingest", project, path], wal=project + "-wal")
        load_after = os.getloadavg()
        if rc != 0:
            print(f"easl ingest failed ({rc}): {err.strip()[-2000:]}")
            return 1
        rate = n / t
        print(f"easl ingest: {n:,} rows ({size:,.0f} MB) in {t:.1f} s (cpu {CPU[-1]:.1f} s: {n / CPU[-1]:,.0f} rows/s)")
        met = {True: "met", False: "NOT met"}
        print(f"  rows/s      {rate:>12,.0f}   target >= {TARGET_ROWS_S:,.0f}   {met[rate >= TARGET_ROWS_S]}")
        print(f"  peak RSS MB {rss:>12,.0f}   target <= {TARGET_RSS_MB:,.0f}   {met[rss <= TARGET_RSS_MB]}")
        print(
            f"  peak WAL MB {WAL_MB[-1]:>12,.0f}   (the ingest is one transaction: its WAL holds every page it wrote)"
        )
        print(f"  load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
