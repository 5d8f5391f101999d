"""Annotate screen, driven by Textual's pilot on real project files: submit, undo, resume, the name prompt."""

from __future__ import annotations

import json

import numpy as np
import pytest

from easl_toolkit.core.store import Project
from easl_toolkit.tui.app import EaslApp
from easl_toolkit.tui.screens.annotate import AnnotateScreen
from easl_toolkit.tui.screens.annotate_session import AnnotationSession
from easl_toolkit.tui.screens.name_prompt import NamePrompt
from easl_toolkit.tui.settings import load_draft, remember_annotator, remembered_annotator
from easl_toolkit.tui.widgets.score_row import ScoreRow, typed_score
from tests.tui_helpers import annotate_iteration, run_async, settle, wait_until


async def _open_annotate(app, pilot) -> AnnotateScreen:
    await wait_until(
        pilot,
        lambda: isinstance(app.screen, AnnotateScreen) and app.screen.view is not None and len(app.screen.rows()) > 0,
        what="the first HIT",
    )
    await settle(app, pilot)
    return app.screen


async def _score_hit(pilot, scores: list[int]) -> None:
    """Type each score (digits) and Tab to the next item."""
    for score in scores:
        await pilot.press(*list(str(score)))
        await pilot.press("tab")


@pytest.fixture
def project(tui_project):
    return tui_project


def test_typed_score_appends_digits_within_the_range():
    assert typed_score("", "7", 0, 100) == ("7", 7.0)
    assert typed_score("7", "5", 0, 100) == ("75", 75.0)
    assert typed_score("10", "0", 0, 100) == ("100", 100.0)
    # a digit that would exceed the range starts a new number
    assert typed_score("75", "3", 0, 100) == ("3", 3.0)
    # below the minimum the score is clipped while typing continues
    assert typed_score("", "5", 10, 100) == ("5", 10.0)
    assert typed_score("5", "0", 10, 100) == ("50", 50.0)


@run_async
async def test_submit_writes_one_hit_through_ingest(project):
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        hit = screen.view.hit
        assert len(hit["items"]) == 3
        await _score_hit(pilot, [42, 7, 100])
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.session_count == 1
        assert screen.view.hit["hit_id"] != hit["hit_id"]
        assert "1 of 4 HITs done" in str(screen.query_one("#progress").render())
    with Project.open(project, readonly=True) as p:
        ratings = p.ratings()
        assert ratings["hit_id"].tolist() == [hit["hit_id"]] * 3
        assert ratings["item_id"].tolist() == [it["item_id"] for it in hit["items"]]
        assert ratings["score"].tolist() == [42.0, 7.0, 100.0]
        assert set(ratings["annotator"]) == {"alice"}
        assert ratings["annotation_id"].nunique() == 1 and ratings["annotation_id"].iloc[0].startswith("tui-")
        assert p.status()["n_hits_complete"] == 1
        assert p.verify()["ok"]


@run_async
async def test_enter_with_a_missing_score_submits_nothing(project):
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        await _score_hit(pilot, [10, 20])
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.session_count == 0
        # the item without a score becomes the current one
        assert screen.current == 2 and screen.rows()[2].is_current
        assert not screen.rows()[0].is_current
    with Project.open(project, readonly=True) as p:
        assert p.status()["n_observations"] == 0


@run_async
async def test_arrow_keys_adjust_the_current_score(project):
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        row: ScoreRow = screen.rows()[0]
        await pilot.press("right")  # first move starts in the middle of the range
        assert row.score == 50
        await pilot.press("right", "right", "up")
        assert row.score == 62
        await pilot.press("down", "down", "left")
        assert row.score == 41
        await pilot.press("end")
        assert row.score == 100
        await pilot.press("up")
        assert row.score == 100
        await pilot.press("home", "left")
        assert row.score == 0
        await pilot.press("3", "backspace")
        assert row.score is None
        await pilot.press("shift+tab")  # wraps to the last item
        assert screen.current == 2 and screen.rows()[2].is_current
        await pilot.press("tab", "tab")
        assert screen.current == 1


@run_async
async def test_a_burst_of_keys_lands_in_order(project):
    """Keys that arrive together (e.g. in one packet over SSH) are applied to the right items in order."""
    from textual import events

    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        for key in ["1", "5", "tab", "5", "0", "tab", "8", "5", "enter"]:
            app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
        await settle(app, pilot)
        await wait_until(pilot, lambda: screen.session_count == 1, what="the submission")
    with Project.open(project, readonly=True) as p:
        assert p.ratings()["score"].tolist() == [15.0, 50.0, 85.0]


@run_async
async def test_undo_retracts_the_last_submission_and_shows_it_again(project):
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        hit = screen.view.hit
        await _score_hit(pilot, [30, 60, 90])
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("u")
        await settle(app, pilot)
        assert screen.view.hit["hit_id"] == hit["hit_id"]
        assert [r.score for r in screen.rows()] == [30, 60, 90]
        assert screen.session_count == 0
    with Project.open(project, readonly=True) as p:
        status = p.status()
        assert status.n_observations == 0  # nothing live
        assert status.n_log_records == 6  # 3 scores + 3 retractions: a retraction, not a delete
        assert status.n_hits_complete == 0
        assert p.verify()["ok"]


