"""``easl export PROJECT --output est.csv`` on a large project, through the real CLI.

Target, on this machine, for a project of 1,000,000 items: <= 2 s of wall time, start-up included (aim: 1.5 s, so
that a busy machine still meets it). Each run's wall time is printed with its CPU time (user + system) and the
1-minute load average beside it, since the machine may be shared (under load the wall time grows, the CPU time much
less), then the medians. With ``--against EASL`` every run is followed by one of another ``easl`` executable (e.g.
the main branch's, to compare two versions on the same load), and the two files must be byte for byte the same.

Run: ``.venv/bin/python bench/bench_export.py PROJECT [--runs 5] [--against OTHER/.venv/bin/easl]``; PROJECT is read
only (e.g. the 1,000,000-item project that ``bench/bench_scale.py --dir DIR`` leaves after two iterations). Files go
to a temporary directory, deleted afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EASL = os.path.join(ROOT, ".venv", "bin", "easl")
TARGET_S = 2.0
AIM_S = 1.5


def export(easl: str, project: str, output: str) -> tuple[float, float, str]:
    """Run ``easl export project --output output``; returns (wall s, CPU s, SHA-256 of the file)."""
    started = time.perf_counter()
    proc = subprocess.Popen([easl, "export", project, "--output", output], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{easl} export {project} failed")
    with open(output, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    return wall, usage.ru_utime + usage.ru_stime, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", help="a project file (read only)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", metavar="EASL", help="another easl executable, run after each run of this one")
    args = parser.parse_args()
    commands = {"this": EASL} | ({"other": args.against} if args.against else {})
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):
            digests = set()
            for name, easl in commands.items():
                wall, cpu, digest = export(easl, args.project, os.path.join(tmp, f"{name}.csv"))
                digests.add(digest)
                walls[name].append(wall)
                cpus[name].append(cpu)
                load = os.getloadavg()[0]
                print(f"run {k + 1} {name:5s}: {wall:5.2f} s wall, {cpu:5.2f} s CPU, load {load:4.2f}", flush=True)
            if len(digests) > 1:
                raise SystemExit("the two executables wrote different files")
    for name in commands:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        verdict = "met" if wall <= TARGET_S else "MISSED"
        print(
            f"{name:5s} median of {args.runs}: {wall:.2f} s wall (target <= {TARGET_S} s: {verdict}; aim "
            f"{AIM_S} s), {cpu:.2f} s CPU; best {min(walls[name]):.2f} s"
        )


if __name__ == "__main__":
    main()
