"""A real Label Studio server for the plugin's integration tests.

Label Studio (pinned below) is installed once into its own virtual environment under ``.cache/ls-venv`` (it pins
its own ``label-studio-sdk``, so it cannot share the project's environment). The install is guarded by a file lock
and a marker file, so concurrent test sessions install it once and later sessions reuse it.

``running_server()`` starts one server bound to 127.0.0.1 on a free port with a fresh data directory, a known
legacy API token and the two SSRF opt-outs that let it call a backend on loopback, waits for ``/health``, yields a
``LabelStudioServer`` (url, token) and stops the server by its process id afterwards, also when the tests fail.
``create_annotator()`` adds a user to the server's organisation through its invite link and returns the user's id
and own API token, so tests can annotate as several distinct people.
Facts used here: ``docs/design.md`` section 7.1 ("A test server").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

LS_VERSION = "1.23.2"
REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(os.environ.get("EASL_LS_CACHE", REPO_ROOT / ".cache"))
VENV_DIR = CACHE_DIR / "ls-venv"
MARKER = VENV_DIR / ".installed"
START_TIMEOUT_S = 240.0
INSTALL_TIMEOUT_S = 1500.0


@dataclass(frozen=True)
class LabelStudioServer:
    """Address and credentials of a running test server."""

    url: str
    token: str
    username: str
    password: str
    data_dir: Path
    pid: int


@dataclass(frozen=True)
class Annotator:
    """A Label Studio user of the server's organisation, with its user id and its own legacy API token."""

    user_id: int
    email: str
    token: str


def create_annotator(server: LabelStudioServer, email: str, password: str) -> Annotator:
    """Create a user in the server's organisation the way a person does: sign up through the invite link.

    ``GET /api/invite`` (as the admin) gives the organisation's invite token; the sign-up form
    (``POST /user/signup/?token=...``, CSRF-protected) creates the user, adds it to the organisation and logs it in;
    that session then reads the user's own legacy token (``GET /api/current-user/token``). ``POST /api/users/``
    is not used: it creates a user outside every organisation, who cannot annotate.
    """
    invite = requests.get(f"{server.url}/api/invite", headers={"Authorization": f"Token {server.token}"}, timeout=10)
    invite.raise_for_status()
    code = invite.json()["token"]
    with requests.Session() as s:
        s.get(f"{server.url}/user/signup/", params={"token": code}, timeout=10).raise_for_status()
        r = s.post(
            f"{server.url}/user/signup/",
            params={"token": code},
            allow_redirects=False,
            timeout=30,
            data={"email": email, "password": password, "csrfmiddlewaretoken": s.cookies["csrftoken"]},
            headers={"Referer": f"{server.url}/user/signup/"},
        )
        if r.status_code != 302:
            raise RuntimeError(f"signing up {email} failed with HTTP {r.status_code}")
        me = s.get(f"{server.url}/api/current-user/whoami", timeout=10).json()
        token = s.get(f"{server.url}/api/current-user/token", timeout=10).json()["token"]
    if me["email"] != email or me["active_organization"] is None:
        raise RuntimeError(f"{email} was signed up but did not join the organisation: {me}")
    return Annotator(user_id=int(me["id"]), email=email, token=token)


