"""Shared helpers of the plugin service tests: the app under a real uvicorn server, a real `easl serve` process,
linking a project file, and webhook bodies."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import requests
import uvicorn

from bench.bench_plugin import (
    WEBHOOK_TOKEN,
    stop,  # noqa: F401 (stops a child of start_serve: SIGTERM, then SIGKILL)
)
from easl_toolkit.core.store import Project
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.auth import SECRET_HEADER
from easl_toolkit.easl_plugin.worker import LinkedProject
from easl_toolkit.label_config.layouts import Layout, task_data
from tests.ls_server import free_port

SERVE_ENV_KEYS = ("LABEL_STUDIO_API_KEY", "EASL_BASIC_AUTH", "EASL_WEBHOOK_SECRET")
#: the header of the webhook token the tests store in their projects (``WEBHOOK_TOKEN``, bench_plugin's, what
#: `easl ls setup` would generate): /webhook needs it
HOOK = {SECRET_HEADER: WEBHOOK_TOKEN}


def give_token(path: str | Path) -> dict[str, str]:
    """Store :data:`WEBHOOK_TOKEN` as the project's webhook token; returns the header that carries it."""
    with Project.open(path) as p:
        bk.set_meta(p, {bk.KEY_WEBHOOK_TOKEN: WEBHOOK_TOKEN})
    return HOOK


class Client:
    """The app under a real uvicorn server in a thread (as `easl serve` runs it), reached over loopback."""

    def __init__(self, app, host: str = "127.0.0.1", address: str = "127.0.0.1") -> None:
        import threading

        self.port, self.address = free_port(), address
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Client:
        import time

        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive()
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(20)

    def get(self, path, **kw):
        return requests.get(f"http://{self.address}:{self.port}{path}", timeout=10, **kw)

    def post(self, path, content=None, **kw):
        """POST; a webhook posted without ``headers`` is given the project's token (:data:`HOOK`)."""
        if path == "/webhook" and "headers" not in kw:
            kw["headers"] = HOOK
        return requests.post(f"http://{self.address}:{self.port}{path}", data=content, timeout=10, **kw)


AUTH = {"Authorization": "Basic " + base64.b64encode(b"ann:pw").decode()}


def all_events(p: Project) -> list:
    """Every queued event, in arrival order."""
    return sorted(p.events("pending") + p.events("done") + p.events("failed"))


def link(path: str, pid: int = 42) -> LinkedProject:
    with Project.open(path) as p:
        bk.set_meta(
            p,
            {
                bk.KEY_URL: "http://127.0.0.1:1",
                bk.KEY_PROJECT_ID: str(pid),
                bk.KEY_LAYOUT: json.dumps(Layout("slider", 4).to_dict()),
            },
        )
        return LinkedProject.read(p)


def created(hit: dict, ann_id: int, task_id: int, scores, *, pid: int = 42, action="ANNOTATION_CREATED") -> dict:
    data = task_data(hit, Layout("slider", 4), np.random.default_rng(task_id))
    result = [
        {"from_name": f"score_{j}", "to_name": f"text_{j}", "type": "number", "value": {"number": float(s)}}
        for j, s in enumerate(scores)
    ]
    return {
        "action": action,
        "project": {"id": pid},
        "annotation": {"id": ann_id, "result": result, "completed_by": 1, "task": task_id},
        "task": {"id": task_id, "data": data},
    }


def start_serve(
    project_path: str, log_path: Path, *args: str, env: dict | None = None, preexec_fn=None
) -> tuple[subprocess.Popen, int]:
    """`easl serve PROJECT --port P ARGS...` in a child process (its output appended to ``log_path``), once it
    answers ``/health``; the environment without Label Studio's key and the service's credentials, plus ``env``."""
    port = free_port()
    full = {k: v for k, v in os.environ.items() if k not in SERVE_ENV_KEYS} | (env or {})
    with open(log_path, "a") as log:  # the child keeps its own copy of the file descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "easl_toolkit.tui.cli", "serve", project_path, "--port", str(port), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=full,
            preexec_fn=preexec_fn,
        )
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, Path(log_path).read_text()
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=1).ok:
                return proc, port
        except requests.RequestException:
            time.sleep(0.1)
