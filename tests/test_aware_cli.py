"""``--method aware`` through the product: init, the store's warm refits, retraction, verify, next with
uniform passes and the stopping rule, status (stop figures, annotator table), export (rank intervals, annotator
table), and streaming top-ups as the Label Studio worker uses them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.errors import HyperParameterError
from easl_toolkit.core.models import METHODS, Hyper, get_model
from easl_toolkit.core.store import Project
from easl_toolkit.tui.cli import main
from tests.store_helpers import make_items

N_ANNOTATORS = 6


def scores_for(hits: list[dict], rng: np.random.Generator, *, clicker: bool = True) -> pd.DataFrame:
    """One annotator per HIT: latent + offset + N(0, 0.08^2); annotator ``a5`` clicks at random (``clicker``)."""
    offsets = np.linspace(-0.1, 0.1, N_ANNOTATORS)
    rows = []
    for h in hits:
        a = int(rng.integers(N_ANNOTATORS))
        for item in h["items"]:
            s = float(item.get("latent", 0.5)) + offsets[a] + rng.normal(0, 0.08)
            if clicker and a == N_ANNOTATORS - 1:
                s = float(rng.random())
            rows.append(
                {
                    "hit_id": h["hit_id"],
                    "item_id": item["item_id"],
                    "annotator": f"a{a}",
                    "annotation_id": f"{h['hit_id']}-{item['item_id']}",
                    "score": round(float(np.clip(s, 0, 1)) * 100, 1),
                }
            )
    return pd.DataFrame(rows)


def run_rounds(project: Project, rounds: int, seed: int = 0) -> int:
    """Answer ``rounds`` iterations; returns how many were answered (fewer when the stopping rule ends it)."""
    rng = np.random.default_rng(seed)
    for r in range(rounds):
        hits = project.next_hits()
        if not hits:
            return r
        project.ingest(scores_for(hits, rng), source="test")
    return rounds


@pytest.fixture
def items_csv(tmp_path):
    path = tmp_path / "items.csv"
    make_items(30).rename(columns={"item_id": "id"}).to_csv(path, index=False)
    return path


def test_aware_is_a_method_and_the_paper_methods_are_unchanged():
    from easl_toolkit.tui.commands import init

    assert METHODS == ("easl", "ra", "trueskill", "da", "aware", "campaign")
    assert init.METHODS == METHODS
    # files of the paper's methods are written as before: no aware fields in their hyper JSON
    assert "uniform_passes" not in Hyper().to_json() and "stop_at" not in Hyper().to_json()
    h = Hyper(method="aware", stop_at=0.9, uniform_passes=2)
    assert Hyper.from_json(h.to_json()) == h
    with pytest.raises(HyperParameterError, match="stop_at"):
        Hyper(method="da", stop_at=0.9)
    with pytest.raises(HyperParameterError, match="stop_at"):
        Hyper(method="aware", stop_at=1.5)
    m = get_model(h)
    assert m.uniform_passes == 2 and m.reads_live_log


def test_uniform_passes_default_and_files_written_under_the_old_default():
    from easl_toolkit.core.models.aware.alloc import UNIFORM_PASSES
    from easl_toolkit.core.models.hyper import LEGACY_UNIFORM_PASSES

    # one default, in the model (simulations) and in the hyper-parameters (new projects)
    assert Hyper(method="aware").uniform_passes == UNIFORM_PASSES == 2
    # aware projects name their passes, so a later change of the default never changes an existing project
    assert json.loads(Hyper(method="aware").to_json())["uniform_passes"] == 2
    assert Hyper.from_json(Hyper(method="aware").to_json()).uniform_passes == 2
    # a file written when the default was 3 left the field out: it keeps its 3 passes
    assert Hyper.from_json('{"method": "aware"}').uniform_passes == LEGACY_UNIFORM_PASSES == 3
    # the paper's methods are written and read as before
    assert Hyper.from_json('{"method": "da"}') == Hyper(method="da")


def test_init_flags(tmp_path, items_csv, capsys):
    p = tmp_path / "a.easl"
    assert (
        main(
            [
                "init",
                str(p),
                "--items",
                str(items_csv),
                "--method",
                "aware",
                "--stop-at",
                "0.9",
                "--uniform-passes",
                "2",
            ]
        )
        == 0
    )
    assert "2 uniform passes, stop at expected Spearman 0.9" in capsys.readouterr().out
    with Project.open(p, readonly=True) as project:
        assert project.hyper.stop_at == 0.9 and project.hyper.uniform_passes == 2
    assert (
        main(["init", str(tmp_path / "b.easl"), "--items", str(items_csv), "--method", "easl", "--stop-at", "0.9"]) == 1
    )
    assert "--stop-at needs --method aware (the method is easl)" in capsys.readouterr().err
    assert (
        main(["init", str(tmp_path / "c.easl"), "--items", str(items_csv), "--method", "aware", "--stop-at", "2"]) == 1
    )
    assert "--stop-at 2" in capsys.readouterr().err
    assert not (tmp_path / "b.easl").exists() and not (tmp_path / "c.easl").exists()


def test_store_refits_warm_verifies_and_retracts(tmp_path):
    project = Project.create(tmp_path / "p.easl", make_items(30), Hyper(method="aware", seed=3))
    with project:
        assert run_rounds(project, 4) == 4
        # uniform passes first: after 3 iterations every item has 3 scores
        est = project.estimates()
        assert list(est.columns[:9]) == [
            "item_id",
            "estimate",
            "mean",
            "variance",
            "ci_low",
            "ci_high",
            "n_annotations",
            "rank_low",
            "rank_high",
        ]
        assert (est["rank_low"] <= est["rank_high"]).all() and est["rank_low"].min() >= 1
        assert est["rank_high"].max() <= 30
        assert np.corrcoef(est["estimate"], make_items(30)["latent"])[0, 1] > 0.9
        result = project.verify()
        assert result["ok"] and result["state_ok"], result
        # retraction = refit without the rows; verify still agrees
        ratings = project.ratings()
        gone = ratings["annotation_id"].iloc[:7].tolist()
        assert project.retract(gone, source="test") == 7
        assert int(project.estimates()["n_annotations"].sum()) == len(ratings) - 7
        assert project.verify()["ok"]
        # a rebuild (cold fit) also verifies
        assert project.rebuild()["ok"]
        table = project.annotator_table()
        assert list(table.columns[:5]) == ["annotator", "n_scores", "offset", "slope", "noise"]
        assert set(table["annotator"]) <= {f"a{k}" for k in range(N_ANNOTATORS)}
        assert int(table["n_scores"].sum()) == len(ratings) - 7


@pytest.mark.parametrize("passes", [None, 3])
def test_uniform_passes_come_first(tmp_path, passes):
    hyper = Hyper(method="aware", seed=1) if passes is None else Hyper(method="aware", seed=1, uniform_passes=passes)
    project = Project.create(tmp_path / "p.easl", make_items(30), hyper)
    with project:
        run_rounds(project, hyper.uniform_passes)
        counts = project.estimates()["n_annotations"].to_numpy()
        assert counts.min() == counts.max() == hyper.uniform_passes


def test_next_stops_at_target_and_status_says_why(tmp_path, items_csv, capsys):
    p = tmp_path / "s.easl"
    assert main(["init", str(p), "--items", str(items_csv), "--method", "aware", "--stop-at", "0.6"]) == 0
    with Project.open(p) as project:
        answered = run_rounds(project, 12)
    assert answered < 12  # the stopping rule ended the collection
    capsys.readouterr()
    assert main(["next", str(p)]) == 0
    out = capsys.readouterr()
    assert out.out == "" and "stopping rule is met" in out.err
    assert main(["status", str(p), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    stop = status["stop"]
    assert stop["target"] == 0.6 and stop["reached"] is True and stop["expected_spearman"] >= 0.6
    assert "reaches the target" in stop["reason"]
    assert main(["status", str(p)]) == 0
    assert "expected Spearman / stop target" in capsys.readouterr().out
    with Project.open(p) as project:
        assert project.top_up_hits(3) == 0  # streaming (Label Studio) issues none either


def test_status_and_export_annotators(tmp_path, items_csv, capsys):
    p = tmp_path / "a.easl"
    assert main(["init", str(p), "--items", str(items_csv), "--method", "aware"]) == 0
    with Project.open(p) as project:
        run_rounds(project, 4)
    capsys.readouterr()
    assert main(["status", str(p), "--json", "--annotators"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["stop"]["target"] is None and status["stop"]["reached"] is False
    ann = status["annotators"]
    assert isinstance(ann, list) and {
        "annotator",
        "n_scores",
        "offset",
        "slope",
        "noise",
        "agreement",
        "flag",
        "reason",
    } <= set(ann[0])
    assert main(["status", str(p), "--annotators"]) == 0
    assert "agreement" in capsys.readouterr().out
    for ext in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"ann.{ext}"
        assert main(["export", str(p), "--output", str(tmp_path / f"e.{ext}"), "--annotators", str(out)]) == 0
        assert out.exists()
    table = pd.read_csv(tmp_path / "ann.csv")
    assert len(table) == len(ann) and "flag" in table.columns
    est = pd.read_csv(tmp_path / "e.csv")
    assert {"rank_low", "rank_high"} <= set(est.columns)
    assert main(["verify", str(p)]) == 0


def test_annotators_refused_for_other_methods(tmp_path, items_csv, capsys):
    p = tmp_path / "d.easl"
    assert main(["init", str(p), "--items", str(items_csv), "--method", "da"]) == 0
    assert main(["status", str(p), "--annotators"]) == 1
    assert "needs an aware project" in capsys.readouterr().err
    assert main(["export", str(p), "--output", str(tmp_path / "e.csv"), "--annotators", str(tmp_path / "a.csv")]) == 1
    assert "needs an aware project" in capsys.readouterr().err
    est = Project.open(p, readonly=True).estimates()
    assert "rank_low" not in est.columns


def test_streaming_top_up_excludes_open_items(tmp_path):
    """The Label Studio worker's path: HITs added one at a time with the open items excluded."""
    project = Project.create(tmp_path / "p.easl", make_items(30), Hyper(method="aware", seed=2))
    with project:
        run_rounds(project, 1)
        assert project.top_up_hits(4) == 4
        hits = project.open_hits(every_iteration=True)
        items = [it["item_id"] for h in hits for it in h["items"]]
        assert len(items) == len(set(items)) == 20
        project.ingest(scores_for(hits, np.random.default_rng(5)), source="labelstudio")
        assert project.verify()["ok"]


