"""Every command output shown in the README and the documentation is what the command prints.

An output is shown as a fenced ``text`` block directly under a marker that holds the commands which print it::

    <!-- output: easl demo -->
    ```text
    ...what it prints...
    ```

The marker may span lines (one shell command a line). The test runs the commands with bash in a fresh directory
holding a copy of ``examples/``, the ``easl`` of this environment first on the path and a 120-column terminal,
and compares standard output and standard error, together, with the block: line by line, trailing spaces,
durations (``5.1 s``) and timestamps aside. A block that differs fails with the difference. After a deliberate
change of an output, ``python tests/test_docs_outputs.py --write`` rewrites every block from the commands.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^<!-- output:(?P<commands>.*?)-->\n```text\n(?P<body>.*?)^```$", re.M | re.S)
#: A duration or a time printed by a command: what may differ between two runs.
DURATION = re.compile(r"\b\d+(?:\.\d+)? s\b")
TIMESTAMP = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")
WIDTH = "120"


def shown_outputs(page: Path) -> list[tuple[str, str, tuple[int, int]]]:
    """``(commands, block, span of the block's body)`` of every marked output of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(m["commands"].strip(), m["body"], m.span("body")) for m in BLOCK.finditer(text)]


def normalise(text: str) -> list[str]:
    """The lines of ``text`` with durations and trailing spaces aside, and no trailing blank lines."""
    lines = [TIMESTAMP.sub("TIME", DURATION.sub("N s", line)).rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def run_commands(commands: str) -> str:
    """What ``commands`` print (standard output, then standard error) in a fresh directory (module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(REPO / "examples", Path(tmp) / "examples")
        env = dict(
            os.environ,
            COLUMNS=WIDTH,
            LINES="50",
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            NO_COLOR="1",
            TERM="dumb",
        )
        done = subprocess.run(
            ["bash", "-c", commands], cwd=tmp, env=env, capture_output=True, text=True, timeout=300, check=False
        )
    return done.stdout + done.stderr


def difference(shown: str, printed: str) -> list[str]:
    """The unified difference between a shown output and a printed one (module docstring); empty when they agree."""
    return list(difflib.unified_diff(normalise(shown), normalise(printed), "shown", "printed", lineterm=""))


def test_the_comparison_ignores_durations_and_trailing_spaces_but_nothing_else():
    assert difference("report: x  (5.1 s)  \n\n", "report: x  (61.0 s)") == []
    assert difference("2026-11-28T20:15:03.495988+00:00  [x]", "2026-12-01T08:00:00.1+00:00  [x]") == []
    assert difference("aware after 4.85 scores", "aware after 3.99 scores")
    assert difference("a\nb", "a")


def test_the_documentation_shows_command_outputs_under_markers():
    pages = {page.relative_to(REPO).as_posix(): len(shown_outputs(page)) for page in PAGES}
    assert pages["docs/guides/cli.md"] >= 4  # easl demo, an ingest refused, an items file refused, the rejects


CASES = [
    pytest.param(commands, body, id=f"{page.relative_to(REPO).as_posix()}:{commands.splitlines()[0][:40]}")
    for page in PAGES
    for commands, body, _ in shown_outputs(page)
]


@pytest.mark.parametrize(("commands", "shown"), CASES)
def test_every_shown_output_is_what_the_command_prints(commands, shown):
    diff = difference(shown, run_commands(commands))
    assert diff == [], "\n".join(diff)


def write() -> None:
    """Rewrite every marked block from its commands (after a deliberate change of an output)."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for commands, _, (start, end) in reversed(shown_outputs(page)):
            printed = "\n".join(line.rstrip() for line in run_commands(commands).rstrip().splitlines())
            text = text[:start] + printed + "\n" + text[end:]
        page.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_docs_outputs.py --write")
    write()
