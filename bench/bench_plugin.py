"""Benchmark of the Label Studio plugin (issue 5 speed targets):

* webhook acknowledgement p99 <= 20 ms under 50 concurrent senders on loopback (a bounded number of requests:
  valid ANNOTATION_CREATED payloads, so the worker ingests them while the acknowledgements are measured);
* the next iteration pushed <= 2 s after the last annotation of an iteration, for a 10,000-item project, against
  a real Label Studio (started with tests/ls_server.py; installed into .cache/ls-venv on first use).

`easl serve` runs as a subprocess, exactly as users run it. Run: ``.venv/bin/python bench/bench_plugin.py``
(about 3 minutes; ``--skip-push`` for the acknowledgement part only, which needs no Label Studio).
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
from pathlib import Path

import numpy as np
import pandas as pd
import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from core.models import Hyper  # noqa: E402
from core.store import Project  # noqa: E402
from easl_plugin import bookkeeping as bk  # noqa: E402
from label_config.layouts import Layout, layout_for_method, task_data  # noqa: E402
from tests.ls_server import free_port, running_server  # noqa: E402


def make_project(path: Path, n_items: int, seed: int = 0) -> None:
    items = pd.DataFrame({"item_id": [f"item{k:06d}" for k in range(n_items)],
                          "text": [f"statement {k}" for k in range(n_items)]})
    Project.create(path, items, Hyper(hit_size=5, seed=seed)).close()


def start_serve(path: Path, port: int, env: dict, log: Path, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "tui.cli", "serve", str(path), "--port", str(port), *extra],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=REPO, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"easl serve exited: {log.read_text()}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=1).ok:
                return proc
        except requests.RequestException:
            time.sleep(0.1)
    raise RuntimeError("easl serve did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def payloads(path: Path, n: int, pid: int) -> list[bytes]:
    """``n`` valid ANNOTATION_CREATED webhooks for the open HITs, as Label Studio would post them."""
    with Project.open(path, readonly=True) as p:
        hits = p.open_hits()
    lay = Layout("slider", 5)
    rng = np.random.default_rng(0)
    out = []
    for k in range(n):  # beyond one iteration, HITs get further annotations (new annotation ids)
        h = hits[k % len(hits)]
        data = task_data(h, lay, rng)
        result = [{"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number",
                   "value": {"number": float(rng.integers(0, 101))}} for j in range(5)]
        body = {"action": "ANNOTATION_CREATED", "project": {"id": pid},
                "annotation": {"id": 10_000 + k, "result": result, "completed_by": 1, "was_cancelled": False,
                               "task": k + 1, "lead_time": 3.2},
                "task": {"id": k + 1, "data": data, "project": pid}}
        out.append(json.dumps(body).encode())
    return out


async def blast(url: str, bodies: list[bytes], concurrency: int, rate: float | None = None,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Post ``bodies`` from ``concurrency`` concurrent senders; returns each request's latency as the sender saw it
    and as the server measured it (from the handler's start to the durable acknowledgement), in seconds.

    ``rate`` None: closed loop (each sender posts again as soon as it has its answer: a saturation test).
    ``rate`` r: open loop, each sender waits an exponential time of mean ``concurrency / r`` between posts, so the
    senders together offer ``r`` requests/s (annotators submitting independently)."""
    import httpx

    rng = np.random.default_rng(seed)
    lat = np.empty(len(bodies))
    server = np.empty(len(bodies))
    queue: asyncio.Queue = asyncio.Queue()
    for k in range(len(bodies)):
        queue.put_nowait(k)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=10) as client:
        async def sender():
            while True:
                try:
                    k = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                if rate is not None:
                    await asyncio.sleep(float(rng.exponential(concurrency / rate)))
                t = time.perf_counter()
                r = await client.post(url, content=bodies[k], headers={"content-type": "application/json"})
                lat[k] = time.perf_counter() - t
                if r.status_code != 200:
                    raise RuntimeError(f"webhook answered {r.status_code}: {r.text}")
                server[k] = r.json()["ms"] / 1000

        await asyncio.gather(*(sender() for _ in range(concurrency)))
    return lat, server


