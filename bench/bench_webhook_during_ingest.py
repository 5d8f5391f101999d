"""Webhook acknowledgements while another process writes the project: a real ``easl serve`` takes Label Studio
webhooks while a real ``easl ingest`` of a large file holds the project file's write lock.

Generates an annotation CSV of about ``--size`` MB (default 1024: about 33 million rows, ``bench_memory.py``'s
generator) and a project of ``--items`` items (method ``easl``, HITs of 4, linked to a Label Studio project as
``easl ls setup`` links it), starts ``easl serve`` on it, then ``easl ingest PROJECT FILE``, and posts one
annotation webhook every ``1 / --rate`` seconds while the ingest runs, each on a new connection with Label Studio's
1 s timeout (a few deliveries repeated, as Label Studio may repeat them). Prints, beside the targets:

- the acknowledgement latency (p50, p99, max) as the sender saw it, and how many answers were not 2xx or late;
- the ingest's wall time and rows per second (the same ingest alone: ``bench_memory.py``);
- how many of the events were applied while the ingest ran (a file of 96 MB or more into a project linked to Label
  Studio is ingested in slices, the write lock free between them: ``easl ingest --commit-every``), how long the
  queue took to drain after it, and whether every annotation landed exactly once;
- ``easl verify`` (``--no-verify`` skips it: for 1 GB it replays 33 million scores).

    python bench/bench_webhook_during_ingest.py               # 1 GB (tens of minutes on 2 shared cores)
    python bench/bench_webhook_during_ingest.py --size 50     # a quick run
    python bench/bench_webhook_during_ingest.py --size 200 --commit-every 0   # one transaction, as before
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench.bench_memory import write_annotations  # noqa: E402
from bench.bench_plugin import start_serve, stop  # noqa: E402

TARGET_P99_S = 0.200  #: acknowledgement p99 during the ingest
LS_TIMEOUT_S = 1.0  #: Label Studio's webhook timeout (it never retries)
WEBHOOK_TOKEN = "bench-webhook-token-0c5e1f9a7d3b2468"  #: the project's webhook token (Label Studio's header)
LS_PROJECT = 42  #: the Label Studio project id the bench project is linked to
HIT_SIZE = 4


def make_project(path: str, n_items: int) -> list[dict]:
    """A project of ``n_items`` items ``i0000000, ...`` (method ``easl``, HITs of 4) linked to Label Studio
    project :data:`LS_PROJECT` with a slider layout; returns its open HITs."""
    import pandas as pd

    from easl_toolkit.core.models import Hyper
    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin import bookkeeping as bk
    from easl_toolkit.label_config.layouts import Layout

    items = pd.DataFrame(
        {"item_id": [f"i{k:07d}" for k in range(n_items)], "text": [f"text {k}" for k in range(n_items)]}
    )
    with Project.create(path, items, Hyper(method="easl", hit_size=HIT_SIZE, seed=1)) as p:
        bk.set_meta(
            p,
            {
                bk.KEY_URL: "http://127.0.0.1:1",
                bk.KEY_PROJECT_ID: str(LS_PROJECT),
                bk.KEY_LAYOUT: json.dumps(Layout("slider", HIT_SIZE).to_dict()),
                bk.KEY_WEBHOOK_TOKEN: WEBHOOK_TOKEN,  # /webhook needs a credential, as from Label Studio
            },
        )
        return p.open_hits()


def annotation_event(hit: dict, ann_id: int, task_id: int, scores: list[float]) -> dict:
    """The ``ANNOTATION_CREATED`` webhook Label Studio sends for one annotation of the task showing ``hit``."""
    from easl_toolkit.label_config.layouts import Layout, task_data

    data = task_data(hit, Layout("slider", HIT_SIZE), np.random.default_rng(task_id))
    result = [
        {"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number", "value": {"number": float(s)}}
        for j, s in enumerate(scores)
    ]
    return {
        "action": "ANNOTATION_CREATED",
        "project": {"id": LS_PROJECT},
        "annotation": {"id": ann_id, "result": result, "completed_by": 1, "task": task_id},
        "task": {"id": task_id, "data": data},
    }


async def post_once(port: int, body: bytes, timeout_s: float) -> tuple[float, int]:
    """One ``POST /webhook`` on a new connection, as Label Studio sends it; returns (seconds, HTTP status), the
    status 0 when no answer came within ``timeout_s``."""
    t = time.perf_counter()
    writer = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                b"POST /webhook HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"x-easl-secret: %s\r\ncontent-length: %d\r\n\r\n%s" % (WEBHOOK_TOKEN.encode(), len(body), body)
            )
            head = await reader.readuntil(b"\r\n\r\n")
            fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
            await reader.readexactly(int({k.lower(): v for k, v in fields.items()}[b"content-length"]))
            status = int(head.split(b" ", 2)[1])
    except (TimeoutError, OSError, asyncio.IncompleteReadError):
        status = 0
    finally:
        if writer is not None:
            writer.close()
    return time.perf_counter() - t, status


@dataclass
class Deliveries:
    """What the sender posted while the ingest ran: each delivery's annotation id, latency and HTTP status."""

    annotation_ids: list[int] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)  # time.perf_counter() when posted
    latency_s: list[float] = field(default_factory=list)
    status: list[int] = field(default_factory=list)

    @property
    def late_or_failed(self) -> int:
        """Deliveries Label Studio would count as failed: not 2xx, or not answered within its 1 s."""
        return sum(1 for s, t in zip(self.status, self.latency_s) if not 200 <= s < 300 or t > LS_TIMEOUT_S)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latency_s, q)) if self.latency_s else float("nan")


