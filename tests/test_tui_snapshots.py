"""Snapshot tests of every screen's rendering in an 80 x 24 terminal (pytest-textual-snapshot, SVG files in
``tests/__snapshots__/test_tui_snapshots/``). After an intended change of the look, review the report and run
``pytest tests/test_tui_snapshots.py --snapshot-update``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from textual.widgets import Input

from easl_toolkit.core.store import Project
from easl_toolkit.tui.app import EaslApp
from easl_toolkit.tui.screens.annotate import AnnotateScreen
from easl_toolkit.tui.screens.evaluate import EvaluateScreen
from easl_toolkit.tui.screens.export import ExportScreen
from easl_toolkit.tui.screens.file_picker import FilePickerScreen
from easl_toolkit.tui.screens.help import HelpScreen
from easl_toolkit.tui.screens.monitor import MonitorScreen
from easl_toolkit.tui.screens.name_prompt import NamePrompt
from tests.tui_helpers import annotate_iteration, make_project, settle, wait_until

SIZE = (80, 24)


def _steady_inputs(app) -> None:
    """Input cursors blink on a timer; stop them so a screenshot does not depend on timing."""
    for screen in app.screen_stack:
        for field in screen.query(Input):
            field.cursor_blink = False


@pytest.fixture
def workdir(tmp_path, monkeypatch, tui_settings):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def snap_project(workdir):
    """16 items, HITs of 4, iteration 0 complete with seeded scores, iteration 1 started."""
    path = make_project(workdir / "snap.easl", n_items=16, hit_size=4, seed=3)
    annotate_iteration(path, np.random.default_rng(7))
    with Project.open(path) as p:
        p.next_hits()
    return path


async def _annotate_ready(pilot) -> None:
    app = pilot.app
    await wait_until(
        pilot, lambda: isinstance(app.screen, AnnotateScreen) and len(app.screen.rows()) > 0, what="the HIT"
    )
    await settle(app, pilot)


def test_annotate_screen(snap_compare, snap_project):
    async def run_before(pilot):
        await _annotate_ready(pilot)
        await pilot.press("7", "5", "tab", "4", "0", "right", "right", "tab", "end", "tab")

    assert snap_compare(EaslApp(snap_project, annotator="snap"), terminal_size=SIZE, run_before=run_before)


def test_annotate_help(snap_compare, snap_project):
    async def run_before(pilot):
        await _annotate_ready(pilot)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), what="help")

    assert snap_compare(EaslApp(snap_project, annotator="snap"), terminal_size=SIZE, run_before=run_before)


def test_name_prompt(snap_compare, snap_project):
    async def run_before(pilot):
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, NamePrompt), what="the prompt")
        await pilot.press(*list("Ann"))
        _steady_inputs(pilot.app)

    assert snap_compare(EaslApp(snap_project), terminal_size=SIZE, run_before=run_before)


def test_monitor_screen(snap_compare, snap_project):
    async def run_before(pilot):
        app = pilot.app
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, MonitorScreen) and app.screen.snapshot is not None,
            what="the first reading",
        )
        await pilot.press("down", "down")

    app = EaslApp(snap_project, start="monitor", poll_interval=0.2)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_export_screen(snap_compare, snap_project):
    async def run_before(pilot):
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ExportScreen), what="Export")
        await pilot.click("#format-parquet")
        _steady_inputs(pilot.app)

    assert snap_compare(EaslApp(snap_project, start="export"), terminal_size=SIZE, run_before=run_before)


@pytest.fixture
def snap_scores(workdir):
    rng = np.random.default_rng(4)
    n = 120
    truth = rng.uniform(1, 6, n)
    frame = pd.DataFrame(
        {
            "h1": np.clip(np.round(truth + rng.normal(0, 0.7, n)), 1, 6),
            "h2": np.clip(np.round(truth + rng.normal(0, 0.7, n)), 1, 6),
            "system": (truth + rng.normal(0, 0.6, n)).round(2),
        }
    )
    path = workdir / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def test_evaluate_columns(snap_compare, snap_scores):
    async def run_before(pilot):
        app = pilot.app
        await wait_until(
            pilot, lambda: isinstance(app.screen, EvaluateScreen) and app.screen.path is not None, what="the columns"
        )
        _steady_inputs(app)

    app = EaslApp(None, start="evaluate", data_file=snap_scores)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_evaluate_results(snap_compare, snap_scores):
    async def run_before(pilot):
        app = pilot.app
        await wait_until(
            pilot, lambda: isinstance(app.screen, EvaluateScreen) and app.screen.path is not None, what="the columns"
        )
        app.screen.query_one("#bootstrap", Input).value = "20"
        await pilot.press("ctrl+e")
        await wait_until(pilot, lambda: app.screen.evaluation is not None, timeout=60, what="the evaluation")
        await settle(app, pilot)
        _steady_inputs(app)

    app = EaslApp(None, start="evaluate", data_file=snap_scores)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_file_picker(snap_compare, snap_scores, workdir):
    make_project(workdir / "campaign.easl")

    async def run_before(pilot):
        app = pilot.app
        await wait_until(pilot, lambda: isinstance(app.screen, EvaluateScreen), what="Evaluate")
        await pilot.press("f6")
        await wait_until(pilot, lambda: isinstance(app.screen, FilePickerScreen), what="the picker")
        await pilot.pause(0.3)  # the directory tree loads in a worker
        await settle(app, pilot)
        _steady_inputs(app)

    assert snap_compare(EaslApp(None), terminal_size=SIZE, run_before=run_before)
