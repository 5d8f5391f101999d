"""What ``easl evaluate`` (``tui/commands/evaluate.py``) and the app's Evaluate screen (``tui/screens/evaluate.py``)
share: loaded data evaluated by ``core.metrics.pipeline.evaluate`` with its loading notes, a bad input worded as one
``EaslError`` naming the source, the error for an evaluation with nothing left, and what an evaluation reads from a
project (:func:`read_project`).

Only ``core.errors`` is imported at module level (the command line starts instantly); the metrics are imported by
the call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from easl_toolkit.core.errors import EaslError

if TYPE_CHECKING:
    from easl_toolkit.core.metrics.load import EvaluationInput
    from easl_toolkit.core.metrics.options import EvaluationOptions
    from easl_toolkit.core.metrics.project_raters import ProjectRatings
    from easl_toolkit.core.metrics.results import Evaluation


def read_project(path: str, *, estimates: bool = False) -> ProjectRatings:
    """What an evaluation reads from the project at ``path`` (``core.store.Project``, read-only): the live ratings,
    the items, the score range, the annotator table of a model with annotator terms (``Project.annotator_table``,
    the one ``easl status --annotators`` prints; None for the other models) and, with ``estimates``, the per-item
    estimates (``Project.estimates``, ``easl export``'s)."""
    from easl_toolkit.core.errors import UnsupportedByModel
    from easl_toolkit.core.metrics.project_raters import ProjectRatings
    from easl_toolkit.core.store import Project

    with Project.open(path, readonly=True) as project:
        try:
            annotators = project.annotator_table()
        except UnsupportedByModel:
            annotators = None
        hyper = project.hyper
        return ProjectRatings(
            ratings=project.ratings(),
            items=project.items(),
            scale=(float(hyper.score_min), float(hyper.score_max)),
            annotators=annotators,
            estimates=project.estimates() if estimates else None,
        )


def evaluate_loaded(
    data: EvaluationInput,
    source: object,
    *,
    group_name: str,
    options: EvaluationOptions,
    progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """``core.metrics.pipeline.evaluate`` on loaded data (human, system, rater names, groups, notes) with the
    ``options`` of the evaluation, carrying how a project's human raters were built (``data.raters``); a
    ``ValueError`` becomes ``EaslError("SOURCE: ...")``."""
    from dataclasses import replace

    from easl_toolkit.core.metrics.pipeline import evaluate

    try:
        ev = evaluate(
            data.human,
            data.system,
            human_names=data.human_names,
            groups=data.groups,
            group_name=group_name,
            progress=progress,
            extra_notes=data.notes,
            options=options,
        )
    except ValueError as exc:
        raise EaslError(f"{source}: {exc}.") from None
    return ev if data.raters is None else replace(ev, raters=data.raters)


def dropped_text(dropped: Mapping[str, int]) -> str:
    """Why responses were dropped, e.g. ``"3 dropped: missing human score"``, for the message below."""
    return "; ".join(f"{v} dropped: {k}" for k, v in dropped.items()) or "the file has no usable rows"


def nothing_left(source: object, dropped: Mapping[str, int]) -> EaslError:
    """The error for an evaluation with no response left, naming the source and what was dropped."""
    return EaslError(f"{source}: no response left to evaluate ({dropped_text(dropped)}).")