def bench_ack(tmp: Path, n_items: int, n_requests: int, concurrency: int, rate: float, *, apply: bool = True) -> dict:
    """Acknowledgement latency; ``apply`` False leaves the project unlinked, so the worker applies nothing (the
    acknowledgement path alone)."""
    path = tmp / f"ack-{int(apply)}.easl"
    make_project(path, n_items)
    if apply:
        with Project.open(path) as p:  # linked to a (nonexistent) Label Studio project: events applied, no push
            lay = layout_for_method("easl", 5, 0.0, 100.0)
            bk.set_meta(p, {bk.KEY_URL: "http://127.0.0.1:9", bk.KEY_PROJECT_ID: "1",
                            bk.KEY_LAYOUT: json.dumps(lay.to_dict())})
    n_sat = n_requests // 2
    bodies = payloads(path, 100 + n_requests + n_sat, 1)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LABEL_STUDIO_API_KEY"}
    proc = start_serve(path, port, env, tmp / f"ack-serve-{int(apply)}.log")
    out: dict = {"requests": n_requests, "concurrency": concurrency, "rate": rate}
    try:
        url = f"http://127.0.0.1:{port}/webhook"
        asyncio.run(blast(url, bodies[:100], concurrency))  # warm-up
        t0 = time.perf_counter()
        lat, srv = asyncio.run(blast(url, bodies[100:100 + n_requests], concurrency, rate))
        wall = time.perf_counter() - t0
        out.update(summary(lat, "open"), **summary(srv, "open_server"), open_rate=n_requests / wall)
        t0 = time.perf_counter()
        lat, srv = asyncio.run(blast(url, bodies[100 + n_requests:], concurrency))
        wall = time.perf_counter() - t0
        out.update(summary(lat, "closed"), **summary(srv, "closed_server"), closed_rate=n_sat / wall)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with Project.open(path, readonly=True) as p:
                counts = bk.queue_counts(p)
            if counts["pending"] == 0 or not apply:
                break
            time.sleep(0.2)
        with Project.open(path, readonly=True) as p:
            out["observations"] = p.status()["n_observations"]
            out["verify"] = p.verify()["ok"]
        out["events"] = counts
    finally:
        stop(proc)
    return out


def summary(seconds: np.ndarray, prefix: str) -> dict:
    ms = seconds * 1000
    return {f"{prefix}_p50_ms": float(np.percentile(ms, 50)), f"{prefix}_p99_ms": float(np.percentile(ms, 99)),
            f"{prefix}_max_ms": float(ms.max())}


