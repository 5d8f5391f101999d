"""The method of a new project (issue 10, item 6): ``aware`` when no --method is given, in ``easl init`` and
``easl demo``; a project file records its method, so one made when the default was ``easl`` stays EASL."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from core.models import METHODS, Hyper
from core.models.aware_alloc import UNIFORM_PASSES
from core.store import Project
from tests.store_helpers import answer
from tui.cli import main
from tui.commands import demo, init


def test_init_without_method_creates_an_aware_project(tmp_path, items_csv, capsys):
    path = tmp_path / "new.easl"
    assert main(["init", str(path), "--items", str(items_csv), "--stop-at", "0.9"]) == 0
    out = capsys.readouterr().out
    assert f"method aware, 5 items per HIT, scores 0-100, {UNIFORM_PASSES} uniform passes, stop at" in out
    with Project.open(path) as project:
        assert project.hyper.method == "aware" and project.hyper.stop_at == 0.9
        assert project.hyper.uniform_passes == UNIFORM_PASSES
        project.ingest(answer(project.open_hits(), np.random.default_rng(1)), source="t")
        assert project.status().method == "aware"
    assert main(["verify", str(path)]) == 0


def test_the_paper_method_is_one_flag_away_and_unchanged(tmp_path, items_csv, capsys):
    path = tmp_path / "paper.easl"
    assert main(["init", str(path), "--items", str(items_csv), "--method", "easl"]) == 0
    assert "method easl," in capsys.readouterr().out
    with Project.open(path) as project:
        assert project.hyper == Hyper()  # exactly the hyper-parameters the old default wrote
        assert {"alpha", "beta"} <= set(project.state())  # the paper's Beta posteriors


def test_a_project_made_with_the_old_default_still_opens_as_easl(tmp_path, items_csv, capsys):
    # what `easl init` wrote when its default was easl: the stored hyper-parameters name the method
    path = tmp_path / "old.easl"
    assert main(["init", str(path), "--items", str(items_csv), "--method", "easl", "--seed", "3"]) == 0
    with sqlite3.connect(path) as conn:
        stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())["hyper"]
    assert json.loads(stored)["method"] == "easl"
    capsys.readouterr()
    assert main(["status", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "easl"
    with Project.open(path) as project:  # opened by the new code: still EASL, and the loop goes on as EASL
        project.ingest(answer(project.open_hits(), np.random.default_rng(2)), source="t")
        assert project.hyper.method == "easl" and project.next_hits()
        assert {"alpha", "beta"} <= set(project.state())
    assert main(["verify", str(path)]) == 0
    # a file with no method at all (older still) reads as the paper's method too
    assert Hyper.from_json("{}").method == "easl"


def test_front_ends_share_one_default_and_say_it():
    assert init.DEFAULT_METHOD == "aware" and init.DEFAULT_METHOD in METHODS
    parser = __import__("argparse").ArgumentParser()
    sub = parser.add_subparsers()
    init.register(sub)
    demo.register(sub)
    assert parser.parse_args(["init", "p.easl", "--items", "x.csv"]).method == "aware"
    assert parser.parse_args(["demo"]).method == "aware"
    assert parser.parse_args(["demo", "--method", "easl"]).method == "easl"
    text = sub.choices["init"].format_help()
    assert "(default: aware;" in " ".join(text.split())


@pytest.mark.parametrize("method", ["aware", "easl"])
def test_demo_runs_either_method(tmp_path, method, capsys):
    kept = tmp_path / "demo.easl"
    args = ["demo", "--project", str(kept), "--iterations", "1"] + (["--method", method] if method != "aware" else [])
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{method} on 109 items" in out and "verify: ok" in out
    with Project.open(kept, readonly=True) as project:
        assert project.hyper.method == method and project.iteration() == 1
