"""Benchmark of the CLI's start-up: ``easl --help`` and every ``easl <command> --help`` within
0.25 s of wall time.

Each command line runs through the real console script (``easl`` beside the running Python, i.e. the one in
``.venv/bin``, else the one on ``PATH``) ``--repeat`` times (default 5); the median wall time is printed beside the
target. Then ``python -X importtime`` of building the parser lists the modules that cost most (cumulative
microseconds), so a regression names its cause. Exit status 1 when any median misses the target.

Run: ``.venv/bin/python bench/bench_cli.py`` (a few seconds), or ``make bench``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

TARGET_S = 0.25  # `easl --help` and every `easl <command> --help`

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from easl_toolkit.tui.cli import COMMANDS  # noqa: E402  (light: argparse and core.errors only)

NESTED = {"simulate": ("prmse", "metrics", "easl", "replay"), "ls": ("setup", "status")}


def console_script() -> str:
    """The ``easl`` console script of this interpreter's environment (else the one on PATH)."""
    here = os.path.join(os.path.dirname(sys.executable), "easl")
    found = here if os.access(here, os.X_OK) else shutil.which("easl")
    if not found:
        sys.exit("bench_cli: no `easl` console script found; run `make venv` first")
    return found


def wall_times(argv: list[str], repeat: int) -> list[float]:
    """Wall times (s) of ``repeat`` runs of ``argv``; each run must exit 0."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit(f"bench_cli: {' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
    return times


def import_offenders(top: int) -> list[tuple[int, int, str]]:
    """The ``top`` modules with the largest cumulative import time while building the parser:
    ``(cumulative us, self us, module)``, largest first."""
    code = "from easl_toolkit.tui.cli import build_parser; build_parser()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        rows.append((int(cumulative_us), int(self_us), name.rstrip()))
    # a module's cumulative time includes the modules it imports (shown indented under it by -X importtime)
    return sorted(rows, reverse=True)[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command line (default 5; the median counts)")
    parser.add_argument("--top", type=int, default=12, help="import-time offenders listed (default 12)")
    args = parser.parse_args()
    easl = console_script()
    lines = [[]] + [[c] for c in COMMANDS] + [[c, s] for c, subs in NESTED.items() for s in subs]
    print(f"CLI start-up: median of {args.repeat} wall times through {easl} (target <= {TARGET_S:.2f} s)")
    print(f"{'command':<32} {'median s':>9} {'min s':>7} {'max s':>7}  target")
    missed = 0
    for words in lines:
        times = wall_times([easl, *words, "--help"], args.repeat)
        med = statistics.median(times)
        ok = med <= TARGET_S
        missed += not ok
        label = " ".join(["easl", *words, "--help"])
        print(
            f"{label:<32} {med:9.3f} {min(times):7.3f} {max(times):7.3f}  {'ok' if ok else 'MISSED'} "
            f"(<= {TARGET_S:.2f})"
        )
    print(f"\nlargest cumulative import times while building the parser (python -X importtime, {sys.executable}):")
    print(f"{'cumulative ms':>13} {'self ms':>8}  module")
    for cumulative, self_time, name in import_offenders(args.top):
        print(f"{cumulative / 1000:13.1f} {self_time / 1000:8.1f}  {name}")
    print(f"\n{len(lines) - missed} of {len(lines)} command lines within {TARGET_S:.2f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