async def first_reading(app, pilot) -> None:
    """Wait until the monitor has shown its first reading of the project."""
    from easl_toolkit.tui.screens.monitor import MonitorScreen
    from tests.tui_helpers import wait_until

    await wait_until(
        pilot,
        lambda: isinstance(app.screen, MonitorScreen) and app.screen.snapshot is not None,
        what="the first reading",
    )


def test_monitor_shows_the_stop_figures_and_annotators(tmp_path, monkeypatch):
    from easl_toolkit.tui.app import EaslApp
    from easl_toolkit.tui.screens.monitor_data import MonitorSource
    from tests.tui_helpers import isolate_settings, run_async

    isolate_settings(monkeypatch, tmp_path)
    path = tmp_path / "m.easl"
    with Project.create(path, make_items(30), Hyper(method="aware", stop_at=0.9, seed=4)) as project:
        run_rounds(project, 3)
    snap = MonitorSource(path).poll(force=True)
    assert snap.aware.stop["target"] == 0.9 and snap.aware.n_annotators >= 1
    assert {"annotator", "n_scores", "offset", "slope", "noise", "agreement", "flag"} <= set(snap.aware.annotators)
    assert np.all(snap.columns.ci_low <= snap.columns.estimate)

    @run_async
    async def check() -> None:
        app = EaslApp(path, start="monitor", poll_interval=0.1)
        async with app.run_test(size=(100, 40)) as pilot:
            await first_reading(app, pilot)
            panel = app.screen.query_one("#aware")
            assert panel.display
            group = panel.content  # a rich Group: the stop line, then the annotator table
            head = str(group.renderables[0])
            assert "expected Spearman" in head and "stop target 0.900" in head  # the target, read-only
            assert group.renderables[1].row_count == min(snap.aware.n_annotators, 12)

    check()


