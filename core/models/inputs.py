"""What a model may read of its project beyond the log (:class:`ProjectInputs`, given by the store through
``Model.attach``) and what it returns when it draws HITs with recorded probabilities (:class:`Chosen`).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from numpy.typing import NDArray


class ProjectInputs(Protocol):
    """What a model may read of its project beyond the log (the store implements it, ``core/store/inputs.py``):
    numbers given with the items at ``easl init`` and the designs recorded with earlier iterations' HITs."""

    def covariates(self) -> NDArray[Any]:
        """(n_items, K) float64: the numbers each item carries for the model (an evaluation campaign: the systems'
        scores); (n_items, 0) when none."""

    def design(self) -> dict[str, NDArray[Any]]:
        """The arrays recorded with the most recent iteration whose HITs came with a design (:class:`Chosen`);
        empty when none did."""


class Chosen(NamedTuple):
    """HITs a model chose (item positions, one row per HIT; a row may end in -1: a shorter HIT) and, for a model
    that draws them with recorded probabilities, the ``design`` arrays the store records with them, in the same
    transaction (None: nothing to record)."""

    hits: NDArray[Any]
    design: dict[str, NDArray[Any]] | None = None
