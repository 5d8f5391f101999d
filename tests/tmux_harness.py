"""Drive a program in a real terminal: tmux on a private server socket, keys in, screen text out.

Used by the terminal smoke test of ``easl tui``: ``TmuxSession`` starts a detached session of a given size running a
command, ``send_keys`` types, ``capture`` returns the visible screen as text, ``wait_for`` polls until a text
appears. Each session uses its own tmux server (``-L``), so tests never touch the user's tmux.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid


def ensure_tmux() -> str:
    """Path of the tmux binary; installs the Debian package when it is missing (the test machines run as root).

    Raises
    ------
    RuntimeError
        When tmux is missing and cannot be installed.
    """
    found = shutil.which("tmux")
    if found:
        return found
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (
        ["apt-get", "install", "-y", "-q", "tmux"],
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "tmux"],
    ):
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=600)
        found = shutil.which("tmux")
        if found:
            return found
    raise RuntimeError("tmux is not installed and `apt-get install tmux` failed; install tmux to run this test")


class TmuxSession:
    """A detached tmux session running ``command`` in a ``width`` x ``height`` terminal.

    Parameters
    ----------
    command : list of str
        The program and its arguments.
    width, height : int
    env : dict, optional
        Extra environment variables for the program.
    cwd : str, optional
    """

    def __init__(
        self, command: list[str], *, width: int = 80, height: int = 24, env: dict | None = None, cwd: str | None = None
    ) -> None:
        self.tmux = ensure_tmux()
        self.socket = f"easl-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.name = "easl"
        exports = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in (env or {}).items())
        inner = (
            f"cd {shlex.quote(cwd or os.getcwd())} && env TERM=xterm-256color {exports} "
            + " ".join(shlex.quote(c) for c in command)
            + "; echo '[exited '$?']'; sleep 600"
        )
        self._tmux("new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), "bash", "-c", inner)

    def _tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, timeout=30
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout

    def send_keys(self, *keys: str, literal: bool = False) -> None:
        """Send keys (tmux key names such as ``Tab``, ``Enter``, ``Left``; or text with ``literal``)."""
        if literal:
            self._tmux("send-keys", "-t", self.name, "-l", *keys)
        else:
            self._tmux("send-keys", "-t", self.name, *keys)

    def capture(self) -> str:
        """The visible screen as text (one line per terminal row)."""
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, text: str, timeout: float = 30.0, interval: float = 0.1) -> str:
        """Poll the screen until ``text`` appears; returns the screen.

        Raises
        ------
        TimeoutError
            With the last screen in the message.
        """
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if text in screen:
                return screen
            time.sleep(interval)
        raise TimeoutError(f"{text!r} did not appear within {timeout} s; the screen was:\n{screen}")

    def close(self) -> None:
        """Kill the session's tmux server (and the program in it)."""
        self._tmux("kill-server", check=False)

    def __enter__(self) -> TmuxSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
