"""The project file (SQLite, WAL): items, HITs, the append-only observation log and the cached model state.

Public interface: :class:`Project` (``docs/ARCHITECTURE.md``), :class:`IngestReport`, :func:`read_items`.
"""
from core.store.items import read_items
from core.store.project import ESTIMATE_COLUMNS, RATING_COLUMNS, IngestReport, Prepared, Project
from core.store.schema import SCHEMA_VERSION

__all__ = ["Project", "Prepared", "IngestReport", "read_items", "SCHEMA_VERSION", "ESTIMATE_COLUMNS", "RATING_COLUMNS"]
