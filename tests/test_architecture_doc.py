"""``docs/ARCHITECTURE.md`` describes the code as it is: it names every product module, and every module it names
exists; every product module says in its docstring what it owns."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "easl_plugin", "tui", "label_config")


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def test_architecture_names_every_product_module() -> None:
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    unnamed = [str(p.relative_to(REPO)) for p in _modules() if p.name != "__init__.py" and p.name not in text]
    assert not unnamed, f"docs/ARCHITECTURE.md does not describe: {unnamed}"


def test_every_module_the_architecture_names_exists() -> None:
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    names = {p.name for p in _modules()} | {p.name for p in (REPO / "tests").glob("*.py")}
    names |= {p.name for p in (REPO / "bench").glob("*.py")} | {p.name for p in (REPO / "docs").rglob("*.py")}
    gone = sorted({Path(n).name for n in re.findall(r"[\w/.]+\.py\b", text)} - names)
    assert not gone, f"docs/ARCHITECTURE.md names modules that do not exist: {gone}"


def test_every_product_module_has_a_docstring_saying_what_it_owns() -> None:
    bare = [
        str(p.relative_to(REPO))
        for p in _modules()
        if len(ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or "") < 40
    ]
    assert not bare, f"modules without a docstring of what they own: {bare}"
