"""One reported number and the figures of one comparison: :class:`Figure` and :class:`Block`.

The records the typed results of :func:`core.metrics.pipeline.evaluate` are built from
(:mod:`core.metrics.results`). A NaN figure carries the reason beside it; in JSON it is written as ``null`` with
``<key>_reason`` beside it, counts as integers, intervals as ``[low, high]`` lists (:func:`interval_pair`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from core.metrics.intervals import Analytic, Interval
from core.metrics.registry import COUNT_KEYS


class Figure(NamedTuple):
    """One reported number.

    Attributes
    ----------
    value : float
        NaN when undefined for the data.
    reason : str or None
        Why the value is NaN (None when it is defined).
    ci : Interval or None
        Bootstrap percentile interval (None without a bootstrap).
    analytic : Interval or None
        Closed-form standard error, interval and p-value (Fisher z, t-based Wald), when the metric has one.

    Examples
    --------
    >>> Figure(float("nan"), "a correlation is undefined for constant scores").is_defined
    False
    """

    value: float
    reason: str | None = None
    ci: Interval | None = None
    analytic: Analytic | None = None

    @property
    def is_defined(self) -> bool:
        return bool(np.isfinite(self.value))


@dataclass(frozen=True)
class Block:
    """The figures of one comparison, in registry order (:mod:`core.metrics.registry`).

    ``block["corr"]`` is a :class:`Figure`; an unknown name raises ``KeyError`` (never a silent ``None``).

    Parameters
    ----------
    figures : mapping name -> Figure
        Names from :mod:`core.metrics.registry`.

    Examples
    --------
    >>> b = Block({"N": Figure(3.0), "corr": Figure(float("nan"), "constant scores")})
    >>> b.to_json()
    {'N': 3, 'corr': None, 'corr_reason': 'constant scores'}
    """

    figures: Mapping[str, Figure]

    def __getitem__(self, name: str) -> Figure:
        return self.figures[name]

    def __contains__(self, name: object) -> bool:
        return name in self.figures

    def __iter__(self) -> Iterator[str]:
        return iter(self.figures)

    def value(self, name: str) -> float:
        """The value of ``name`` (NaN when absent or undefined)."""
        fig = self.figures.get(name)
        return float("nan") if fig is None else fig.value

    def values(self) -> dict[str, float]:
        return {k: f.value for k, f in self.figures.items()}

    def to_json(self, order: Iterable[str] | None = None) -> dict[str, Any]:
        """``{key: value}`` with ``null`` + ``<key>_reason`` for NaN and integer counts."""
        out: dict[str, Any] = {}
        for key in order or self.figures:
            if key not in self.figures:
                continue
            fig = self.figures[key]
            v = fig.value
            if not np.isfinite(v):
                out[key] = None
                out[key + "_reason"] = fig.reason or "undefined for these data"
            elif key in COUNT_KEYS and float(v).is_integer():
                out[key] = int(v)
            else:
                out[key] = float(v)
        return out

    def ci_json(self, *, prefix: str = "", skip: tuple[str, ...] = ("N",)) -> dict[str, Any]:
        """``{prefix + key: [low, high]}`` of the figures that have a bootstrap interval."""
        return {prefix + k: interval_pair(f.ci) for k, f in self.figures.items() if f.ci is not None and k not in skip}

    def analytic_json(self) -> dict[str, Any]:
        """``{key: {"se", "ci", "p_value", "method"}}`` of the figures with a closed-form interval."""
        return {k: f.analytic.to_json() for k, f in self.figures.items() if f.analytic is not None}


def interval_pair(iv: Interval | tuple[float, float]) -> list[float | None]:
    """``[low, high]`` with ``None`` for a bound that is not finite (the JSON form of an interval)."""
    lo, hi = iv[0], iv[1]
    return [None if not np.isfinite(lo) else float(lo), None if not np.isfinite(hi) else float(hi)]
