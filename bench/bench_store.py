"""Benchmark of the project file (its speed targets):

* ingest >= 20,000 scores/s (reading the CSV, validating, appending to the log, updating the cached state);
* replay of 1,000,000 observations <= 10 s (``Project.verify``: rebuild from the whole log and compare);
* export of 1,000,000 items <= 10 s (``Project.estimates`` + writing CSV / Parquet).

Replay is measured for EASL (commutative) and for RA and TrueSkill (order dependent: pairwise updates in log
order). Run: ``.venv/bin/python bench/bench_store.py`` (about 3-4 minutes; ``--scale 0.1`` for a quick look). Files
go to
a temporary directory (or ``--dir``) and are deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from easl_toolkit.core.models import Hyper  # noqa: E402
from easl_toolkit.core.store import Project  # noqa: E402
from easl_toolkit.core.tables import read_table, write_table  # noqa: E402


def items(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": [f"item{k:07d}" for k in range(n)],
            "text": [f"text {k}" for k in range(n)],
            "source": np.where(np.arange(n) % 2 == 0, "even", "odd"),
        }
    )


def scores(n_items: int, n_rows: int, rng: np.random.Generator, offset: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": [f"item{k:07d}" for k in rng.integers(0, n_items, n_rows)],
            "score": rng.integers(0, 101, n_rows).astype(np.float64),
            "annotator": [f"ann{k}" for k in range(offset, offset + n_rows)],
        }
    )


def timed(label: str, fn, results: list, **extra):
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    results.append({"step": label, "seconds": round(dt, 3), **extra})
    print(f"  {label}: {dt:.2f} s", flush=True)
    return out, dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size by this factor")
    ap.add_argument("--dir", help="work directory (default: a temporary directory)")
    args = ap.parse_args()
    s = args.scale
    n_obs = int(1_000_000 * s)
    n_export = int(1_000_000 * s)
    n_items_log = int(100_000 * s)
    batch = int(200_000 * s)
    rng = np.random.default_rng(0)
    results: list[dict] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        # 1. ingest: CSV files of `batch` scores into a project of `n_items_log` items, until n_obs observations
        print(f"ingest: {n_obs:,} scores in files of {batch:,} into {n_items_log:,} items (EASL)")
        project = os.path.join(d, "log.easl")
        Project.create(project, items(n_items_log), Hyper()).close()
        total_rows, total_time = 0, 0.0
        with Project.open(project) as p:
            k = 0
            while total_rows < n_obs:
                rows = scores(n_items_log, min(batch, n_obs - total_rows), rng, total_rows)
                path = os.path.join(d, f"batch{k}.csv")
                rows.to_csv(path, index=False)
                t = time.perf_counter()
                report = p.ingest(read_table(path), source=path)
                dt = time.perf_counter() - t
                assert report.new == len(rows)
                total_rows += len(rows)
                total_time += dt
                print(
                    f"  file {k}: {len(rows):,} rows in {dt:.2f} s ({len(rows) / dt:,.0f} scores/s; log now "
                    f"{total_rows:,})",
                    flush=True,
                )
                k += 1
            rate = total_rows / total_time
            results.append(
                {
                    "step": "ingest (read CSV + validate + append + state)",
                    "seconds": round(total_time, 3),
                    "rate": f"{rate:,.0f} scores/s",
                    "target": ">= 20,000 scores/s",
                    "ok": rate >= 20_000,
                }
            )
            # idempotent re-ingest of the last file
            t = time.perf_counter()
            again = p.ingest(read_table(path), source=path)
            dt = time.perf_counter() - t
            assert again.duplicate == len(rows)
            results.append(
                {
                    "step": "re-ingest of the last file (all duplicates)",
                    "seconds": round(dt, 3),
                    "rate": f"{len(rows) / dt:,.0f} rows/s",
                }
            )
            # 2. replay
            print(f"replay: {total_rows:,} observations")
            conn = p.db.conn
            (state, _), dt = timed("replay of the log (rebuild)", lambda conn=conn: p.replay.replay_log(conn), results)
            results[-1].update(target="<= 10 s", ok=dt <= 10)
            check, dt = timed("verify (replay + compare)", p.verify, results)
            assert check["ok"], check
        # 2b. replay of order-dependent models: whole HIT submissions (every HIT of iteration 0 scored by several
        # annotators) so that the pairwise updates run
        for method in ("ra", "trueskill"):
            path = os.path.join(d, f"{method}.easl")
            with Project.create(path, items(n_items_log), Hyper(method=method)) as p:
                hits = p.open_hits()
                hit_col = np.repeat([h["hit_id"] for h in hits], [len(h["items"]) for h in hits])
                item_col = [it["item_id"] for h in hits for it in h["items"]]
                n_pass = max(1, n_obs // len(item_col))
                t = time.perf_counter()
                for a in range(n_pass):
                    p.ingest(
                        pd.DataFrame(
                            {
                                "hit_id": hit_col,
                                "item_id": item_col,
                                "annotator": f"ann{a}",
                                "score": rng.integers(0, 101, len(item_col)).astype(np.float64),
                            }
                        ),
                        source=method,
                    )
                dt = time.perf_counter() - t
                n = n_pass * len(item_col)
                results.append(
                    {
                        "step": f"ingest of whole HIT submissions ({method}, DataFrame)",
                        "seconds": round(dt, 3),
                        "rate": f"{n / dt:,.0f} scores/s",
                    }
                )
                print(f"  {method}: ingested {n:,} scores in {dt:.2f} s", flush=True)
                conn = p.db.conn
                _, dt = timed(
                    f"replay of {n:,} observations ({method}: pairwise, in log order)",
                    lambda conn=conn: p.replay.replay_log(conn),
                    results,
                )
                results[-1].update(target="<= 10 s", ok=dt <= 10)
        # 3. export
        print(f"export: {n_export:,} items")
        big = os.path.join(d, "items.easl")
        _, dt = timed(
            f"create a project of {n_export:,} items",
            lambda: Project.create(big, items(n_export), Hyper()).close(),
            results,
        )
        with Project.open(big, readonly=True) as p:
            est, dt_e = timed("estimates()", p.estimates, results)
            _, dt_c = timed("write CSV", lambda: write_table(est, os.path.join(d, "est.csv")), results)
            _, dt_p = timed("write Parquet", lambda: write_table(est, os.path.join(d, "est.parquet")), results)
        results.append(
            {
                "step": "export to CSV (estimates + write)",
                "seconds": round(dt_e + dt_c, 3),
                "target": "<= 10 s",
                "ok": dt_e + dt_c <= 10,
            }
        )
        results.append(
            {
                "step": "export to Parquet (estimates + write)",
                "seconds": round(dt_e + dt_p, 3),
                "target": "<= 10 s",
                "ok": dt_e + dt_p <= 10,
            }
        )
    print()
    table = pd.DataFrame(results).fillna("")
    print(table.to_string(index=False))
    return 0 if all(r.get("ok", True) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