def test_monitor_sets_and_removes_the_stop_target(tmp_path, monkeypatch):
    """Key t opens the stop-target dialog; a bad value is refused in the dialog, 0.8 is written to the project
    file (the next reading shows it), an empty field removes the target; a non-aware project says why."""
    from easl_toolkit.tui.app import EaslApp
    from easl_toolkit.tui.screens.monitor import MonitorScreen
    from easl_toolkit.tui.screens.stop_target import StopTargetPrompt
    from tests.tui_helpers import isolate_settings, run_async, wait_until

    isolate_settings(monkeypatch, tmp_path)
    path = tmp_path / "m.easl"
    with Project.create(path, make_items(30), Hyper(method="aware", stop_at=0.9, seed=4)) as project:
        run_rounds(project, 2)
    plain = tmp_path / "d.easl"
    Project.create(plain, make_items(10), Hyper(method="da")).close()

    def head(app: EaslApp) -> str:
        return str(app.screen.query_one("#aware").content.renderables[0])

    async def type_target(app: EaslApp, pilot, text: str) -> None:
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, StopTargetPrompt), what="the dialog")
        field = app.screen.query_one("#stop-target")
        field.value = text
        await pilot.press("enter")

    @run_async
    async def check() -> None:
        app = EaslApp(path, start="monitor", poll_interval=0.1)
        async with app.run_test(size=(100, 40)) as pilot:
            await first_reading(app, pilot)
            await type_target(app, pilot, "1.5")
            assert isinstance(app.screen, StopTargetPrompt)  # refused: the dialog stays, with the reason
            assert "outside (0, 1)" in str(app.screen.query_one("#stop-error").content)
            app.screen.query_one("#stop-target").value = "0.8"
            await pilot.press("enter")
            await wait_until(pilot, lambda: "stop target 0.800" in head(app), what="the new target")
            await type_target(app, pilot, "")
            await wait_until(pilot, lambda: "stop target none" in head(app), what="no target")
        with Project.open(path, readonly=True) as project:
            assert project.hyper.stop_at is None

        app = EaslApp(plain, start="monitor", poll_interval=0.1)
        async with app.run_test(size=(100, 40)) as pilot:
            await first_reading(app, pilot)
            await pilot.press("t")
            await pilot.pause()
            assert isinstance(app.screen, MonitorScreen)  # no dialog for a non-aware project
            assert any("needs the method aware" in str(n.message) for n in app._notifications)

    check()


