"""Benchmark of the Label Studio queue: the next task is available <= 1 s after the last submission of a batch,
at 20 concurrent annotators, through a real Label Studio (started with tests/ls_server.py).

`easl serve` runs as users run it (default queue depth: the active annotators + 1) and `easl ls setup` connects it
as ML backend. Twenty annotators, each a real user of the organisation with its own token, work as the labelling
stream does: ``GET /api/projects/<id>/next`` (Label Studio locks the task for them), a think time, ``POST`` the
annotation, then ``/next`` again, polled every 0.2 s until a task comes. The wait of each submission is the time
from the submission's answer to the first ``/next`` that gives a task; a submission that finished a batch (the
last open task of an iteration in Label Studio's eyes) is reported apart. At the end every annotation Label Studio
holds must be in the project exactly once, and ``easl verify`` must pass.

Run: ``.venv/bin/python bench/bench_ls_queue.py`` (about 4 minutes; ``--annotators``, ``--seconds``, ``--items``).
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
from core.store import Project  # noqa: E402
from tests.ls_server import create_annotator, free_port, running_server, wait_for  # noqa: E402

TARGET_S = 1.0
POLL_S = 0.2


def slider_result(item_ids: list[str], rng: np.random.Generator) -> list[dict]:
    """Five slider scores: a made-up truth (the item's number) plus noise, on 0-100."""
    truth = np.array([int(i[4:]) for i in item_ids], dtype=float) * 100 / 999
    scores = np.clip(np.round(truth + rng.normal(0, 10, len(item_ids))), 0, 100)
    return [
        {"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number", "value": {"number": float(s)}}
        for j, s in enumerate(scores)
    ]


class Annotator(threading.Thread):
    """One person in the labelling stream: take the next task, think, submit, wait for the next one."""

    def __init__(self, url: str, pid: int, token: str, seed: int, stop_at: float, think_s: float) -> None:
        super().__init__(daemon=True)
        self.url, self.pid, self.stop_at, self.think_s = url, pid, stop_at, think_s
        self.s = requests.Session()
        self.s.headers["Authorization"] = f"Token {token}"
        self.rng = np.random.default_rng(seed)
        self.waits: list[tuple[float, int, float]] = []  # (seconds until a task came, task submitted, when)
        self.submitted: list[int] = []
        self.errors: list[str] = []
        self.calls: list[float] = []  # seconds per /next call (Label Studio's own latency)
        self.empty = 0  # submissions whose first /next found no task
        self.statuses: dict[int, int] = {}  # HTTP status of /next -> count

    def next_task(self) -> dict | None:
        t = time.monotonic()
        r = self.s.get(f"{self.url}/api/projects/{self.pid}/next", timeout=30)
        self.calls.append(time.monotonic() - t)
        self.statuses[r.status_code] = self.statuses.get(r.status_code, 0) + 1
        return r.json() if r.status_code == 200 else None

    def run(self) -> None:
        try:
            task = self.next_task()
            while task is None and time.monotonic() < self.stop_at:
                time.sleep(POLL_S)
                task = self.next_task()
            while task is not None and time.monotonic() < self.stop_at:
                time.sleep(self.think_s * self.rng.uniform(0.5, 1.5))
                body = {"result": slider_result(task["data"]["item_ids"], self.rng)}
                r = self.s.post(f"{self.url}/api/tasks/{task['id']}/annotations", json=body, timeout=60)
                if r.status_code >= 400:
                    self.errors.append(f"task {task['id']}: HTTP {r.status_code}")
                    return
                done_at = time.monotonic()
                self.submitted.append(int(task["id"]))
                nxt = self.next_task()
                self.empty += nxt is None
                while nxt is None and time.monotonic() < self.stop_at + 30:
                    time.sleep(POLL_S)
                    nxt = self.next_task()
                self.waits.append((time.monotonic() - done_at, int(task["id"]), done_at))
                task = nxt
        except requests.RequestException as exc:
            self.errors.append(f"{exc.__class__.__name__}: {exc}")


def easl(*args: str, env: dict) -> str:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, cwd=REPO, env=env, check=True
    ).stdout


