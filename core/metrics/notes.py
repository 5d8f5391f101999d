"""Reasons for undefined values and sample-size cautions.

Metric functions return plain numbers. When a value is undefined for the given data (a constant vector, one
response, no double-scored response, ...) the function returns ``nan`` and emits an
:class:`UndefinedMetricWarning` whose message is the reason. Cautions that do not make the value undefined (too
few double-scored responses for a stable PRMSE, PRMSE above 1) are :class:`SampleSizeWarning`. The evaluation
pipeline (:mod:`core.metrics.report`) records both with :func:`capture`, so every NaN in a report comes with a
reason; library users see ordinary Python warnings (as with scikit-learn's ``UndefinedMetricWarning``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


class UndefinedMetricWarning(RuntimeWarning):
    """The metric is undefined for these data; the function returned NaN. The message is the reason.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = undefined("a correlation needs at least 2 responses")
    >>> caught[0].category.__name__, str(caught[0].message)
    ('UndefinedMetricWarning', 'a correlation needs at least 2 responses')
    """


class SampleSizeWarning(UserWarning):
    """The metric is defined but the sample is too small (or the estimate out of range) to trust it.

    Examples
    --------
    >>> capture(caution, "PRMSE rests on 40 double-scored responses")[2]
    ['PRMSE rests on 40 double-scored responses']
    """


def undefined(reason: str, *, stacklevel: int = 3) -> float:
    """Emit :class:`UndefinedMetricWarning` with ``reason`` and return ``nan``."""
    warnings.warn(reason, UndefinedMetricWarning, stacklevel=stacklevel)
    return float("nan")


def caution(message: str, *, stacklevel: int = 3) -> None:
    """Emit :class:`SampleSizeWarning` with ``message``."""
    warnings.warn(message, SampleSizeWarning, stacklevel=stacklevel)


def capture(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[str], list[str]]:
    """Call ``func`` and return ``(value, reasons, cautions)``.

    ``reasons`` are the messages of :class:`UndefinedMetricWarning` (why a value is NaN), ``cautions`` those of
    :class:`SampleSizeWarning`. Other warnings propagate unchanged. Duplicates are removed, order kept.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        warnings.simplefilter("always", SampleSizeWarning)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = func(*args, **kwargs)
    reasons: list[str] = []
    cautions: list[str] = []
    for w in caught:
        if issubclass(w.category, UndefinedMetricWarning):
            target = reasons
        elif issubclass(w.category, SampleSizeWarning):
            target = cautions
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        text = str(w.message)
        if text not in target:
            target.append(text)
    return value, reasons, cautions


def quiet(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func`` with undefined-value and sample-size warnings silenced (bootstrap resamples)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", SampleSizeWarning)
        with np.errstate(divide="ignore", invalid="ignore"):
            return func(*args, **kwargs)