def test_monitor_panel_hidden_for_other_methods(tmp_path):
    from easl_toolkit.tui.screens.monitor_data import MonitorSource

    path = tmp_path / "d.easl"
    Project.create(path, make_items(10), Hyper(method="da")).close()
    assert MonitorSource(path).poll(force=True).aware is None


def test_rows_without_an_annotator_are_one_anonymous_annotator(tmp_path):
    from easl_toolkit.tui.commands.status import annotator_records

    with Project.create(tmp_path / "p.easl", make_items(20), Hyper(method="aware")) as project:
        hits = project.next_hits()
        rows = [
            {
                "item_id": it["item_id"],
                "score": 50 + 10 * k,
                "hit_id": h["hit_id"],
                **({"annotator": "bob"} if k % 2 else {}),
            }
            for k, h in enumerate(hits)
            for it in h["items"]
        ]
        project.ingest(rows, source="test")
        result = project.verify()
        assert result["ok"] and result["max_abs_diff"] == 0.0  # cold refits: the cache equals the replay exactly
        table = project.annotator_table()
        assert table["annotator"].tolist() == [None, "bob"] and table["n_scores"].tolist() == [10, 10]
        assert annotator_records(table)[0]["annotator"] is None


def test_large_projects_refit_warm_and_verify_within_same_fit(tmp_path, monkeypatch):
    """Above COLD_REFIT_UPTO live scores the store warm-starts each refit; verify then compares a cold replay with
    the cache within the adapter's tolerance (model.same_fit) instead of bit for bit."""
    from easl_toolkit.core.models.aware import model as aware_model

    monkeypatch.setattr(aware_model, "COLD_REFIT_UPTO", 0)
    with Project.create(tmp_path / "w.easl", make_items(40), Hyper(method="aware", seed=6)) as project:
        rng = np.random.default_rng(6)
        project.ingest(scores_for(project.next_hits(), rng, clicker=False), source="test")
        for _ in range(3):  # a few scores at a time: each refit within WARM_GROWTH of the last, so warm
            rows = scores_for(project.next_hits(), rng, clicker=False)
            for part in np.array_split(np.arange(len(rows)), 5):
                project.ingest(rows.iloc[part], source="test")
        result = project.verify()
        with project.db.reading() as conn:
            replayed, _ = project.replay.replay_log(conn)
        assert not np.array_equal(replayed["mu"], project.replay.state()["mu"])  # a warm chain, not the cold fit
        assert result["ok"] and result["state_ok"], result
        assert "posterior sd" in result["state_tolerance"]
