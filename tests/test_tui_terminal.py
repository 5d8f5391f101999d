"""Smoke tests of `easl tui` as a user runs it: a real terminal (tmux, 80 x 24), keys typed, the screen read back,
and the project file checked afterwards. Also the command's argument errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from easl_toolkit.core.store import Project
from tests.tmux_harness import TmuxSession
from tests.tui_helpers import make_project

EASL = [sys.executable, "-m", "easl_toolkit.tui.cli"]
ROOT = Path(__file__).resolve().parents[1]


def test_annotate_one_hit_in_a_real_terminal(tmp_path):
    project = make_project(tmp_path / "smoke.easl", n_items=9, hit_size=3)
    config = tmp_path / "config.json"
    with TmuxSession(
        [*EASL, "tui", str(project)],
        width=80,
        height=24,
        cwd=str(ROOT),
        env={"EASL_TUI_CONFIG": str(config), "PYTHONPATH": str(ROOT)},
    ) as term:
        term.wait_for("Your name as an annotator", timeout=60)
        term.send_keys("tester", literal=True)
        term.send_keys("Enter")
        screen = term.wait_for("HIT it0-", timeout=30)
        assert "annotator tester" in screen
        assert "Submit" in screen and "Undo" in screen  # key bindings in the footer
        for score in ("15", "50", "85"):
            term.send_keys(score, literal=True)
            term.send_keys("Tab")
        term.wait_for("  85", timeout=10)
        term.send_keys("Enter")
        screen = term.wait_for("1 of 3 HITs done", timeout=30)
        assert "1 this session" in screen
        term.send_keys("C-q")
        term.wait_for("[exited 0]", timeout=30)
    with Project.open(project, readonly=True) as p:
        ratings = p.ratings()
        assert sorted(ratings["score"].tolist()) == [15.0, 50.0, 85.0]
        assert set(ratings["annotator"]) == {"tester"}
        assert ratings["hit_id"].nunique() == 1
        assert p.verify()["ok"]
    assert '"annotator": "tester"' in config.read_text()


def test_tui_argument_errors_exit_1_with_one_sentence(tmp_path):
    for args, message in (
        (["tui", str(tmp_path / "missing.easl")], "no such file"),
        (["tui", "--monitor"], "name the project file"),
        (["tui", str(make_project(tmp_path / "a.easl")), "--poll", "0"], "positive"),
        (["tui", str(make_project(tmp_path / "b.easl")), "--annotator", "  "], "empty"),
    ):
        done = subprocess.run([*EASL, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 1, (args, done.stderr)
        assert message in done.stderr and done.stderr.startswith("error: ")
    not_a_project = tmp_path / "junk.easl"
    not_a_project.write_text("hello")
    done = subprocess.run([*EASL, "tui", str(not_a_project)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1 and "not an easl project" in done.stderr
    helped = subprocess.run([*EASL, "tui", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert helped.returncode == 0 and "--monitor" in helped.stdout and "Annotate" in helped.stdout


def test_make_runs_demo_opens_the_real_campaign_on_the_monitor_within_30_seconds(tmp_path):
    """What `make run` does after its setup: `easl demo --project demo.easl`, then `easl tui demo.easl --monitor`,
    in a real terminal; the Monitor shows the replayed campaign of real annotators within 30 s of the start."""
    import time

    started = time.monotonic()
    project = tmp_path / "demo.easl"
    demo = subprocess.run(
        [*EASL, "demo", "--project", str(project), "--output", str(tmp_path / "demo-export.csv")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    with TmuxSession(
        [*EASL, "tui", str(project), "--monitor"], width=120, height=40, cwd=str(ROOT), env={"PYTHONPATH": str(ROOT)}
    ) as term:
        screen = term.wait_for("expected Spearman", timeout=60)
        elapsed = time.monotonic() - started
        assert "scores 1–5" in screen and "320 items" in screen
        assert "annotator" in screen and " s1" in screen  # the real subjects' ids in the annotator table
        term.send_keys("C-q")
        term.wait_for("[exited 0]", timeout=30)
    assert elapsed < 30, f"the Monitor showed the demo campaign {elapsed:.1f} s after the start"