@run_async
async def test_resume_after_quitting_continues_with_the_next_hit_and_can_undo(project):
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        first = screen.view.hit["hit_id"]
        await _score_hit(pilot, [11, 22, 33])
        await pilot.press("enter")
        await settle(app, pilot)
        second = screen.view.hit["hit_id"]
    assert second != first

    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        assert screen.view.hit["hit_id"] == second
        assert "1 of 4 HITs done" in str(screen.query_one("#progress").render())
        # undo finds the previous session's submission in the project file
        await pilot.press("u")
        await settle(app, pilot)
        assert screen.view.hit["hit_id"] == first
        assert [r.score for r in screen.rows()] == [11, 22, 33]
    with Project.open(project, readonly=True) as p:
        assert p.status()["n_observations"] == 0


@run_async
async def test_scores_typed_before_quitting_come_back(project):
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        hit_id = screen.view.hit["hit_id"]
        await _score_hit(pilot, [12, 34])
    assert load_draft(project, "alice", hit_id) == {
        it: s for it, s in zip([i["item_id"] for i in screen.view.hit["items"][:2]], [12.0, 34.0])
    }

    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        assert screen.view.hit["hit_id"] == hit_id
        assert [r.score for r in screen.rows()] == [12, 34, None]
        await pilot.press("tab", "tab", "5", "6", "enter")
        await settle(app, pilot)
        assert screen.session_count == 1
    assert load_draft(project, "alice", hit_id) == {}
    with Project.open(project, readonly=True) as p:
        assert p.ratings()["score"].tolist() == [12.0, 34.0, 56.0]


@run_async
async def test_last_hit_of_an_iteration_starts_the_next(project):
    rng = np.random.default_rng(1)
    with Project.open(project) as p:
        hits = p.open_hits()
        for hit in hits[1:]:  # leave one HIT of iteration 0 open
            p.ingest(
                [
                    {
                        "item_id": it["item_id"],
                        "score": float(rng.integers(0, 101)),
                        "hit_id": hit["hit_id"],
                        "annotator": "other",
                    }
                    for it in hit["items"]
                ],
                source="test",
            )
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        assert screen.view.iteration == 0
        await _score_hit(pilot, [5, 50, 95])
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.view.iteration == 1
        assert screen.view.hits_done == 0 and screen.view.hits_in_iteration == 4
    with Project.open(project, readonly=True) as p:
        assert p.iteration() == 1
        assert p.status().n_observations == 12


@run_async
async def test_name_is_asked_once_and_remembered(project, tmp_path):
    assert remembered_annotator() is None
    app = EaslApp(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, NamePrompt), what="the name prompt")
        await pilot.press("enter")  # empty: refused, the prompt stays
        assert isinstance(app.screen, NamePrompt)
        await pilot.press(*list("carol"), "enter")
        screen = await _open_annotate(app, pilot)
        assert app.annotator == "carol"
        assert "annotator carol" in str(screen.query_one("#progress").render())
    assert remembered_annotator() == "carol"
    assert json.loads((tmp_path / "config" / "tui.json").read_text())["annotator"] == "carol"

    app = EaslApp(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_annotate(app, pilot)
        assert app.annotator == "carol"
        assert not isinstance(app.screen, NamePrompt)


def test_session_submit_and_undo_without_the_screen(project):
    remember_annotator("dave")
    session = AnnotationSession(project, "dave")
    view = session.current()
    sub = session.submit(view.hit, {it["item_id"]: 40.0 for it in view.hit["items"]})
    assert session.last_submission().annotation_id == sub.annotation_id
    assert session.undo().annotation_id == sub.annotation_id
    assert session.undo() is None
    annotate_iteration(project, np.random.default_rng(0))
    with Project.open(project, readonly=True) as p:
        assert p.verify()["ok"]


@run_async
async def test_the_question_and_the_scale_labels_are_shown(project):
    with Project.open(project) as p:
        p.set_wording(question="How fluent is each text?", low_label="not fluent", high_label="perfect")
    app = EaslApp(project, annotator="alice")
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await _open_annotate(app, pilot)
        assert "How fluent is each text?" in str(screen.query_one("#question").render())
        assert "0 = not fluent ... 100 = perfect" in str(screen.query_one("#hit-title").render())


def test_annotate_help_follows_the_project_scale():
    from easl_toolkit.tui.screens.annotate import annotate_help

    small = annotate_help(1.0, 5.0)
    assert "−10" not in small and "75" not in small
    assert "score −1 / +1 (a tenth of the range, at least 1)" in small and "(e.g. `4` gives 4)" in small
    assert "lowest / highest score (1 / 5)" in small
    wide = annotate_help(0.0, 100.0)
    assert "score −10 / +10 (a tenth of the range)" in wide and "(e.g. `7` `5` gives 75)" in wide
