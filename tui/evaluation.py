"""What ``easl evaluate`` (``tui/commands/evaluate.py``) and the app's Evaluate screen (``tui/screens/evaluate.py``)
share: loaded data evaluated by ``core.metrics.pipeline.evaluate`` with its loading notes, a bad input worded as one
``EaslError`` naming the source, and the error for an evaluation with nothing left.

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
    from easl_toolkit.core.metrics.results import Evaluation


def evaluate_loaded(
    data: EvaluationInput,
    source: object,
    *,
    group_name: str,
    options: EvaluationOptions,
    progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """``core.metrics.pipeline.evaluate`` on loaded data (human, system, rater names, groups, notes) with the
    ``options`` of the evaluation; a ``ValueError`` becomes ``EaslError("SOURCE: ...")``."""
    from easl_toolkit.core.metrics.pipeline import evaluate

    try:
        return evaluate(
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


def dropped_text(dropped: Mapping[str, int]) -> str:
    """Why responses were dropped, e.g. ``"3 dropped: missing human score"``, for the message below."""
    return "; ".join(f"{v} dropped: {k}" for k, v in dropped.items()) or "the file has no usable rows"


def nothing_left(source: object, dropped: Mapping[str, int]) -> EaslError:
    """The error for an evaluation with no response left, naming the source and what was dropped."""
    return EaslError(f"{source}: no response left to evaluate ({dropped_text(dropped)}).")
