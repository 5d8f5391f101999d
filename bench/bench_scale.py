"""The project file at scale, measured through the real CLI.

What users get by default: ``easl init`` without ``--method`` (the annotator-aware model, whose ingest refits
every live score with its annotator and whose ``next`` chooses items by expected rank error); ``--method M``
measures another method (``--method easl`` gives the figures of the paper's EASL). Targets, on this machine,
with 1,000,000 items and HIT size 5:

* ``easl init`` <= 5 s;
* ``easl next`` <= 3 s in every iteration, the first (iteration 0, every item once) and later ones (the method's
  selection on the posterior of 1,000,000 items), in every output format: JSONL on stdout (the default), a
  ``.jsonl`` file, a ``.parquet`` file and a ``.csv`` file (each of the first three on a copy of the project taken
  before the iteration's ``next``, so that each starts the iteration; the CSV one on the project itself, whose HITs
  are then scored);
* ``easl ingest`` >= 100,000 scores/s (one score for every item of an iteration: 1,000,000 rows, each HIT scored
  by one annotator of a pool of 200);
* ``easl export`` <= 2 s;
* ``easl status`` <= 1 s;
* peak memory (resident set of the command's process) <= 2 GiB for every command;

and ``easl status`` on a 10,000-item project <= 0.4 s (median of 5 runs).

Every figure is the wall time of one ``.venv/bin/easl`` subprocess (start-up included) and its peak resident set
(its ``VmHWM``, polled: :func:`peak_rss`); the CPU time the command used (user + system) is printed beside it, with the
1-minute load average after each command, since the machine may be shared (under load the wall time grows, the CPU
time much less). Before each command the files written so far are flushed to disk (``os.sync``), so that no
command waits on the writeback of the one before it (an ``fsync`` waits for whatever else the disk has queued: run
back to back, ``ingest`` measured 85,000-99,000 scores/s and ``export`` up to 2.4 s, with the same CPU time). Run:
``.venv/bin/python bench/bench_scale.py`` (a few minutes; ``--items N`` for a smaller run, ``--method M`` for
another method than the default). Files go to a temporary directory (or ``--dir``) and are deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from easl_toolkit.tui.commands.init import DEFAULT_METHOD, METHODS  # noqa: E402  (light: the parser module, no engine)

EASL = os.path.join(ROOT, ".venv", "bin", "easl")
GIB = 1024**3
N_ANNOTATORS = 200  # the annotator pool; each HIT is scored by one of them


CPU: dict[str, float] = {}  # CPU seconds (user + system) of the last command, by its sub-command


def peak_rss(pid: int) -> int:
    """The peak resident set of the running process ``pid`` since its ``exec`` (``VmHWM`` in ``/proc/PID/status``,
    bytes; 0 once it has exited)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run(*args: str) -> tuple[float, int]:
    """Run ``easl *args``; returns (wall seconds, peak RSS in bytes) and records its CPU seconds in ``CPU``. Raises
    when the command fails.

    The peak is the child's own ``VmHWM``, polled every 10 ms: ``wait4``'s ``ru_maxrss`` would start from this
    process's resident set at the fork (Linux carries the high-water mark across ``exec``), and this process holds
    the oracle and the HIT files."""
    os.sync()  # the disk settled first: no command waits on the writeback of the one before it
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:  # not a pipe: a child writing much to stderr never blocks on it
        proc = subprocess.Popen([EASL, *args], stdout=subprocess.DEVNULL, stderr=errors)
        peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, peak_rss(proc.pid))
            time.sleep(0.01)
        seconds = time.perf_counter() - started
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"easl {' '.join(args)} failed ({proc.returncode}):\n{err}")
    CPU["last"] = usage.ru_utime + usage.ru_stime
    return seconds, peak


ROWS: list[tuple[str, float, str, bool]] = []  # every figure recorded: (label, value, target, met)


def record(label: str, value: float, unit: str, target: float, higher_is_better: bool = False) -> None:
    """Print a figure beside its target, with the CPU time of the last command and the load; kept in ``ROWS``."""
    ok = value >= target if higher_is_better else value <= target
    cmp = ">=" if higher_is_better else "<="
    ROWS.append((label, value, f"{cmp} {target:,.4g} {unit}", ok))
    cpu = f"  (cpu {CPU.pop('last'):.1f} s, load {os.getloadavg()[0]:.2f})" if "last" in CPU else ""
    print(
        f"  {label:<44} {value:>12,.3f} {unit:<9} target {cmp} {target:,.4g} {unit}  {'ok' if ok else 'MISSED'}{cpu}",
        flush=True,
    )


