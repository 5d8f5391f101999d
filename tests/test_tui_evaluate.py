"""Evaluate screen and the file picker, driven by Textual's pilot on a real data file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from textual.widgets import DataTable, Input, Select, SelectionList

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.tui.app import EaslApp
from easl_toolkit.tui.screens.annotate import AnnotateScreen
from easl_toolkit.tui.screens.evaluate import EvaluateScreen
from easl_toolkit.tui.screens.evaluate_data import format_value, parse_count, parse_scale, run_evaluation
from easl_toolkit.tui.screens.file_picker import FilePickerScreen
from tests.tui_helpers import isolate_settings, make_project, run_async, settle, wait_until


@pytest.fixture
def scores_csv(tmp_path, monkeypatch):
    """300 responses on a 1-6 scale: two human raters (the second missing for a third), one system, a group."""
    isolate_settings(monkeypatch, tmp_path)
    rng = np.random.default_rng(11)
    n = 300
    truth = rng.uniform(1, 6, n)
    h1 = np.clip(np.round(truth + rng.normal(0, 0.6, n)), 1, 6)
    h2 = np.clip(np.round(truth + rng.normal(0, 0.6, n)), 1, 6)
    h2[::3] = np.nan
    system = truth + rng.normal(0, 0.5, n)
    frame = pd.DataFrame(
        {
            "id": [f"r{k}" for k in range(n)],
            "h1": h1,
            "h2": h2,
            "system": system.round(3),
            "L1": rng.choice(["a", "b", "c"], n),
        }
    )
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def test_field_parsers():
    assert parse_scale("") is None
    assert parse_scale("1 6") == (1.0, 6.0)
    assert parse_scale("0, 100") == (0.0, 100.0)
    for bad in ("6 1", "x y", "1 2 3"):
        with pytest.raises(EaslError):
            parse_scale(bad)
    assert parse_count("", "n") == 0 and parse_count(" 50 ", "n") == 50
    with pytest.raises(EaslError):
        parse_count("-1", "n")
    assert format_value(None) == "-"
    assert format_value(0.12345, [0.1, 0.2]) == "0.123 [0.100, 0.200]"
    assert format_value(3000) == "3,000"
    assert format_value(45.0) == "45.000"


def test_run_evaluation_refuses_bad_column_choices(scores_csv):
    with pytest.raises(EaslError, match="human"):
        run_evaluation(scores_csv, [], ["system"], None, None, 0)
    with pytest.raises(EaslError, match="both"):
        run_evaluation(scores_csv, ["h1", "system"], ["system"], None, None, 0)
    with pytest.raises(EaslError, match="non-numeric"):
        run_evaluation(scores_csv, ["h1"], ["L1"], None, None, 0)


@run_async
async def test_evaluate_a_file_shows_metrics_with_intervals_and_saves_the_report(scores_csv, tmp_path):
    app = EaslApp(None, start="evaluate", data_file=scores_csv)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, EvaluateScreen) and app.screen.path is not None,
            what="the file's columns",
        )
        screen: EvaluateScreen = app.screen
        assert screen.columns == ["id", "h1", "h2", "system", "L1"]
        # the human and system columns are guessed from the names; the user can change them
        assert screen.query_one("#human-columns", SelectionList).selected == ["h1", "h2"]
        assert screen.query_one("#system-columns", SelectionList).selected == ["system"]
        screen.query_one("#group-column", Select).value = "L1"
        screen.query_one("#scale", Input).value = "1 6"
        screen.query_one("#bootstrap", Input).value = "50"
        await pilot.press("ctrl+e")
        await settle(app, pilot, timeout=60)
        await wait_until(pilot, lambda: screen.evaluation is not None, timeout=60, what="the evaluation")
        ev = screen.evaluation
        expected = run_evaluation(scores_csv, ["h1", "h2"], ["system"], "L1", (1.0, 6.0), 50)
        got, want = ev.systems["system"].observed["corr"], expected.systems["system"].observed["corr"]
        assert (got.value, got.ci) == (want.value, want.ci)
        assert "L1" in ev.subgroups
        table = screen.query_one("#results-table", DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert labels == ["metric", "system", "human-human"]
        rows = {table.get_row_at(k)[0]: table.get_row_at(k) for k in range(table.row_count)}
        corr_figure = ev.systems["system"].observed["corr"]
        corr = corr_figure.value
        assert rows["corr"][1] == format_value(corr, corr_figure.ci)
        assert "[" in rows["corr"][1]  # with its bootstrap interval
        prmse = ev.systems["system"].true_score["prmse"].value
        assert rows["prmse"][1].startswith(f"{prmse:.3f}")
        notes = str(screen.query_one("#eval-notes").render())
        assert "300 responses evaluated" in notes
        prmse_notes = [n for n in ev.notes if "PRMSE" in n]  # too few double-scored responses
        assert prmse_notes and all(n in notes for n in prmse_notes)

        report = tmp_path / "report"
        screen.query_one("#report-dir", Input).value = str(report)
        await pilot.press("ctrl+s")
        await settle(app, pilot, timeout=60)
        await wait_until(pilot, lambda: bool(screen.saved), timeout=60, what="the report")
    saved = json.loads((report / "evaluation.json").read_text())
    assert saved["systems"]["system"]["observed"]["corr"] == pytest.approx(corr, abs=1e-12)
    assert (report / "report.md").exists() and (report / "eval.csv").exists()


@run_async
async def test_without_a_project_the_file_picker_opens_a_data_file_then_a_project(scores_csv, tmp_path):
    project = make_project(tmp_path / "picked.easl")
    app = EaslApp(None, annotator="erin")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EvaluateScreen), what="Evaluate")
        await pilot.press("f2")  # no project yet: stays on Evaluate
        assert isinstance(app.screen, EvaluateScreen)
        await pilot.press("f6")
        await wait_until(pilot, lambda: isinstance(app.screen, FilePickerScreen), what="the picker")
        await pilot.press(*list(str(tmp_path / "nothing.csv")), "enter")
        assert isinstance(app.screen, FilePickerScreen)  # a missing file is refused with a message
        picker = app.screen
        picker.query_one("#picker-path", Input).value = str(scores_csv)
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, EvaluateScreen) and app.screen.path == scores_csv,
            what="the data file in Evaluate",
        )
        await pilot.press("f6")
        await wait_until(pilot, lambda: isinstance(app.screen, FilePickerScreen), what="the picker")
        app.screen.query_one("#picker-path", Input).value = str(project)
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, AnnotateScreen) and app.screen.view is not None,
            what="Annotate on the picked project",
        )
        assert app.project_path == project
        assert app.title == "easl · picked.easl"


def test_results_table_shows_no_system_mean_for_the_second_human():
    import numpy as np

    import easl_toolkit.core.metrics as M
    from easl_toolkit.tui.screens.evaluate_data import result_rows

    h = np.array([[1, 2], [2, 2], [3, 3], [4, 3], [2, 1]], dtype=float)
    ev = M.evaluate(h, {"m": np.array([1.2, 2.1, 2.9, 3.8, 2.0])}, options=EvaluationOptions(scale=M.Scale(1, 4)))
    columns, rows = result_rows(ev)
    by_key = {r[0]: r for r in rows}
    hh = columns.index("human-human")
    assert by_key["sys_mean"][hh] == "" and by_key["sys_sd"][hh] == "" and by_key["h_mean"][hh] != ""
