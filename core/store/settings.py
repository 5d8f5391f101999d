"""The project's settings: the hyper-parameters recorded at ``easl init`` (the managed ``meta`` key ``hyper``), the
model they make, and the one setting a project manager may change afterwards, the stop target of an aware project:
it enters no posterior and no selection, only the stopping rule's verdict, computed again on every read. Every
other hyper-parameter is fixed for the life of the project file.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cached_property
from typing import TYPE_CHECKING, Any

from easl_toolkit.core.errors import HyperParameterError
from easl_toolkit.core.store.db import Database

if TYPE_CHECKING:
    from easl_toolkit.core.models import Hyper, Model

REPORTED = ("method", "hit_size", "score_min", "score_max", "seed")  #: the hyper-parameters ``status`` reports


class Settings:
    """The hyper-parameters of an open project and its model, read when first needed (``core.models`` is
    imported then, not when the project opens)."""

    def __init__(self, db: Database, hyper_json: str, n_items: int = 0) -> None:
        self._db = db
        self._hyper_json = hyper_json
        self._n_items = n_items

    @cached_property
    def hyper(self) -> Hyper:
        """The hyper-parameters recorded at ``easl init`` (``core.models.Hyper``)."""
        from easl_toolkit.core.models import Hyper

        return Hyper.from_json(self._hyper_json, source=self._db.path)

    @cached_property
    def model(self) -> Model:
        """The posterior model of the project's method (``core.models.get_model(hyper)``), given the project's
        inputs beyond the log (``Model.attach``, :class:`core.store.inputs.StoreInputs`)."""
        from easl_toolkit.core.models import get_model
        from easl_toolkit.core.store.inputs import StoreInputs

        model = get_model(self.hyper)
        model.attach(StoreInputs(self._db, self._n_items))
        return model

    @cached_property
    def reported(self) -> dict[str, Any]:
        """The hyper-parameters ``status`` reports (:data:`REPORTED`), read without ``core.models`` when the file
        records them all."""
        raw = json.loads(self._hyper_json)
        if isinstance(raw, dict) and all(k in raw for k in REPORTED):
            return {k: raw[k] for k in REPORTED}
        return {k: getattr(self.hyper, k) for k in REPORTED}

    def set_stop_at(self, stop_at: float | None) -> float | None:
        """Set (or, with None, remove) the stop target of an aware project; returns the previous target.

        The new hyper-parameters are validated as ``easl init`` validates them, then written in one transaction;
        the cached ``hyper`` and ``model`` are dropped, so the next read uses the new target.

        Raises
        ------
        core.errors.HyperParameterError
            ``field="stop_at"``: not a number in (0, 1), or the project's method is not aware (the stopping rule
            needs the aware posterior); nothing is written then.
        """
        return self._set_stop("stop_at", stop_at)

    def set_stop_width(self, width: float | None) -> float | None:
        """Set (or, with None, remove) the stop width of an evaluation campaign (``easl init --stop-at-width``), as
        :meth:`set_stop_at` sets a stop target; returns the previous width.

        Raises
        ------
        core.errors.HyperParameterError
            ``field="stop_width"``: not a positive number, or the project is no evaluation campaign.
        """
        return self._set_stop("stop_width", width)

    def _set_stop(self, field: str, value: float | None) -> float | None:
        from easl_toolkit.core.models import Hyper

        old = self.hyper
        try:
            new = Hyper(**{**dataclasses.asdict(old), field: value})
        except HyperParameterError as exc:
            raise HyperParameterError(exc.field, exc.value, exc.need, source=self._db.path) from None
        with self._db.writing() as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'hyper'", (new.to_json(),))
            self._hyper_json = new.to_json()
        for name in ("hyper", "model", "reported"):
            self.__dict__.pop(name, None)
        before: float | None = getattr(old, field)
        return before