def run(n_annotators: int, seconds: float, n_items: int, think_s: float, depth: int | None) -> bool:
    tmp = Path(tempfile.mkdtemp(prefix="easl-bench-queue-"))
    items = tmp / "items.csv"
    items.write_text("id,text\n" + "".join(f"item{i:03d},statement number {i}\n" for i in range(n_items)))
    path = tmp / "queue.easl"
    with running_server() as ls:
        env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
        easl("init", str(path), "--items", str(items), "--hit-size", "5", "--seed", "1", env=env)
        people = [create_annotator(ls, f"q{k}@example.com", f"pw-q{k}-{ls.token[:8]}") for k in range(n_annotators)]
        port = free_port()
        extra = () if depth is None else ("--queue-depth", str(depth))
        proc = start_serve(path, port, env, tmp / "serve.log", *extra)
        try:
            backend = f"http://127.0.0.1:{port}"
            info = json.loads(
                easl("ls", "setup", str(path), "--url", ls.url, "--backend-url", backend, "--json", env=env)
            )
            pid = info["ls_project_id"]
            print(
                f"  {n_items} items, {info['tasks_imported']} tasks in the first batch; {n_annotators} annotators, "
                f"think time {think_s:g} s (x0.5-1.5), {seconds:g} s, queue depth {depth or 'default'}",
                flush=True,
            )
            stop_at = time.monotonic() + seconds
            crowd = [Annotator(ls.url, pid, p.token, k, stop_at, think_s) for k, p in enumerate(people)]
            for a in crowd:
                a.start()
            for a in crowd:
                a.join(seconds + 120)
            errors = [e for a in crowd for e in a.errors]
            waits = np.array([w for a in crowd for w, _, _ in a.waits])
            calls = np.array([c for a in crowd for c in a.calls])
            empty = sum(a.empty for a in crowd)
            statuses: dict[int, int] = {}
            for a in crowd:
                for code, k in a.statuses.items():
                    statuses[code] = statuses.get(code, 0) + k
            with Project.open(path, readonly=True) as p:
                first_batch = {h["hit_id"] for h in p.hits(0)}
            task_hit = {
                t["id"]: t["data"]["hit_id"]
                for t in requests.get(
                    f"{ls.url}/api/projects/{pid}/export",
                    params={"exportType": "JSON", "download_all_tasks": "true"},
                    headers={"Authorization": f"Token {ls.token}"},
                    timeout=120,
                ).json()
            }
            # the submission that finished the first batch: the last one on a task of iteration 0
            last_of_batch = max(
                ((at, w, tid) for a in crowd for w, tid, at in a.waits if task_hit.get(tid) in first_batch),
                default=None,
            )
            wait_for(lambda: _settled(path, ls, pid), "every annotation in the project", 120)
            verify = subprocess.run(
                [sys.executable, "-m", "tui.cli", "verify", str(path)], capture_output=True, text=True, cwd=REPO
            ).stdout.startswith("ok")
        finally:
            stop(proc)
    n = len(waits)
    p95, worst = (float(np.quantile(waits, 0.95)), float(waits.max())) if n else (float("nan"), float("nan"))
    over = int((waits > TARGET_S).sum())
    print(
        f"  submissions: {n}; wait for the next task: median {np.median(waits):.3f} s, p95 {p95:.3f} s, "
        f"max {worst:.3f} s; {over} of {n} over {TARGET_S:g} s"
    )
    print(
        f"  Label Studio's own /next: median {np.median(calls):.3f} s, p95 {np.quantile(calls, 0.95):.3f} s; "
        f"the first /next after a submission found no task {empty} times of {n}; /next answers {statuses}"
    )
    if last_of_batch is not None:
        print(f"  the first batch's last task (task {last_of_batch[2]}): next task after {last_of_batch[1]:.3f} s")
    with Project.open(path, readonly=True) as p:
        print(f"  project: iteration {p.iteration()}, {len(p.ratings())} scores, {len(p.open_hit_times())} HITs open")
    print(
        f"  every annotation once: {'yes' if _settled(path, None, None) is not False else 'NO'}; "
        f"verify {'ok' if verify else 'MISMATCH'}; errors: {errors or 'none'}"
    )
    met = n > 0 and worst <= TARGET_S and verify and not errors
    print(
        f"  target: next task <= {TARGET_S:g} s after every submission (the end of a batch included): "
        f"{'met' if met else 'MISSED'}"
    )
    return met


def _settled(path: Path, ls, pid) -> bool:
    """No event pending and, with ``ls``, one live annotation in the project per Label Studio annotation."""
    with Project.open(path, readonly=True) as p:
        if p.status()["events"]["pending"]:
            return False
        r = p.ratings()
    if r.duplicated(["annotation_id", "item_id"]).any():
        return False
    if ls is None:
        return True
    held = requests.get(
        f"{ls.url}/api/projects/{pid}/export",
        params={"exportType": "JSON", "download_all_tasks": "true"},
        headers={"Authorization": f"Token {ls.token}"},
        timeout=120,
    ).json()
    want = {str(a["id"]) for t in held for a in t["annotations"] if not a.get("was_cancelled")}
    return set(r["annotation_id"].astype(str)) == want


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--think", type=float, default=10.0, help="mean think time per task, seconds")
    ap.add_argument("--queue-depth", type=int, default=None, help="easl serve --queue-depth (default: its own)")
    args = ap.parse_args()
    print("bench_ls_queue: the next task after a submission, through a real Label Studio")
    return 0 if run(args.annotators, args.seconds, args.items, args.think, args.queue_depth) else 1


if __name__ == "__main__":
    sys.exit(main())
