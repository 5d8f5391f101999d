"""The distribution installs one import package, ``easl_toolkit``, whose parts are the repository's top-level folders
(``pyproject.toml``, ``[tool.setuptools]``): every folder with an ``__init__.py`` is listed, and the wheel holds no
other top-level name."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("core", "easl_plugin", "tui", "label_config")


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_folder_is_listed_under_the_one_namespace() -> None:
    listed = set(_config()["packages"])
    folders = {
        "easl_toolkit." + ".".join(p.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for p in (ROOT / folder).rglob("__init__.py")
    }
    assert folders <= listed, f"add to pyproject.toml [tool.setuptools] packages: {sorted(folders - listed)}"
    assert all(name.startswith("easl_toolkit.") for name in listed)
    assert _config()["package-dir"] == {f"easl_toolkit.{f}": f for f in FOLDERS}


def test_the_wheel_installs_exactly_one_top_level_package(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("easl_toolkit-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        top = {name.split("/")[0] for name in zf.namelist() if not name.split("/")[0].endswith(".dist-info")}
        names = zf.namelist()
    assert top == {"easl_toolkit"}
    assert "easl_toolkit/core/data/weights.csv" in names and "easl_toolkit/tui/styles/app.tcss" in names