def next_in_every_format(project: str, tmp: str, it: int, peaks: list[tuple[str, int]]) -> str:
    """``easl next`` of iteration ``it`` as JSONL on stdout, a ``.jsonl`` file and a ``.parquet`` file, each on a
    copy of ``project`` (so that each starts the iteration), then as a ``.csv`` file on the project itself; returns
    the CSV file's path."""
    copy = os.path.join(tmp, "copy.easl")
    for fmt, output in (("JSONL, stdout", []), ("JSONL", ["hits.jsonl"]), ("Parquet", ["hits.parquet"])):
        shutil.copyfile(project, copy)  # easl leaves the file with its WAL checkpointed: one file
        t, rss = run("next", copy, *(["--output", os.path.join(tmp, *output)] if output else []))
        record(f"next (iteration {it}, {fmt})", t, "s", 3.0)
        peaks.append((f"next {it} {fmt}", rss))
    hits = os.path.join(tmp, f"hits{it}.csv")
    t, rss = run("next", project, "--output", hits)
    record(f"next (iteration {it}, CSV)", t, "s", 3.0)
    peaks.append((f"next {it} CSV", rss))
    return hits


def write_items(path: str, n: int) -> None:
    ids = np.char.add("item", np.arange(n).astype("U7"))
    pd.DataFrame({"id": ids, "text": np.char.add("text of item ", np.arange(n).astype("U7"))}).to_csv(path, index=False)


def write_scores(hits_csv: str, path: str, oracle: dict[str, float], rng: np.random.Generator) -> int:
    """One score per item of every HIT in ``hits_csv`` (the long form written by ``easl next --output x.csv``), each
    HIT scored by one annotator drawn from a pool of :data:`N_ANNOTATORS`."""
    hits = pd.read_csv(hits_csv, usecols=["hit_id", "item_id"], dtype=str)
    truth = hits["item_id"].map(oracle).to_numpy(dtype=np.float64)
    score = np.clip(np.rint(truth + rng.normal(0, 10, len(hits))), 0, 100)
    hit_codes, hit_index = np.unique(hits["hit_id"].to_numpy(), return_inverse=True)
    pool = np.char.add("ann", np.arange(N_ANNOTATORS).astype("U3"))
    annotator = pool[rng.integers(N_ANNOTATORS, size=hit_codes.size)][hit_index]
    pd.DataFrame({"hit_id": hits["hit_id"], "item_id": hits["item_id"], "score": score, "annotator": annotator}).to_csv(
        path, index=False
    )
    return len(hits)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=1_000_000, help="items of the large project (default 1,000,000)")
    ap.add_argument("--iterations", type=int, default=2, help="iterations after the first (default 2)")
    ap.add_argument("--dir", help="work directory (default: a temporary directory)")
    ap.add_argument(
        "--method",
        choices=METHODS,
        help="pass --method M to easl init (default: none, so the projects use easl init's default method)",
    )
    args = ap.parse_args()
    if not os.access(EASL, os.X_OK):
        raise SystemExit(f"{EASL} not found: run `make venv` first")
    rng = np.random.default_rng(0)
    rows = ROWS
    peaks: list[tuple[str, int]] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        n = args.items
        method = ["--method", args.method] if args.method else []
        print(
            f"{n:,} items, HIT size 5, method {args.method or DEFAULT_METHOD + ' (the default)'} (files in {tmp}); "
            f"load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        items = os.path.join(tmp, "items.csv")
        write_items(items, n)
        oracle = dict(zip(np.char.add("item", np.arange(n).astype("U7")).tolist(), rng.uniform(0, 100, n).tolist()))
        project = os.path.join(tmp, "big.easl")
        t, rss = run("init", project, "--items", items, *method, "--hit-size", "5", "--seed", "1")
        record("init", t, "s", 5.0)
        peaks.append(("init", rss))
        for it in range(args.iterations + 1):
            hits = next_in_every_format(project, tmp, it, peaks)
            if it == args.iterations:
                break
            scores = os.path.join(tmp, f"scores{it}.csv")
            n_scores = write_scores(hits, scores, oracle, rng)
            t, rss = run("ingest", project, scores)
            record(
                f"ingest (iteration {it}, {n_scores:,} scores)",
                n_scores / t,
                "scores/s",
                100_000,
                higher_is_better=True,
            )
            peaks.append((f"ingest {it}", rss))
        t, rss = run("export", project, "--output", os.path.join(tmp, "estimates.csv"))
        record("export", t, "s", 2.0)
        peaks.append(("export", rss))
        t, rss = run("status", project, "--json")
        record("status", t, "s", 1.0)
        peaks.append(("status", rss))
        worst = max(peaks, key=lambda p: p[1])
        record(f"peak memory (easl {worst[0]})", worst[1] / GIB, "GiB", 2.0)

        small_items = os.path.join(tmp, "small.csv")
        write_items(small_items, 10_000)
        small = os.path.join(tmp, "small.easl")
        run("init", small, "--items", small_items, *method, "--hit-size", "5", "--seed", "1")
        run("status", small, "--json")  # warm the file cache
        times = [run("status", small, "--json")[0] for _ in range(5)]
        CPU.pop("last", None)
        record("status, 10,000 items (median of 5)", statistics.median(times), "s", 0.4)

    print(f"load average (1 min) at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    missed = [r[0] for r in rows if not r[3]]
    print(
        f"\n{len(rows) - len(missed)} of {len(rows)} targets met" + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