def wait_for(cond, what: str, timeout: float = 60.0):
    """Poll ``cond()`` every 0.2 s until it returns something truthy (returned); AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


CHROMIUM = Path("/usr/bin/chromium")


def ensure_chromium() -> Path:
    """Debian's Chromium at ``/usr/bin/chromium``, installed with ``apt-get install -y chromium`` when missing.

    Raises ``RuntimeError`` with the reason when it is missing and cannot be installed (no apt-get, not root, no
    network): the browser test then fails with that message rather than being skipped.
    """
    if CHROMIUM.exists():
        return CHROMIUM
    apt = shutil.which("apt-get")
    if apt is None:
        raise RuntimeError(f"{CHROMIUM} is missing and apt-get is not available: install Debian's chromium package")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with open(CACHE_DIR / "chromium-install.log", "w") as log:
        for cmd in ([apt, "update"], [apt, "install", "-y", "chromium"]):
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=INSTALL_TIMEOUT_S)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"{' '.join(cmd[1:])} failed (status {proc.returncode}): see {CACHE_DIR / 'chromium-install.log'}"
                )
    if not CHROMIUM.exists():
        raise RuntimeError(f"apt-get installed chromium but {CHROMIUM} is still missing")
    return CHROMIUM


def _python_for_venv() -> str:
    """The interpreter used to create the Label Studio venv: the one running the tests (Python 3.11)."""
    return sys.executable if sys.version_info[:2] == (3, 11) else shutil.which("python3.11") or sys.executable


def ensure_installed() -> Path:
    """Install Label Studio into ``.cache/ls-venv`` once; return the path of its ``label-studio`` script.

    A file lock serialises concurrent installers; the marker file (holding the pinned version) is written only
    after a successful install, so an interrupted install is redone from scratch.
    """
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    script = VENV_DIR / "bin" / "label-studio"
    with open(CACHE_DIR / "ls-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if MARKER.exists() and MARKER.read_text().strip() == f"label-studio=={LS_VERSION}" and script.exists():
            return script
        if VENV_DIR.exists():
            shutil.rmtree(VENV_DIR)
        subprocess.run([_python_for_venv(), "-m", "venv", str(VENV_DIR)], check=True)
        log = CACHE_DIR / "ls-install.log"
        with open(log, "w") as out:
            proc = subprocess.run(
                [str(VENV_DIR / "bin" / "pip"), "install", "--quiet", f"label-studio=={LS_VERSION}"],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=INSTALL_TIMEOUT_S,
            )
        if proc.returncode != 0:
            raise RuntimeError(f"pip install label-studio=={LS_VERSION} failed; see {log}")
        MARKER.write_text(f"label-studio=={LS_VERSION}\n")
        return script


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server's process group (Label Studio forks workers) by its id: SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


@contextlib.contextmanager
def running_server() -> Iterator[LabelStudioServer]:
    """Start a fresh Label Studio on loopback and yield its address and legacy token; stop it afterwards."""
    script = ensure_installed()
    data_dir = Path(tempfile.mkdtemp(prefix="easl-ls-data-"))
    port = free_port()
    token = secrets.token_hex(20)
    password = secrets.token_urlsafe(12)
    username = "admin@example.com"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABEL_STUDIO_", "DJANGO_"))}
    env.update(
        {
            "LABEL_STUDIO_USERNAME": username,
            "LABEL_STUDIO_PASSWORD": password,
            "LABEL_STUDIO_USER_TOKEN": token,
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
            "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",
            "SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "",
            "LABEL_STUDIO_SSRF_PROTECTION_ENABLED": "false",
            "LABEL_STUDIO_ML_BLOCK_LOCAL_IP": "false",
            "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
        }
    )
    log_path = data_dir / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 (a server's log, open for its lifetime)
    proc = subprocess.Popen(
        [
            str(script),
            "start",
            "--no-browser",
            "--internal-host",
            "127.0.0.1",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=str(data_dir),
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"Label Studio exited with status {proc.returncode}; see {log_path}")
            try:
                r = requests.get(f"{url}/health", timeout=2)
                if r.ok and r.json().get("status") == "UP":
                    break
            except (requests.RequestException, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Label Studio did not become healthy within {START_TIMEOUT_S:.0f} s; see {log_path}"
                )
            time.sleep(0.5)
        yield LabelStudioServer(
            url=url, token=token, username=username, password=password, data_dir=data_dir, pid=proc.pid
        )
    finally:
        _stop(proc)
        log.close()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module", name="ls")
def module_server() -> Iterator[LabelStudioServer]:
    """Fixture ``ls``: one fresh server for a test module (import ``module_server`` into the module)."""
    with running_server() as server:
        yield server


@pytest.fixture(scope="module", name="sdk")
def module_sdk(ls: LabelStudioServer):
    """Fixture ``sdk``: the official SDK's client as the server's admin (import ``module_sdk``)."""
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=ls.url, api_key=ls.token)


if __name__ == "__main__":  # manual use: python tests/ls_server.py  (prints the URL and token, Ctrl-C stops)
    with running_server() as server:
        print(f"{server.url} token={server.token}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(1)
