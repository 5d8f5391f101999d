"""Monitor screen and its data layer: live updates from another process, history, the virtualised table."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from easl_toolkit.core.store import Project
from easl_toolkit.tui.app import EaslApp
from easl_toolkit.tui.screens.monitor import MonitorScreen
from easl_toolkit.tui.screens.monitor_data import (
    MonitorSource,
    SummaryCache,
    centred_ranks,
    spearman_from_ranks,
    spearman_rho,
)
from easl_toolkit.tui.widgets.item_table import ItemColumns, ItemTable, sort_order
from tests.tui_helpers import annotate_iteration, run_async, wait_until


@pytest.fixture
def project(make_tui_project):
    return make_tui_project("m.easl", n_items=15)


def test_spearman_rho_matches_scipy_and_is_nan_without_a_ranking():
    rng = np.random.default_rng(3)
    a = rng.normal(size=200)
    b = a + rng.normal(size=200)
    b[:20] = np.round(b[:20])  # some ties
    assert spearman_rho(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    assert np.isnan(spearman_rho(np.ones(5), np.arange(5.0)))
    assert np.isnan(spearman_rho(np.array([1.0]), np.array([2.0])))
    a[3] = np.nan
    assert spearman_from_ranks(centred_ranks(a), centred_ranks(b)) == pytest.approx(
        spearmanr(np.delete(a, 3), np.delete(b, 3)).statistic, abs=1e-12
    )


def test_summary_cache_equals_the_full_summary_after_updates():
    from easl_toolkit.core.models import Hyper, get_model

    for method in ("easl", "ra", "trueskill", "da"):
        model = get_model(Hyper(method=method))
        state = model.init_state(50)
        cache = SummaryCache()
        rng = np.random.default_rng(9)
        for step in range(3):
            items = rng.choice(50, size=10, replace=False)
            model.apply(state, items, rng.uniform(0, 1, 10), np.repeat(np.arange(2), 5))
            got = cache.summary(model, state)
            want = model.summary(state)
            for k, g, w in zip(want._fields, got, want, strict=True):
                np.testing.assert_array_equal(g, w, err_msg=f"{method} {k} step {step}")


def test_history_replays_completed_iterations(project):
    rng = np.random.default_rng(0)
    annotate_iteration(project, rng)  # iteration 0
    annotate_iteration(project, rng)  # iteration 1
    with Project.open(project) as p:
        p.next_hits()  # iteration 2 starts, nothing scored in it yet
        expected = p.estimates()
        var_unit = p.status()["mean_variance"]
    snap = MonitorSource(project).poll()
    h = snap.history
    assert h.iterations.tolist() == [0, 1, 2]
    assert np.isnan(h.rho[0])
    assert -1.0 <= h.rho[1] <= 1.0
    # the end of iteration 1 equals the live state (nothing new since), so the live rho is 1
    assert h.rho[2] == pytest.approx(1.0)
    assert h.mean_var[1] == pytest.approx(var_unit, rel=1e-12)
    assert h.mean_var[2] == pytest.approx(var_unit, rel=1e-12)
    assert h.mean_var[0] > h.mean_var[1]
    # the monitor's fast path gives exactly Project.estimates()
    assert snap.columns.item_id.tolist() == expected["item_id"].tolist()
    assert snap.columns.text.tolist() == expected["text"].tolist()
    for name in ("estimate", "ci_low", "ci_high", "variance", "n_annotations"):
        np.testing.assert_array_equal(getattr(snap.columns, name), expected[name].to_numpy())
    assert snap.hist_counts.sum() == 15
    # unchanged file: nothing is read
    assert MonitorSource(project).poll() is not None
    source = MonitorSource(project)
    source.poll()
    assert source.poll() is None


def test_sort_order_keys_and_directions():
    cols = ItemColumns(
        item_id=np.array(["a", "b", "c", "d"], dtype=object),
        estimate=np.array([10.0, 40.0, 20.0, np.nan]),
        ci_low=np.zeros(4),
        ci_high=np.ones(4),
        variance=np.array([5.0, 1.0, 5.0, 3.0]),
        n_annotations=np.array([2, 0, 1, 2]),
        text=np.array(["", "", "", ""], dtype=object),
    )
    assert sort_order(cols, "uncertainty", True).tolist() == [0, 2, 3, 1]  # stable ties, largest first
    assert sort_order(cols, "estimate", True).tolist() == [1, 2, 0, 3]  # NaN last
    assert sort_order(cols, "estimate", False).tolist() == [0, 2, 1, 3]  # NaN last both ways
    assert sort_order(cols, "count", False).tolist() == [1, 2, 0, 3]


@run_async
async def test_item_table_keys_sort_and_move_with_many_rows():
    from textual.app import App, ComposeResult

    n = 100_000
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "item_id": [f"x{k}" for k in range(n)],
            "estimate": rng.uniform(0, 100, n),
            "ci_low": np.zeros(n),
            "ci_high": np.full(n, 100.0),
            "variance": rng.uniform(0, 50, n),
            "n_annotations": rng.integers(0, 9, n),
            "text": ["t"] * n,
        }
    )
    columns = ItemColumns.from_frame(frame)

    class TableApp(App):
        def compose(self) -> ComposeResult:
            yield ItemTable()

    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(ItemTable)
        table.focus()
        table.set_data(columns)
        await pilot.pause()
        assert table.virtual_size.height == n + 1
        assert np.all(np.diff(columns.variance[table.order]) <= 0)
        await pilot.press("e")
        assert table.sort_key == "estimate" and table.descending
        assert np.all(np.diff(columns.estimate[table.order]) <= 0)
        await pilot.press("e")  # same key again: reversed
        assert not table.descending
        await pilot.press("c")
        assert np.all(np.diff(columns.n_annotations[table.order]) >= 0)
        await pilot.press("r")
        assert np.all(np.diff(columns.n_annotations[table.order]) <= 0)
        await pilot.press("end")
        assert table.cursor == n - 1
        assert table.scroll_offset.y == n + 1 - table.size.height
        await pilot.press("home", "down", "down", "pagedown")
        assert table.cursor == 2 + table.size.height - 2
        # only the visible rows are drawn: the line for the cursor row shows its item
        top = int(table.scroll_offset.y)
        line = table.render_line(table.cursor - top + 1).text
        assert str(table.current_item_id()) in line
        # the cursor keeps its item across a refresh with new data
        keep = table.current_item_id()
        table.set_data(ItemColumns.from_frame(frame.sample(frac=1.0, random_state=1)))
        assert table.current_item_id() == keep


@run_async
async def test_monitor_picks_up_observations_written_by_another_process(project, tmp_path):
    app = EaslApp(project, start="monitor", poll_interval=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, MonitorScreen) and app.screen.snapshot is not None,
            what="the first reading",
        )
        screen: MonitorScreen = app.screen
        assert screen.snapshot.status.n_observations == 0
        assert screen.query_one(ItemTable).row_count == 15

        with Project.open(project, readonly=True) as p:
            hit = p.open_hits()[0]
        annotations = tmp_path / "batch.csv"
        pd.DataFrame(
            {
                "item_id": [it["item_id"] for it in hit["items"]],
                "score": [80, 20, 55],
                "hit_id": hit["hit_id"],
                "annotator": "ls-user",
            }
        ).to_csv(annotations, index=False)
        done = subprocess.run(
            [sys.executable, "-m", "easl_toolkit.tui.cli", "ingest", str(project), str(annotations)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr

        await wait_until(pilot, lambda: screen.snapshot.status.n_observations == 3, what="the new annotations")
        assert "3 annotations" in str(screen.query_one("#stats").render())
        table = screen.query_one(ItemTable)
        await pilot.press("c", "r")  # most annotated first
        assert table.row_values(0)["n_annotations"] == 1
        assert table.row_values(0)["item_id"] in {it["item_id"] for it in hit["items"]}
        # keys still work while the poller runs
        await pilot.press("down")
        assert table.cursor == 1
