"""Export screen: estimates and raw ratings to CSV, JSONL and Parquet from a real project."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from textual.widgets import Checkbox, Input

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.store import Project
from easl_toolkit.core.tables import read_table
from easl_toolkit.tui.app import EaslApp
from easl_toolkit.tui.screens.export import ExportScreen, export_project, with_suffix
from tests.tui_helpers import run_async, settle, wait_until


@pytest.fixture
def project(make_tui_project):
    return make_tui_project("x.easl", annotated=1, annotation_seed=2)


def test_with_suffix():
    assert with_suffix("out/est.csv", ".jsonl") == "out/est.jsonl"
    assert with_suffix("est", ".parquet") == "est.parquet"
    assert with_suffix("  ", ".csv") == "  "


def test_export_project_writes_parquet_equal_to_the_project(project, tmp_path):
    result = export_project(project, tmp_path / "e.parquet", tmp_path / "r.parquet")
    with Project.open(project, readonly=True) as p:
        estimates, ratings = p.estimates(), p.ratings()
    got = pd.read_parquet(tmp_path / "e.parquet")
    np.testing.assert_allclose(got["estimate"].to_numpy(), estimates["estimate"].to_numpy())
    assert got["item_id"].tolist() == estimates["item_id"].tolist()
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == len(ratings) == result.n_ratings == 12
    with pytest.raises(EaslError, match="extension"):
        export_project(project, tmp_path / "e.xlsx")
    with pytest.raises(EaslError, match="differ"):
        export_project(project, tmp_path / "same.csv", tmp_path / "same.csv")


@run_async
async def test_export_screen_writes_jsonl_estimates_and_ratings(project, tmp_path):
    app = EaslApp(project, start="export")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen), what="Export")
        screen = app.screen
        assert screen.query_one("#estimates-path", Input).value == "x-estimates.csv"
        await pilot.click("#format-jsonl")
        assert screen.query_one("#estimates-path", Input).value == "x-estimates.jsonl"
        assert screen.query_one("#ratings-path", Input).value == "x-ratings.jsonl"
        screen.query_one("#estimates-path", Input).value = str(tmp_path / "est.jsonl")
        screen.query_one("#ratings-path", Input).value = str(tmp_path / "rat.jsonl")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        await wait_until(pilot, lambda: "Wrote" in str(screen.query_one("#export-result").render()), what="the export")
        # without the ratings box, only the estimates are written
        screen.query_one("#with-ratings", Checkbox).value = False
        screen.query_one("#estimates-path", Input).value = str(tmp_path / "only.csv")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        await wait_until(pilot, lambda: (tmp_path / "only.csv").exists(), what="the second export")
        assert "ratings" not in str(screen.query_one("#export-result").render())
    with Project.open(project, readonly=True) as p:
        estimates, ratings = p.estimates(), p.ratings()
    est = read_table(tmp_path / "est.jsonl").frame
    assert [str(v) for v in est["item_id"]] == estimates["item_id"].tolist()
    np.testing.assert_allclose(est["estimate"].astype(float).to_numpy(), estimates["estimate"].to_numpy())
    rat = read_table(tmp_path / "rat.jsonl").frame
    assert len(rat) == len(ratings) == 12
    assert set(rat.columns) >= {"item_id", "annotator", "score", "hit_id", "iteration", "annotation_id"}
    assert len(read_table(tmp_path / "only.csv").frame) == 12
