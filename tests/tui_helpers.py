"""Shared set-up of the terminal-app tests: small real project files and a private settings file."""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path

import numpy as np
import pandas as pd

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project

WORDS = [
    "a grain of sand",
    "a feather",
    "a paper clip",
    "a mouse",
    "an apple",
    "a shoe",
    "a laptop",
    "a bicycle",
    "a sofa",
    "a piano",
    "a car",
    "an elephant",
    "a bus",
    "a whale",
    "a ship",
    "a house",
]


def make_project(path: Path, n_items: int = 12, hit_size: int = 3, seed: int = 0) -> Path:
    """Create a project of ``n_items`` items (ids ``i00``...) with HITs of ``hit_size``; returns ``path``."""
    items = pd.DataFrame(
        {
            "item_id": [f"i{k:02d}" for k in range(n_items)],
            "text": [WORDS[k % len(WORDS)] + ("" if k < len(WORDS) else f" #{k}") for k in range(n_items)],
        }
    )
    Project.create(path, items, Hyper(hit_size=hit_size, seed=seed)).close()
    return path


def annotate_iteration(path: Path, rng: np.random.Generator, annotator: str = "sim") -> int:
    """Score every open HIT of the current iteration (starting the next one first if none is open) with
    random scores; one ``Project.ingest`` per HIT. Returns the number of HITs scored."""
    with Project.open(path) as project:
        hits = project.next_hits()
        for hit in hits:
            rows = [
                {
                    "item_id": it["item_id"],
                    "score": float(rng.integers(0, 101)),
                    "hit_id": hit["hit_id"],
                    "annotator": annotator,
                }
                for it in hit["items"]
            ]
            project.ingest(rows, source="test")
    return len(hits)


def isolate_settings(monkeypatch, tmp_path: Path) -> Path:
    """Point the app's settings file at ``tmp_path`` (no remembered annotator unless a test writes one)."""
    config = tmp_path / "config" / "tui.json"
    monkeypatch.setenv("EASL_TUI_CONFIG", str(config))
    return config


#: Worker groups of the app's one-off jobs (the monitor's poller and the directory tree's loader run for ever).
ONE_OFF_GROUPS = {"annotate", "export", "evaluate", "evaluate-load", "evaluate-save"}


async def settle(app, pilot, timeout: float = 10.0) -> None:
    """Wait until the app's one-off workers are done and the screen has processed the resulting messages."""
    deadline = time.monotonic() + timeout
    while True:
        await pilot.pause()
        busy = [w for w in app.workers if w.is_running and w.group in ONE_OFF_GROUPS]
        if not busy:
            await pilot.pause()
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"workers still running after {timeout} s: {busy}")
        await asyncio.sleep(0.01)


async def wait_until(pilot, predicate, timeout: float = 15.0, what: str = "condition") -> None:
    """Pause the pilot until ``predicate()`` is true (AssertionError after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def run_async(fn):
    """Run an ``async def`` test with ``asyncio.run`` (fixtures are passed through)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper
