"""Settings a project manager may change after ``easl init``: the stop target of an aware project.

The hyper-parameters live in the managed ``meta`` key ``hyper`` (``core.models.Hyper.to_json``), which no front
end may write through ``set_meta``. Of them only the stop target (``stop_at``) can change without touching the
engine's state: it enters no posterior and no selection, only the stopping rule's verdict
(``E[rho] - margin >= target``, docs/design.md, "aware"), which is computed again on every read. Every other
hyper-parameter is fixed for the life of the project file.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from core.errors import HyperParameterError

if TYPE_CHECKING:
    from core.store.project import Project

__all__ = ["set_stop_at"]

_CACHED = ("hyper", "model", "_settings")  #: the project's cached views of the ``hyper`` key


def set_stop_at(project: Project, stop_at: float | None) -> float | None:
    """Set (or, with None, remove) the stop target of an aware project; returns the previous target.

    The new hyper-parameters are validated as ``easl init`` validates them (``Hyper.__post_init__``: a
    Spearman correlation in (0, 1), and only for the method aware), then written in one transaction. The
    project's cached ``hyper`` and ``model`` are dropped, so the next read uses the new target.

    Raises
    ------
    core.errors.HyperParameterError
        ``field="stop_at"``: not a number in (0, 1), or the project's method is not aware (the stopping rule
        needs the aware posterior); nothing is written then.
    """
    from core.models import Hyper

    old = project.hyper
    if old.method != "aware":
        raise HyperParameterError(
            "stop_at",
            stop_at,
            f"the method aware (this project uses {old.method}; the stopping rule needs the aware posterior)",
            source=project.path,
        )
    new = Hyper(**{**dataclasses.asdict(old), "stop_at": stop_at})
    with project.transaction():
        project._conn.execute("UPDATE meta SET value = ? WHERE key = 'hyper'", (new.to_json(),))
        project._hyper_json = new.to_json()
    for name in _CACHED:
        project.__dict__.pop(name, None)
    return old.stop_at
