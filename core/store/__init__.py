"""The project file (SQLite, WAL): items, HITs, the append-only observation log and the cached model state.

Public interface: :class:`Project` (``docs/ARCHITECTURE.md``), :class:`ProjectStatus`, :class:`IngestReport`,
:class:`Prepared`, :class:`Event`, :class:`Reject`, :func:`read_items` (an items file, checked:
``core.store.items.read_items``). Importing this package loads neither pandas nor SciPy.
"""

from __future__ import annotations

from easl_toolkit.core.store.batches import IngestReport, Prepared
from easl_toolkit.core.store.db import now
from easl_toolkit.core.store.items import read_items
from easl_toolkit.core.store.project import Project
from easl_toolkit.core.store.records import Event, Reject
from easl_toolkit.core.store.schema import SCHEMA_VERSION
from easl_toolkit.core.store.views import ESTIMATE_COLUMNS, RATING_COLUMNS, ProjectStatus

__all__ = [
    "Project",
    "ProjectStatus",
    "Prepared",
    "IngestReport",
    "Event",
    "Reject",
    "read_items",
    "now",
    "SCHEMA_VERSION",
    "ESTIMATE_COLUMNS",
    "RATING_COLUMNS",
]
