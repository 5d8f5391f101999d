"""Benchmark of the Label Studio queue: annotators who submit in bursts always find a next task, within 1 s, through
a real Label Studio (started with tests/ls_server.py).

For 2, 5 and 20 annotators (``--annotators``), each a real user of the organisation with its own token, `easl serve`
runs as users run it (default options: the queue's depth measured, ``easl_plugin/queue.py``) and `easl ls setup`
connects it as ML backend. The annotators work as the labelling stream does, through Label Studio's own next-task
endpoint (``GET /api/projects/<id>/next``, which locks the task for them), in bursts: every round, all of them
submit within the same second (a barrier, then up to 0.5 s of jitter), then ask ``/next`` at once; a ``/next``
that gives no task is counted and asked again every 0.2 s. Between rounds each thinks ``--think`` seconds. The
campaign never ends within the run (the method ``easl`` has no stopping rule), so every "no task" answer counts.

Figures per run: the ``/next`` requests answered with no task (target 0); the time from a submission's answer to
the next task, p50/p95/max (target p95 <= 1 s); beside it the floor measured in the same run, Label Studio's own
``/next`` latency when it gave a task at once (p50/p95), which no backend can go below. At the end every annotation
Label Studio holds must be in the project exactly once and ``easl verify`` must pass.

Run: ``.venv/bin/python bench/bench_ls_queue.py`` (all three crowds on one server, about 12 minutes), or
``--annotators 20 --rounds 10``. Each crowd gets 40 + 25 per annotator items, so that it finishes the first batch
(every item once) within the run and the rest of its tasks are top-ups.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_plugin import start_serve, stop  # noqa: E402
from easl_toolkit.core.store import Project  # noqa: E402
from tests.ls_server import create_annotator, free_port, running_server, wait_for  # noqa: E402

TARGET_P95_S = 1.0
TARGET_EMPTY = 0
POLL_S = 0.2
JITTER_S = 0.5  #: the submissions of a burst fall within this many seconds


def slider_result(item_ids: list[str], rng: np.random.Generator) -> list[dict]:
    """Five slider scores: a made-up truth (the item's number) plus noise, on 0-100."""
    truth = np.array([int(i[4:]) for i in item_ids], dtype=float) % 100
    scores = np.clip(np.round(truth + rng.normal(0, 10, len(item_ids))), 0, 100)
    return [
        {"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number", "value": {"number": float(s)}}
        for j, s in enumerate(scores)
    ]


class Annotator(threading.Thread):
    """One person in the labelling stream: every round, wait for the others, submit, take the next task."""

    def __init__(self, url: str, pid: int, token: str, seed: int, rounds: int, think_s: float, barrier) -> None:
        super().__init__(daemon=True)
        self.url, self.pid, self.rounds, self.think_s, self.barrier = url, pid, rounds, think_s, barrier
        self.s = requests.Session()
        self.s.headers["Authorization"] = f"Token {token}"
        self.rng = np.random.default_rng(seed)
        self.waits: list[float] = []  # seconds from a submission's answer to the next task
        self.floor: list[float] = []  # seconds of a /next that gave a task at once
        self.empty = 0  # /next answers without a task
        self.errors: list[str] = []

    def next_task(self) -> tuple[dict | None, float]:
        t = time.monotonic()
        r = self.s.get(f"{self.url}/api/projects/{self.pid}/next", timeout=60)
        took = time.monotonic() - t
        if r.status_code == 200 and r.json().get("id"):
            return r.json(), took
        self.empty += 1
        return None, took

    def take(self, deadline: float) -> dict | None:
        task, took = self.next_task()
        if task is not None:
            self.floor.append(took)
        while task is None and time.monotonic() < deadline:
            time.sleep(POLL_S)
            task, _ = self.next_task()
        return task

    def run(self) -> None:
        try:
            task = self.take(time.monotonic() + 120)
            for _ in range(self.rounds):
                if task is None:
                    self.errors.append("no task within 120 s")
                    return
                time.sleep(self.think_s * self.rng.uniform(0.8, 1.2))
                self.barrier.wait(300)  # a burst: everybody submits within the same second
                time.sleep(self.rng.uniform(0, JITTER_S))
                body = {"result": slider_result(task["data"]["item_ids"], self.rng)}
                r = self.s.post(f"{self.url}/api/tasks/{task['id']}/annotations", json=body, timeout=60)
                if r.status_code >= 400:
                    self.errors.append(f"task {task['id']}: HTTP {r.status_code}")
                    return
                done = time.monotonic()
                task = self.take(done + 120)
                self.waits.append(time.monotonic() - done)
        except (requests.RequestException, threading.BrokenBarrierError) as exc:
            self.errors.append(f"{exc.__class__.__name__}: {exc}")
            self.barrier.abort()


def easl(*args: str, env: dict) -> str:
    return subprocess.run(
        [sys.executable, "-m", "easl_toolkit.tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=True,
    ).stdout


def crowd_run(ls, people: list, n: int, rounds: int, think_s: float, tmp: Path) -> dict:
    """One campaign with the first ``n`` of ``people``; returns its figures."""
    n_items = 40 + 25 * n  # a first batch the crowd finishes within the run: then every task is a top-up
    items = tmp / f"items{n}.csv"
    items.write_text("id,text\n" + "".join(f"item{i:03d},statement number {i}\n" for i in range(n_items)))
    path = tmp / f"queue{n}.easl"
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
    for k in ("EASL_BASIC_AUTH", "EASL_WEBHOOK_SECRET"):
        env.pop(k, None)
    easl("init", str(path), "--items", str(items), "--hit-size", "5", "--seed", "1", env=env)
    port = free_port()
    proc = start_serve(path, port, env, tmp / f"serve{n}.log")
    try:
        info = json.loads(
            easl(
                "ls",
                "setup",
                str(path),
                "--url",
                ls.url,
                "--backend-url",
                f"http://127.0.0.1:{port}",
                "--json",
                env=env,
            )
        )
        pid = info["ls_project_id"]
        barrier = threading.Barrier(n)
        crowd = [Annotator(ls.url, pid, p.token, k, rounds, think_s, barrier) for k, p in enumerate(people[:n])]
        for a in crowd:
            a.start()
        for a in crowd:
            a.join(rounds * (think_s * 1.2 + 130) + 130)
        wait_for(lambda: _settled(path, ls, pid), "every annotation in the project", 120)
        verify = easl("verify", str(path), env=env).startswith("ok")
        with Project.open(path, readonly=True) as p:
            iteration, n_scores = p.iteration(), len(p.ratings())
            plan = p.get_meta("ls.queue")
    finally:
        stop(proc)
    waits = np.array([w for a in crowd for w in a.waits])
    floor = np.array([f for a in crowd for f in a.floor])
    return {
        "annotators": n,
        "items": n_items,
        "first_batch": info["tasks_imported"],
        "submissions": len(waits),
        "empty": sum(a.empty for a in crowd),
        "wait": _quantiles(waits),
        "floor": _quantiles(floor),
        "iteration": iteration,
        "scores": n_scores,
        "verify": verify,
        "errors": [e for a in crowd for e in a.errors],
        "plan": json.loads(plan) if plan else None,
    }


def _quantiles(x: np.ndarray) -> dict:
    if not len(x):
        return {"p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    return {"p50": float(np.median(x)), "p95": float(np.quantile(x, 0.95)), "max": float(x.max())}


def _settled(path: Path, ls, pid) -> bool:
    """No event pending and one live annotation in the project per Label Studio annotation."""
    with Project.open(path, readonly=True) as p:
        if p.status()["events"]["pending"]:
            return False
        r = p.ratings()
    if r.duplicated(["annotation_id", "item_id"]).any():
        return False
    held = requests.get(
        f"{ls.url}/api/projects/{pid}/export",
        params={"exportType": "JSON", "download_all_tasks": "true"},
        headers={"Authorization": f"Token {ls.token}"},
        timeout=120,
    ).json()
    want = {str(a["id"]) for t in held for a in t["annotations"] if not a.get("was_cancelled")}
    return set(r["annotation_id"].astype(str)) == want


def report(fig: dict) -> bool:
    """Print one run's figures beside the targets; returns whether they are met."""
    w, f = fig["wait"], fig["floor"]
    met = fig["empty"] <= TARGET_EMPTY and w["p95"] <= TARGET_P95_S and fig["verify"] and not fig["errors"]
    plan = fig["plan"] or {}
    print(
        f"  {fig['annotators']:>2} annotators, {fig['items']} items ({fig['first_batch']} tasks in the first batch), "
        f"{fig['submissions']} submissions in bursts, ending at iteration {fig['iteration']} ({fig['scores']} scores)\n"
        f"     /next answered with no task: {fig['empty']} (target {TARGET_EMPTY})\n"
        f"     submission -> next task: p50 {w['p50']:.3f} s, p95 {w['p95']:.3f} s, max {w['max']:.3f} s "
        f"(target p95 <= {TARGET_P95_S:g} s)\n"
        f"     floor, Label Studio's /next with a task: p50 {f['p50']:.3f} s, p95 {f['p95']:.3f} s\n"
        f"     queue depth {plan.get('depth')} (active {plan.get('active')}, {plan.get('rate_per_s')} submissions/s, "
        f"cycle {plan.get('cycle_s')} s); verify {'ok' if fig['verify'] else 'MISMATCH'}; "
        f"errors: {fig['errors'] or 'none'}\n"
        f"     targets: {'met' if met else 'MISSED'}",
        flush=True,
    )
    return met


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annotators", type=int, nargs="+", default=[2, 5, 20])
    ap.add_argument("--rounds", type=int, default=12, help="bursts per annotator")
    ap.add_argument("--think", type=float, default=5.0, help="seconds between an annotator's bursts")
    args = ap.parse_args()
    print("bench_ls_queue: annotators submitting in bursts through a real Label Studio's next-task endpoint")
    print(f"  load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    tmp = Path(tempfile.mkdtemp(prefix="easl-bench-queue-"))
    ok = True
    with running_server() as ls:
        people = [
            create_annotator(ls, f"q{k}@example.com", f"pw-q{k}-{ls.token[:8]}") for k in range(max(args.annotators))
        ]
        for n in args.annotators:
            ok &= report(crowd_run(ls, people, n, args.rounds, args.think, tmp))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
