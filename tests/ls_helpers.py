"""Shared helpers of the Label Studio tests (``tests/test_ls_plugin.py``, ``tests/test_ls_campaign.py``): ``easl``
as a subprocess, ``easl serve`` as a restartable :class:`Backend`, simulated slider scores, and what the project and
Label Studio hold."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import requests

REPO = Path(__file__).resolve().parent.parent
#: Items of the plugin tests' projects (``item00`` .. ``item29``): their true scores spread evenly over 0-100.
N_ITEMS = 30


def easl(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "easl_toolkit.tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=180,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"easl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


class Backend:
    """`easl serve` as a subprocess (started, SIGKILLed and restarted by the tests)."""

    def __init__(self, project: Path, port: int, env: dict, log: Path, *extra: str) -> None:
        self.project, self.port, self.env, self.log_path = project, port, env, log
        self.extra = extra  # further `easl serve` options
        self.proc: subprocess.Popen | None = None
        self.url = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        self.log = open(self.log_path, "a")  # noqa: SIM115 (a server's log, open for its lifetime)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "easl_toolkit.tui.cli",
                "serve",
                str(self.project),
                "--port",
                str(self.port),
                "--reconcile-interval",
                "3",
                "--access-log",
                *self.extra,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=self.env,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log_path.read_text()
            try:
                if requests.get(f"{self.url}/health", timeout=1).ok:
                    return
            except requests.RequestException:
                time.sleep(0.1)
        raise AssertionError("easl serve did not answer /health within 30 s")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        if getattr(self, "log", None) is not None:  # not when it was never started
            self.log.close()


def truth(item_id: str) -> float:
    return float(int(item_id[4:]) * 100 / (N_ITEMS - 1))


def slider_result(item_ids: list[str], rng: np.random.Generator) -> list[dict]:
    scores = np.clip(np.round([truth(i) for i in item_ids] + rng.normal(0, 8, len(item_ids))), 0, 100)
    return [
        {"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number", "value": {"number": float(s)}}
        for j, s in enumerate(scores)
    ]


def project_status(path: Path) -> dict:
    from easl_toolkit.core.store import Project

    with Project.open(path, readonly=True) as p:
        return p.status()


def ls_tasks(sdk, pid: int) -> list:
    return list(sdk.tasks.list(project=pid, fields="all"))


def drained(path: Path) -> bool:
    return project_status(path)["events"]["pending"] == 0


def live_by_annotation(path: Path) -> dict[str, dict[str, float]]:
    from easl_toolkit.core.store import Project

    with Project.open(path, readonly=True) as p:
        r = p.ratings()
    out: dict[str, dict[str, float]] = {}
    for aid, item, score in zip(r["annotation_id"], r["item_id"], r["score"]):
        out.setdefault(str(aid), {})[str(item)] = float(score)
    return out


def expected_live(sdk, pid: int) -> dict[str, dict[str, float]]:
    """What the engine must hold: every valid, not skipped annotation of every task in Label Studio."""
    out = {}
    for t in ls_tasks(sdk, pid):
        for a in t.annotations or []:
            a = a if isinstance(a, dict) else a.dict()
            if a.get("was_cancelled"):
                continue
            scores = {}
            for r in a["result"]:
                name = r.get("from_name", "")
                x = (r.get("value") or {}).get("number")
                if name.startswith("score_") and isinstance(x, (int, float)) and 0 <= x <= 100:
                    scores[t.data["item_ids"][int(name[6:])]] = float(x)
            if len(scores) == len(t.data["item_ids"]) and len(a["result"]) == len(scores):
                out[str(a["id"])] = scores
    return out
