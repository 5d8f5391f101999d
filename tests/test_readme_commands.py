"""The commands of the README and of the getting-started page run as written, in order, on a fresh copy.

Every fenced block marked ``bash`` in ``README.md`` and ``docs/getting-started.md`` is run, in the order of the
page, as one shell session (``set -e``) in a copy of the repository: the install block creates a fresh ``.venv``
and installs the package from PyPI, then the examples run with that environment active. Blocks marked ``console``
are shown but not run here: ``make run`` and ``make test`` (what CI runs), and the Label Studio commands, which
need a server and an API token (the Label Studio tests cover them).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from easl_toolkit.core import __version__

REPO = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns(".venv", ".cache", ".git", "site", "*.easl*", "__pycache__", "*.egg-info", ".*_cache")


def _bash_blocks(page: Path) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.M | re.S)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("readme") / "easl-toolkit"
    shutil.copytree(REPO, copy, ignore=SKIP)
    return copy


def _run_page(checkout: Path, page: str) -> subprocess.CompletedProcess[str]:
    blocks = _bash_blocks(checkout / page)
    script = "set -euo pipefail\n" + "\n".join(blocks)
    return subprocess.run(["bash", "-c", script], cwd=checkout, capture_output=True, text=True, timeout=1200)


def test_the_readme_shows_runnable_commands_for_install_and_every_job() -> None:
    blocks = "\n".join(_bash_blocks(REPO / "README.md"))
    for command in ("pip install -e .", "easl init", "easl next", "easl ingest", "easl evaluate", "easl simulate"):
        assert command in blocks, command


def test_readme_and_getting_started_commands_run_as_written(checkout: Path) -> None:
    readme = _run_page(checkout, "README.md")
    assert readme.returncode == 0, readme.stderr[-3000:]
    assert readme.stdout.splitlines()[-1].startswith("report:")  # the last command, easl simulate prmse
    assert f"easl-toolkit {__version__}" in readme.stdout
    assert (checkout / "estimates.csv").read_text().count("\n") == 21  # a header and the 20 sentences
    assert (checkout / "essay-report" / "evaluation.json").exists()
    assert '"schema_version": 3' in (checkout / "essay-metrics.json").read_text()
    assert "x DA" in readme.stdout and (checkout / "replay-report" / "report.md").exists()

    started = _run_page(checkout, "docs/getting-started.md")
    assert started.returncode == 0, started.stderr[-3000:]
    assert "20 rows: 0 new, 20 duplicate" in started.stdout  # the second ingest of the same file changes nothing
    assert "ok: the cached state equals the replay of 20 live observations" in started.stdout
    assert (checkout / "first-estimates.csv").exists()


def test_every_relative_link_of_the_readme_leads_to_a_file_of_the_repository() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (REPO / "README.md").read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert local, "the README links into the documentation"
    assert [link for link in local if not (REPO / link).exists()] == []
