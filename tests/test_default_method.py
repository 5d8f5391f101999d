"""The method of a new project. ``easl init`` without --method makes an annotator-aware project (each annotator's
offset, slope and reliability, fitted from every live score with its annotator), which needs fewer annotations than
direct assessment on real human ratings. The paper's EASL stays the baseline, exactly as published: ``--method
easl`` makes it with the paper's settings, and the Python API's ``Hyper()`` is still the paper's method. A project
file records its method, so an existing project keeps its own whatever the default, and a file that names no
method (the oldest) reads as the paper's EASL."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3

import numpy as np

from easl_toolkit.core.models import METHODS, Hyper
from easl_toolkit.core.models.aware.alloc import UNIFORM_PASSES
from easl_toolkit.core.store import Project
from easl_toolkit.tui.cli import main
from easl_toolkit.tui.commands import init
from tests.store_helpers import answer


def test_init_without_method_creates_an_aware_project(tmp_path, items_csv, capsys):
    path = tmp_path / "new.easl"
    assert main(["init", str(path), "--items", str(items_csv)]) == 0
    out = capsys.readouterr().out
    assert f"method aware, 5 items per HIT, scores 0-100, {UNIFORM_PASSES} uniform passes;" in out
    with Project.open(path) as project:
        assert project.hyper.method == "aware" and project.hyper.uniform_passes == UNIFORM_PASSES == 2
        assert project.hyper.stop_at is None  # no stopping rule unless asked for
        # every other setting is the paper's: only the method differs from easl --method easl
        assert dataclasses.replace(project.hyper, method="easl") == Hyper()
        assert project.model.reads_live_log  # every score is fitted again with its annotator id
        project.ingest(answer(project.open_hits(), np.random.default_rng(1)), source="t")
        assert project.status().method == "aware"
        assert project.next_hits()
    assert main(["verify", str(path)]) == 0


def test_the_default_is_stated_once_and_in_the_help():
    assert init.DEFAULT_METHOD == "aware" and init.DEFAULT_METHOD in METHODS
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    init.register(sub)
    assert parser.parse_args(["init", "p.easl", "--items", "x.csv"]).method == init.DEFAULT_METHOD
    assert "(default: aware)" in " ".join(sub.choices["init"].format_help().split())


def test_method_easl_makes_the_papers_easl_with_the_papers_settings(tmp_path, items_csv, capsys):
    path = tmp_path / "easl.easl"
    assert main(["init", str(path), "--items", str(items_csv), "--method", "easl"]) == 0
    out = capsys.readouterr().out
    assert "method easl," in out and "uniform passes" not in out
    with Project.open(path) as project:
        assert project.hyper == Hyper()  # the paper's method with the paper's settings, as published
        assert {"alpha", "beta"} <= set(project.state())  # Beta posteriors
    assert Hyper().method == "easl"  # the Python API's default stays the paper's method


def test_a_project_keeps_the_method_it_was_made_with(tmp_path, items_csv, capsys):
    # the stored hyper-parameters name the method: a change of the default never changes an existing project
    for method in ("easl", "aware"):
        path = tmp_path / f"{method}.easl"
        assert main(["init", str(path), "--items", str(items_csv), "--method", method, "--seed", "3"]) == 0
        with sqlite3.connect(path) as conn:
            stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())["hyper"]
        assert json.loads(stored)["method"] == method
        capsys.readouterr()
        assert main(["status", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["method"] == method
        with Project.open(path) as project:  # reopened: the loop goes on with the same method
            project.ingest(answer(project.open_hits(), np.random.default_rng(2)), source="t")
            assert project.hyper.method == method and project.next_hits()
        assert main(["verify", str(path)]) == 0


def test_an_old_file_with_no_method_reads_as_easl():
    # the oldest project files name no method: they were made with the paper's method
    assert Hyper.from_json("{}").method == "easl"
    assert Hyper.from_json("{}") == Hyper()
