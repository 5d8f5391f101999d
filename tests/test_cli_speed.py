"""The CLI starts instantly: building the parser and ``--help`` load no heavy library.

Timing is measured by ``bench/bench_cli.py``; this test checks the cause instead (which modules get imported),
which does not depend on the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from easl_toolkit.tui.cli import COMMANDS

HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "matplotlib",
    "textual",
    "rich",
    "requests",
    "label_studio_sdk",
    "uvicorn",
    "starlette",
    "pyarrow",
    "plotext",
    "easl_toolkit.core.store",
    "easl_toolkit.core.models",
    "easl_toolkit.core.metrics",
    "easl_plugin",
)

PROBE = """
import json, sys
from easl_toolkit.tui.cli import build_parser
try:
    build_parser().parse_args(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules)))
"""


def _loaded(argv: list[str]) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize(
    "argv",
    [["--help"]]
    + [[c, "--help"] for c in COMMANDS]
    + [["simulate", e, "--help"] for e in ("prmse", "metrics", "easl")]
    + [["ls", s, "--help"] for s in ("setup", "status")],
)
def test_help_imports_no_heavy_module(argv):
    assert _heavy(_loaded(argv)) == [], f"easl {' '.join(argv)} imports heavy modules"


def test_init_choices_equal_the_engine_constants():
    from easl_toolkit.core.models import METHODS, PARTNER_POOLS
    from easl_toolkit.tui.commands import init

    assert init.METHODS == METHODS and init.PARTNER_POOLS == PARTNER_POOLS
