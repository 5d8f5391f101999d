"""Schema migrations of the project file: a file written at an older schema version is migrated when a writer opens
it, keeps every record, and verifies (``easl verify``) afterwards."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from easl_toolkit.core.errors import SchemaVersionError
from easl_toolkit.core.store import Project
from easl_toolkit.core.store.schema import MIGRATIONS, SCHEMA_VERSION
from easl_toolkit.tui.cli import main
from tests.store_helpers import answer, assert_verified, new_project

V1_HIT_TABLES = (
    "CREATE TABLE hits ",
    "CREATE INDEX hits_iteration",
    "CREATE TABLE hit_items",
    "CREATE INDEX hit_items",
)


def downgrade_to_v1(path: str) -> None:
    """Rewrite a current project file as schema version 1 wrote it: ``hits`` keyed by the text ``hit_id`` (no
    ``hit_no``), ``hit_items(hit_id, position, item_idx)`` with its foreign keys and its index by item."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute("DROP TABLE covariates")  # (schema version 4)
        conn.execute("DROP TABLE designs")
        conn.execute("DROP TABLE live_arrays")  # (schema version 3)
        conn.execute("DELETE FROM meta WHERE key = 'live_arrays_seq'")
        conn.execute("ALTER TABLE hits RENAME TO hits_now")
        conn.execute("ALTER TABLE hit_items RENAME TO hit_items_now")
        conn.execute("DROP INDEX hits_iteration")
        for statement in MIGRATIONS[1]:
            if statement.lstrip().startswith(V1_HIT_TABLES):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO hits(hit_id, iteration, status, created_at, external_id) "
            "SELECT hit_id, iteration, status, created_at, external_id FROM hits_now ORDER BY hit_no"
        )
        conn.execute(
            "INSERT INTO hit_items(hit_id, position, item_idx) SELECT h.hit_id, hi.position, hi.item_idx "
            "FROM hit_items_now hi JOIN hits_now h ON h.hit_no = hi.hit_no"
        )
        conn.execute("DROP TABLE hit_items_now")
        conn.execute("DROP TABLE hits_now")
        conn.execute("PRAGMA user_version = 1")
        conn.execute("COMMIT")
    finally:
        conn.close()


def _snapshot(project: Project) -> dict[str, Any]:
    """What a user sees of a project: every iteration's HITs with status, the estimates, the ratings, status."""
    return {
        "hits": [project.hits(t) for t in range(project.iteration() + 1)],
        "estimates": project.estimates().to_dict(orient="list"),
        "ratings": project.ratings().astype(object).to_dict(orient="list"),
        "status": {k: v for k, v in project.status().to_json().items() if k != "schema_version"},
    }


def _campaign(tmp_path: Path, method: str = "easl") -> tuple[str, dict[str, Any]]:
    """A project with two iterations answered, a third started and a retracted HIT; returns its path and what a
    user sees of it."""
    rng = np.random.default_rng(5)
    with new_project(tmp_path, n=30, method=method, hit_size=3, seed=2) as p:
        for _ in range(2):
            p.ingest(answer(p.next_hits(), rng), source="answers.csv")
        hits = p.next_hits()
        p.ingest(answer(hits[:2], rng), source="partial.csv")
        p.retract_hit(hits[-1]["hit_id"], source="test")
        seen = _snapshot(p)
        path = p.path
    return path, seen


@pytest.mark.parametrize("method", ["easl", "trueskill"])
def test_a_version_1_file_is_migrated_keeping_every_record_and_verifies(tmp_path: Path, method: str) -> None:
    path, seen = _campaign(tmp_path, method)
    downgrade_to_v1(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "hit_id" in [r[1] for r in conn.execute("PRAGMA table_info(hit_items)")]
    conn.close()
    with pytest.raises(SchemaVersionError):  # a reader cannot migrate
        Project.open(path, readonly=True)
    with Project.open(path) as p:  # a writer migrates, in one transaction
        assert p.db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        assert p.db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert _snapshot(p) == seen
        assert_verified(p)
        # the migrated file goes on working: the open HITs are answered and the next iteration starts
        p.ingest(answer([h for h in p.open_hits()], np.random.default_rng(1)), source="rest.csv")
        assert p.next_hits()
        assert_verified(p)
    assert main(["verify", path]) == 0


def test_a_migrated_file_keeps_hit_numbers_in_creation_order(tmp_path: Path) -> None:
    path, _ = _campaign(tmp_path)
    downgrade_to_v1(path)
    with Project.open(path) as p:
        rows = p.db.conn.execute("SELECT hit_no, hit_id FROM hits ORDER BY hit_no").fetchall()
        iterations = [int(h.split("-")[0][2:]) for _, h in rows]
        assert iterations == sorted(iterations)
        assert [n for n, _ in rows] == list(range(1, len(rows) + 1))
        items = p.db.conn.execute("SELECT COUNT(*) FROM hit_items").fetchone()[0]
        assert items == 3 * len(rows)
