"""How often a run of ``easl ingest`` returns to a module it had left: a runtime trace of the README's example.

The trace records, at every call and return of a function of the product's own modules (``core``, ``tui``,
``easl_plugin``, ``label_config``), the module the interpreter is in; consecutive events in one module are one visit.
A *return* is a visit to a module that was visited before and left since. Fewer returns mean a command reads
top-down: each module does its part and hands on. Run: ``.venv/bin/python bench/trace_ingest.py`` (a second),
which prints the modules entered and the returns.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PRODUCT = ("core", "tui", "easl_plugin", "label_config")


def _module(frame) -> str | None:  # type: ignore[no-untyped-def]
    name = frame.f_globals.get("__name__", "")
    top = name.split(".")[0]
    return name if top in PRODUCT or top == "easl_toolkit" else None


def trace(argv: list[str]) -> list[str]:
    """The modules visited by ``easl ARGV`` (consecutive events in one module count once)."""
    from easl_toolkit.tui.cli import main

    visits: list[str] = []

    def profile(frame, event, arg):  # type: ignore[no-untyped-def]
        if event not in ("call", "return"):
            return
        module = _module(frame if event == "call" else (frame.f_back or frame))
        if module is not None and (not visits or visits[-1] != module):
            visits.append(module)

    sys.setprofile(profile)
    try:
        main(argv)
    finally:
        sys.setprofile(None)
    return visits


def returns(visits: list[str]) -> int:
    """Visits to a module seen before (and left since)."""
    seen: set[str] = set()
    count = 0
    for module in visits:
        count += module in seen
        seen.add(module)
    return count


def main() -> int:
    from easl_toolkit.tui.cli import main as easl

    examples = os.path.join(ROOT, "examples")
    with tempfile.TemporaryDirectory() as tmp:
        project = os.path.join(tmp, "formality.easl")
        easl(["init", project, "--items", os.path.join(examples, "formality.csv")])
        easl(["next", project, "--output", os.path.join(tmp, "hits.csv")])
        scores = os.path.join(tmp, "scores.csv")
        shutil.copy(os.path.join(examples, "formality-scores.csv"), scores)
        visits = trace(["ingest", project, scores])
    print(f"easl ingest: {len(set(visits))} modules entered, {len(visits)} visits, {returns(visits)} returns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
