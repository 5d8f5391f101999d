"""The project file's SQLite schema, its version (``PRAGMA user_version``) and the explicit migrations.

What each table and column holds: docs/reference/project-file.md, "Tables".
"""

from __future__ import annotations

import sqlite3

from easl_toolkit.core.errors import SchemaVersionError

FORMAT = "easl-project"
SCHEMA_VERSION = 4
#: older versions a reader opens as they are (nothing a reader reads changed since): version 3 only added the table
#: ``live_arrays``, which only a writer's refit reads (it reads the live index where the table is missing or empty);
#: version 4 only added ``covariates`` and ``designs``, which only an evaluation campaign has (``core.store.inputs``
#: reads a file without them as having none)
READ_AS_IS = frozenset({2, 3})

# MIGRATIONS[v] takes a file at version v - 1 to version v. Append new entries; never edit old ones.
MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE items (
               idx INTEGER PRIMARY KEY,
               item_id TEXT NOT NULL UNIQUE,
               text TEXT NOT NULL,
               data TEXT NOT NULL DEFAULT '{}')""",
        """CREATE TABLE iterations (
               iteration INTEGER PRIMARY KEY,
               started_at TEXT NOT NULL,
               n_hits INTEGER NOT NULL,
               log_seq INTEGER NOT NULL)""",
        """CREATE TABLE hits (
               hit_id TEXT PRIMARY KEY,
               iteration INTEGER NOT NULL REFERENCES iterations(iteration),
               status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'complete', 'retracted')),
               created_at TEXT NOT NULL,
               external_id TEXT)""",
        "CREATE INDEX hits_iteration ON hits(iteration, status)",
        """CREATE TABLE hit_items (
               hit_id TEXT NOT NULL REFERENCES hits(hit_id),
               position INTEGER NOT NULL,
               item_idx INTEGER NOT NULL REFERENCES items(idx),
               PRIMARY KEY (hit_id, position)) WITHOUT ROWID""",
        "CREATE INDEX hit_items_item ON hit_items(item_idx)",
        """CREATE TABLE observations (
               seq INTEGER PRIMARY KEY,
               source_key TEXT NOT NULL,
               kind TEXT NOT NULL CHECK (kind IN ('score', 'retract')),
               item_idx INTEGER NOT NULL,
               score01 REAL,
               score_raw REAL,
               hit_id TEXT,
               annotator TEXT,
               annotation_id TEXT,
               group_key TEXT NOT NULL,
               created_at TEXT NOT NULL,
               source TEXT NOT NULL)""",
        """CREATE TABLE live (
               source_key TEXT PRIMARY KEY,
               seq INTEGER NOT NULL,
               item_idx INTEGER NOT NULL,
               score01 REAL NOT NULL,
               score_raw REAL NOT NULL,
               hit_id TEXT,
               annotation_id TEXT,
               group_key TEXT NOT NULL)""",
        # partial indexes: rows without a HIT or an annotation id (plain score files) cost no index work
        "CREATE INDEX live_hit ON live(hit_id, item_idx) WHERE hit_id IS NOT NULL",
        "CREATE INDEX live_annotation ON live(annotation_id) WHERE annotation_id IS NOT NULL",
        "CREATE TABLE state (name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL)",
        """CREATE TABLE events (
               id INTEGER PRIMARY KEY,
               received_at TEXT NOT NULL,
               kind TEXT NOT NULL,
               payload TEXT NOT NULL,
               status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
               error TEXT,
               processed_at TEXT)""",
        "CREATE INDEX events_status ON events(status, id)",
        """CREATE TABLE rejects (
               id INTEGER PRIMARY KEY,
               created_at TEXT NOT NULL,
               source TEXT NOT NULL,
               location TEXT,
               reason TEXT NOT NULL,
               payload TEXT)""",
        """CREATE TABLE external_ids (
               kind TEXT NOT NULL,
               external_id TEXT NOT NULL,
               local_id TEXT NOT NULL,
               PRIMARY KEY (kind, external_id))""",
        "CREATE INDEX external_ids_local ON external_ids(kind, local_id)",
    ],
    # integer HIT keys: hits gets an explicit integer primary key (its former rowid, so creation order is kept) and
    # hit_items refers to it; the index of hit_items by item and the foreign keys go (nothing reads by item, and the
    # store writes a HIT's items with the HIT)
    2: [
        """CREATE TABLE hits_v2 (
               hit_no INTEGER PRIMARY KEY,
               hit_id TEXT NOT NULL UNIQUE,
               iteration INTEGER NOT NULL,
               status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'complete', 'retracted')),
               created_at TEXT NOT NULL,
               external_id TEXT)""",
        "INSERT INTO hits_v2(hit_no, hit_id, iteration, status, created_at, external_id) "
        "SELECT rowid, hit_id, iteration, status, created_at, external_id FROM hits ORDER BY rowid",
        """CREATE TABLE hit_items_v2 (
               hit_no INTEGER NOT NULL,
               position INTEGER NOT NULL,
               item_idx INTEGER NOT NULL,
               PRIMARY KEY (hit_no, position)) WITHOUT ROWID""",
        "INSERT INTO hit_items_v2(hit_no, position, item_idx) SELECT h.hit_no, hi.position, hi.item_idx "
        "FROM hit_items hi JOIN hits_v2 h ON h.hit_id = hi.hit_id ORDER BY h.hit_no, hi.position",
        "DROP TABLE hit_items",
        "DROP TABLE hits",
        "ALTER TABLE hits_v2 RENAME TO hits",
        "ALTER TABLE hit_items_v2 RENAME TO hit_items",
        "CREATE INDEX hits_iteration ON hits(iteration, status)",
    ],
    # the aware model's live log as arrays (core.store.live_arrays): a derived cache, so nothing to fill here
    3: [
        """CREATE TABLE live_arrays (
               name TEXT PRIMARY KEY,
               dtype TEXT NOT NULL,
               shape TEXT NOT NULL,
               data BLOB NOT NULL)""",
    ],
    # evaluation campaigns (core.store.inputs): the systems' scores of every item, and the inclusion probabilities
    # each iteration's HITs were drawn with; other projects leave both empty
    4: [
        """CREATE TABLE covariates (
               position INTEGER PRIMARY KEY,
               name TEXT NOT NULL UNIQUE,
               data BLOB NOT NULL)""",
        """CREATE TABLE designs (
               iteration INTEGER NOT NULL,
               name TEXT NOT NULL,
               data BLOB NOT NULL,
               PRIMARY KEY (iteration, name))""",
    ],
}


def user_version(conn: sqlite3.Connection) -> int:
    """The file's schema version (``PRAGMA user_version``; 0 for a new, empty database)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Bring the schema to ``SCHEMA_VERSION`` by applying ``MIGRATIONS`` in order, in the caller's transaction.

    Returns the version the file had before. Raises ``SchemaVersionError`` when the file was written by a newer
    version of easl-toolkit (its ``user_version`` is above ``SCHEMA_VERSION``).
    """
    before = user_version(conn)
    if before > SCHEMA_VERSION:
        raise SchemaVersionError(path, before, SCHEMA_VERSION)
    for version in range(before + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version}")
    return before


def check_readable(path: str, version: int) -> None:
    """Raise ``SchemaVersionError`` for a file at ``version`` opened read-only: a reader cannot migrate, so only
    ``SCHEMA_VERSION`` itself and the versions of :data:`READ_AS_IS` can be read (a command that writes migrates an
    older file first)."""
    if version != SCHEMA_VERSION and version not in READ_AS_IS:
        raise SchemaVersionError(path, version, SCHEMA_VERSION)
