"""Durability of the commands that build or advance a project: ``easl init`` and ``easl next`` killed with SIGKILL
at any moment leave no project or a complete one, the iteration as it was or started whole, never a HIT file cut
short; what a killed command leaves behind is removed by the next run (real subprocesses, real SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.store import Project
from tests.store_helpers import dump

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_ITEMS = 150_000  #: enough for either command to run about a second
DELAYS_S = (0.0, 0.3, 0.6, 0.9, 1.2, 1.8)


def killed(args: list[str], delay_s: float, start: str) -> None:
    """Run ``easl ARGS``, wait until the file ``start`` exists (the command has begun its work), then ``delay_s``
    more, and SIGKILL it (unless it has finished)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "easl_toolkit.tui.cli", *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not os.path.exists(start) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(delay_s)
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)


def easl(*args: str) -> None:
    assert (
        subprocess.run([sys.executable, "-m", "easl_toolkit.tui.cli", *args], cwd=REPO, capture_output=True).returncode
        == 0
    )


@pytest.fixture(scope="module")
def items(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("items") / "items.csv"
    pd.DataFrame({"id": [f"i{k:06d}" for k in range(N_ITEMS)], "text": "a text"}).to_csv(path, index=False)
    return str(path)


def test_sigkill_of_easl_init_leaves_no_project_or_a_complete_one(tmp_path, items):
    outcomes = []
    for k, delay in enumerate(DELAYS_S):
        path = tmp_path / f"p{k}.easl"
        killed(["init", str(path), "--items", items], delay, items)
        if not path.exists():
            outcomes.append("none")
            continue
        with Project.open(path) as p:
            assert p.n_items == N_ITEMS and p.verify()["ok"] and p.n_open_hits() > 0
        outcomes.append("complete")
    print("outcomes of the kills:", outcomes)
    assert "none" in outcomes  # at least one kill landed while the file was being built
    for k, outcome in enumerate(outcomes):  # the same command again succeeds and removes what the killed one left
        if outcome == "none":
            easl("init", str(tmp_path / f"p{k}.easl"), "--items", items)
    assert not [n for n in os.listdir(tmp_path) if ".creating" in n]


def test_sigkill_of_easl_next_leaves_the_iteration_as_it_was_or_started_whole(tmp_path, items):
    base = tmp_path / "base.easl"
    easl("init", str(base), "--items", items, "--method", "da", "--hit-size", "5")
    with Project.open(base) as p:  # every HIT of iteration 0 answered: the next command starts iteration 1
        hits = p.open_hits_frame()
        scores = pd.DataFrame({"item_id": hits["item_id"], "hit_id": hits["hit_id"], "score": 50.0})
        scores["score"] = np.arange(len(scores)) % 101
        p.ingest(scores, source="answers")
    before = dump(base)
    outcomes = []
    for k, delay in enumerate(DELAYS_S):
        path, out = tmp_path / f"p{k}.easl", tmp_path / f"hits{k}.csv"
        path.write_bytes(base.read_bytes())
        killed(["next", str(path), "--output", str(out)], delay, f"{path}-wal")
        with Project.open(path) as p:
            assert p.verify()["ok"]
            iteration, n_open = p.iteration(), p.n_open_hits()
        if iteration == 0:
            assert dump(path) == before
            outcomes.append("as it was")
        else:
            assert iteration == 1 and n_open == N_ITEMS // 5
            outcomes.append("started")
        if out.exists():  # written under a temporary name and renamed whole
            assert len(pd.read_csv(out)) == N_ITEMS
    print("outcomes of the kills:", outcomes)
    assert "as it was" in outcomes
    for k in range(len(DELAYS_S)):  # the same command again removes what the killed one left
        if any(n.startswith(f".hits{k}.csv.") for n in os.listdir(tmp_path)):
            easl("next", str(tmp_path / f"p{k}.easl"), "--output", str(tmp_path / f"hits{k}.csv"))
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