def bench_push(tmp: Path, n_items: int, repeats: int) -> list[dict]:
    from label_studio_sdk import LabelStudio

    path = tmp / "push.easl"
    make_project(path, n_items)
    out = []
    with running_server() as ls:
        env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
        t = time.perf_counter()
        setup = subprocess.run([sys.executable, "-m", "tui.cli", "ls", "setup", str(path), "--url", ls.url, "--json"],
                               capture_output=True, text=True, cwd=REPO, env=env, check=True)
        info = json.loads(setup.stdout)
        print(f"  ls setup: {info['tasks_imported']} tasks imported in {time.perf_counter() - t:.1f} s", flush=True)
        pid = info["ls_project_id"]
        port = free_port()
        proc = start_serve(path, port, env, tmp / "push-serve.log", "--reconcile-interval", "3600")
        sdk = LabelStudio(base_url=ls.url, api_key=ls.token)
        try:
            subprocess.run([sys.executable, "-m", "tui.cli", "ls", "setup", str(path), "--url", ls.url,
                            "--backend-url", f"http://127.0.0.1:{port}", "--connect", "webhook"],
                           capture_output=True, text=True, cwd=REPO, env=env, check=True)
            rng = np.random.default_rng(1)
            for rep in range(repeats):
                with Project.open(path) as p:
                    it = p.iteration()
                    hits = p.open_hits()
                    task_of = {hit: int(t) for t, hit in bk.id_map(p, bk.TASK).items()}
                    # every HIT but the last is annotated straight into the project (bench set-up, not measured)
                    rows = [{"item_id": i["item_id"], "score": float(rng.integers(0, 101)), "hit_id": h["hit_id"],
                             "annotator": "bench"} for h in hits[:-1] for i in h["items"]]
                    p.ingest(rows, source="bench")
                last = hits[-1]
                n_before = sdk.projects.get(id=pid).task_number
                task = sdk.tasks.get(id=task_of[last["hit_id"]])
                result = [{"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number",
                           "value": {"number": float(rng.integers(0, 101))}} for j in range(5)]
                t0 = time.perf_counter()
                sdk.annotations.create(id=task.id, result=result)
                t_ack = time.perf_counter() - t0
                while sdk.projects.get(id=pid).task_number < n_before + len(hits):
                    if time.perf_counter() - t0 > 60:
                        raise RuntimeError("next iteration not pushed within 60 s")
                    time.sleep(0.02)
                t_push = time.perf_counter() - t0
                out.append({"iteration": it + 1, "hits": len(hits), "annotation_submit_s": t_ack,
                            "pushed_after_s": t_push})
                print(f"  iteration {it} -> {it + 1}: {len(hits)} HITs, next pushed {t_push:.2f} s after the last "
                      f"annotation (its submit took {t_ack:.2f} s)", flush=True)
        finally:
            stop(proc)
        with Project.open(path, readonly=True) as p:
            ok = p.verify()["ok"]
        print(f"  easl verify after the push runs: {'ok' if ok else 'MISMATCH'}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--rate", type=float, default=100.0,
                    help="open-loop offered load, requests/s summed over the senders (default 100)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-push", action="store_true", help="only the acknowledgement benchmark")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="easl-bench-plugin-") as d:
        tmp = Path(d)
        print(f"webhook acknowledgement, {args.items} items, {args.concurrency} concurrent senders, valid "
              f"ANNOTATION_CREATED payloads applied by the worker meanwhile", flush=True)
        a = bench_ack(tmp, args.items, args.requests, args.concurrency, args.rate)
        verdict = "PASS" if a["open_p99_ms"] <= 20 else "FAIL"
        print(f"  open loop, {a['requests']} posts at {a['open_rate']:.0f}/s: p50 {a['open_p50_ms']:.2f} ms, p99 "
              f"{a['open_p99_ms']:.2f} ms (target <= 20 ms: {verdict}), max {a['open_max_ms']:.1f} ms; in the "
              f"server (handler start -> committed): p50 {a['open_server_p50_ms']:.2f}, p99 "
              f"{a['open_server_p99_ms']:.2f} ms")
        print(f"  closed loop (saturation), {args.requests // 2} posts: {a['closed_rate']:.0f} requests/s, p50 "
              f"{a['closed_p50_ms']:.1f} ms, p99 {a['closed_p99_ms']:.1f} ms (queueing: 50 senders / throughput); "
              f"in the server: p50 {a['closed_server_p50_ms']:.2f}, p99 {a['closed_server_p99_ms']:.2f} ms")
        print(f"  all applied: {a['observations']} observations, events {a['events']}, verify "
              f"{'ok' if a['verify'] else 'MISMATCH'}")
        b = bench_ack(tmp, args.items, args.requests, args.concurrency, args.rate, apply=False)
        print(f"  the acknowledgement path alone (nothing applied meanwhile), open loop at {b['open_rate']:.0f}/s: "
              f"p50 {b['open_p50_ms']:.2f} ms, p99 {b['open_p99_ms']:.2f} ms; in the server p99 "
              f"{b['open_server_p99_ms']:.2f} ms; closed loop {b['closed_rate']:.0f} requests/s")
        if not args.skip_push:
            print(f"next-iteration push with a real Label Studio, {args.items} items, 5 per HIT", flush=True)
            runs = bench_push(tmp, args.items, args.repeats)
            worst = max(r["pushed_after_s"] for r in runs)
            print(f"  worst {worst:.2f} s (target <= 2 s: {'PASS' if worst <= 2 else 'FAIL'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