def post_while(
    port: int, hits: list[dict], running, *, rate: float, repeat_every: int = 20, first_id: int = 1_000_000
) -> Deliveries:
    """Post annotation webhooks every ``1 / rate`` seconds (each on its own task, over ``hits`` in turn; every
    ``repeat_every``-th delivery repeats an earlier one) while ``running()`` is true."""
    out = Deliveries()

    async def main() -> None:
        pending: list[asyncio.Task] = []
        k = 0
        next_at = time.perf_counter()
        while running():
            if repeat_every and k % repeat_every == repeat_every - 1:
                ann = out.annotation_ids[k // 2]  # a repeated delivery of an earlier event
            else:
                ann = first_id + k
            hit = hits[(ann - first_id) % len(hits)]
            scores = [float((ann * 7 + j * 13) % 101) for j in range(len(hit["items"]))]
            body = json.dumps(annotation_event(hit, ann, ann + 5_000_000, scores)).encode()
            out.annotation_ids.append(ann)
            out.sent_at.append(time.perf_counter())
            pending.append(asyncio.create_task(post_once(port, body, LS_TIMEOUT_S)))
            k += 1
            next_at += 1.0 / rate
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        for lat, status in await asyncio.gather(*pending):
            out.latency_s.append(lat)
            out.status.append(status)

    asyncio.run(main())
    return out


def wait_drained(project: str, n_events: int, timeout_s: float) -> float:
    """Seconds until the service applied ``n_events`` events (none pending); raises after ``timeout_s``."""
    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin import bookkeeping as bk

    started = time.perf_counter()
    while True:
        with Project.open(project, readonly=True) as p:
            counts = bk.queue_counts(p)
        if counts.get("pending", 0) == 0 and counts.get("done", 0) + counts.get("failed", 0) >= n_events:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout_s:
            raise RuntimeError(f"the queue did not drain in {timeout_s:.0f} s: {counts}")
        time.sleep(0.2)


def landed(project: str) -> dict[str, tuple[int, int]]:
    """Label Studio annotation id -> (live scores, score records in the log) of it in the project: ``(4, 4)``
    when it landed exactly once. Read with SQL of its own (the bench's check, not the product's: a project of a
    1 GB ingest holds 33 million ratings, too many for ``Project.ratings``)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        live = dict(
            conn.execute(
                "SELECT annotation_id, COUNT(*) FROM live WHERE annotation_id IS NOT NULL GROUP BY annotation_id"
            ).fetchall()
        )
        log = dict(
            conn.execute(
                "SELECT annotation_id, COUNT(*) FROM observations WHERE annotation_id IS NOT NULL AND kind = 'score' "
                "GROUP BY annotation_id"
            ).fetchall()
        )
    finally:
        conn.close()
    return {str(k): (int(live.get(k, 0)), int(n)) for k, n in log.items()}


def free_port() -> int:
    """A TCP port free on this machine now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Run:
    """The figures of one run."""

    rows: int
    size_mb: float
    ingest_s: float
    ingest_rc: int
    deliveries: Deliveries
    drain_s: float
    applied_during: int  # events applied before the ingest ended
    landed: dict[str, tuple[int, int]]
    events: dict[str, int]
    verify_ok: bool | None


def run(
    work: str,
    *,
    size_mb: float,
    n_items: int,
    rate: float,
    verify: bool = True,
    port: int | None = None,
    commit_every: int | None = None,
) -> Run:
    """The whole scenario in directory ``work`` (see the module docstring); ``commit_every``: the ingest's
    ``--commit-every`` (None: its default)."""
    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin import bookkeeping as bk

    project = os.path.join(work, "bench.easl")
    hits = make_project(project, n_items)
    data = os.path.join(work, "annotations.csv")
    n_rows = write_annotations(data, size_mb, n_items)
    port = port or free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LABEL_STUDIO_API_KEY", "EASL_BASIC_AUTH", "EASL_WEBHOOK_SECRET")
    }
    serve = start_serve(Path(project), port, env, Path(work) / "serve.log")  # no key: events applied, nothing pushed
    try:
        started = time.perf_counter()
        slices = [] if commit_every is None else ["--commit-every", str(commit_every)]
        ingest = subprocess.Popen(
            [sys.executable, "-m", "easl_toolkit.tui.cli", "ingest", project, data, *slices],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(work, "ingest.log"), "w"),  # noqa: SIM115 (the child's)
        )
        deliveries = post_while(port, hits, lambda: ingest.poll() is None, rate=rate)
        ingest.wait()
        ended, ended_at = time.perf_counter(), bk.now()
        ingest_s = ended - started
        late = [
            (round(t0 - ended, 2), round(lat, 3), st)
            for t0, lat, st in zip(deliveries.sent_at, deliveries.latency_s, deliveries.status)
            if not 200 <= st < 300 or lat > LS_TIMEOUT_S
        ]
        if late:  # when they were sent, in seconds before the ingest process ended (its commit is at its end)
            print(f"late or failed (sent s before the ingest ended, seconds, status): {late[:50]}", flush=True)
        slowest = sorted(zip(deliveries.latency_s, deliveries.sent_at), reverse=True)[:10]
        print(
            "slowest (ms, sent s before the ingest ended):",
            [(round(1000 * a), round(t - ended, 1)) for a, t in slowest],
        )
        drain_s = wait_drained(project, len(deliveries.annotation_ids), timeout_s=max(120.0, ingest_s))
    finally:
        stop(serve)
    with Project.open(project, readonly=True) as p:
        events = bk.queue_counts(p)
        during = p.db.conn.execute(
            "SELECT COUNT(*) FROM events WHERE status = 'done' AND processed_at < ?", (ended_at,)
        ).fetchone()[0]
    got = landed(project)
    ok = None
    if verify:
        ok = (
            subprocess.run(
                [sys.executable, "-m", "easl_toolkit.tui.cli", "verify", project], cwd=REPO, capture_output=True
            ).returncode
            == 0
        )
    size = os.path.getsize(data) / 1e6
    return Run(n_rows, size, ingest_s, ingest.returncode, deliveries, drain_s, during, got, events, ok)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1024.0, help="annotation file size in MB (default 1024)")
    parser.add_argument("--items", type=int, default=100_000, help="items in the project (default 100,000)")
    parser.add_argument("--rate", type=float, default=20.0, help="webhooks per second during the ingest (default 20)")
    parser.add_argument("--no-verify", action="store_true", help="skip easl verify at the end")
    parser.add_argument(
        "--commit-every", type=int, metavar="ROWS", help="the ingest's --commit-every (default: the ingest's default)"
    )
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed afterwards)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        r = run(
            work,
            size_mb=args.size,
            n_items=args.items,
            rate=args.rate,
            verify=not args.no_verify,
            commit_every=args.commit_every,
        )
    d = r.deliveries
    expected = {str(a) for a in d.annotation_ids}
    lost = sorted(expected - set(r.landed))
    doubled = sorted(k for k, v in r.landed.items() if v != (HIT_SIZE, HIT_SIZE))
    met = {True: "met", False: "NOT met"}
    speed = r.rows / r.ingest_s
    print(
        f"easl ingest: {r.rows:,} rows ({r.size_mb:,.0f} MB) in {r.ingest_s:.1f} s: {speed:,.0f} rows/s "
        f"(exit {r.ingest_rc})"
    )
    print(f"webhooks during the ingest: {len(d.annotation_ids):,} at {args.rate:g}/s ({len(expected):,} annotations)")
    p99 = d.percentile(99)
    worst = max(d.latency_s, default=0.0)
    print(
        f"  ack p50 {1000 * d.percentile(50):.1f} ms, p99 {1000 * p99:.1f} ms, max {1000 * worst:.1f} ms"
        f"   target p99 <= {1000 * TARGET_P99_S:.0f} ms   {met[p99 <= TARGET_P99_S]}"
    )
    fivexx = sum(1 for s in d.status if s >= 500)
    bad = d.late_or_failed
    print(f"  5xx {fivexx}, not 2xx within {LS_TIMEOUT_S:g} s {bad}   target 0   {met[bad == 0]}")
    print(f"  applied while the ingest ran: {r.applied_during:,} events; the rest {r.drain_s:.1f} s after it")
    print(f"  events {r.events}")
    print(f"  lost {len(lost)}, doubled {len(doubled)}   target 0   {met[not lost and not doubled]}")
    if r.verify_ok is not None:
        print(f"  easl verify: {'ok' if r.verify_ok else 'FAILED'}")
    print(f"  load average (1 min) at the start {load:.2f} on {os.cpu_count()} CPUs")
    return 0 if (p99 <= TARGET_P99_S and d.late_or_failed == 0 and not lost and not doubled) else 1


if __name__ == "__main__":
    sys.exit(main())
