"""Sufficient statistics that are sums over responses, for one sample or many bootstrap resamples at once.

Most metrics here are smooth functions of sums over responses (moments, category counts, coincidence tables).
A :class:`RowSums` holds the per-response terms; :meth:`RowSums.totals` returns their sums, either for the sample
itself or, given a ``(B, n)`` matrix of resampling counts (how often each response was drawn in each of ``B``
bootstrap resamples), for all resamples at once (one matrix product for the dense terms, one ``bincount`` for the
category counts). A metric is then ``finish(totals)``, written once with a leading batch axis, so the point
estimate and the bootstrap share the same code. This is the standard plug-in view of the nonparametric bootstrap
(Efron & Tibshirani 1993, ch. 6): a resample is the original data with multinomial weights on the responses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.metrics.notes import undefined


@dataclass
class _Counts:
    rows: NDArray[Any]  # (m,) int64 response index of each entry
    cats: NDArray[Any]  # (m,) int64 cell index in [0, size)
    weights: NDArray[Any]  # (m,) float64 weight of each entry
    size: int


@dataclass
class RowSums:
    """Per-response terms whose sums are sufficient for a set of metrics, over ``n`` responses (rows)."""

    n: int
    _dense_names: list[str] = field(default_factory=list)
    _dense: list[NDArray[Any]] = field(default_factory=list)
    _counts: dict[str, _Counts] = field(default_factory=dict)
    _stacked: NDArray[Any] | None = field(default=None, repr=False)
    _grouped: list[tuple[NDArray[Any], dict[str, NDArray[Any]]]] = field(default_factory=list)

    def add_grouped(self, group: NDArray[Any], tables: dict[str, NDArray[Any]]) -> None:
        """Add terms that depend on the response only through its group (e.g. its rating pattern):
        ``totals[name] = sum_i w_i tables[name][group_i]``; ``group_i = -1`` adds nothing. A table of shape (G,)
        gives a scalar total, (G, size) a count table. Resampled totals cost O(B x n + B x G x size), however
        many entries a response has."""
        group = np.asarray(group, dtype=np.int64)
        if group.shape != (self.n,):
            raise ValueError(f"group has shape {group.shape}, expected ({self.n},)")
        self._grouped.append((group, {k: np.asarray(v, dtype=np.float64) for k, v in tables.items()}))

    def add(self, name: str, values: NDArray[Any]) -> None:
        """Add a dense term: ``totals[name] = sum_i w_i values_i``."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n,):
            raise ValueError(f"term {name!r} has shape {values.shape}, expected ({self.n},)")
        self._dense_names.append(name)
        self._dense.append(values)

    def add_counts(
        self, name: str, rows: NDArray[Any], cats: NDArray[Any], weights: NDArray[Any] | float, size: int
    ) -> None:
        """Add a count table: ``totals[name][c] = sum over entries e with cats_e = c of w_{rows_e} weights_e``."""
        rows = np.asarray(rows, dtype=np.int64)
        cats = np.asarray(cats, dtype=np.int64)
        weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), rows.shape)
        self._counts[name] = _Counts(rows, cats, np.ascontiguousarray(weights), int(size))

    def merge(self, other: RowSums) -> None:
        """Add every term of ``other`` (sums over the same responses)."""
        if other.n != self.n:
            raise ValueError("cannot merge sums over different responses")
        self._dense_names += other._dense_names
        self._dense += other._dense
        self._counts.update(other._counts)
        self._grouped += other._grouped

    def embedded(self, rows: NDArray[Any], n: int) -> RowSums:
        """The same terms placed at positions ``rows`` of a sample of ``n`` responses (0 elsewhere).

        Used for metrics defined on a subset (e.g. double-scored responses) inside a bootstrap over all responses.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.shape != (self.n,):
            raise ValueError("rows must give one position per response of these sums")
        if self.n == n and (n == 0 or (rows[0] == 0 and rows[-1] == n - 1)) and np.all(np.diff(rows) == 1):
            return self
        out = RowSums(n)
        for name, values in zip(self._dense_names, self._dense):
            full = np.zeros(n)
            full[rows] = values
            out.add(name, full)
        for name, c in self._counts.items():
            out._counts[name] = _Counts(rows[c.rows], c.cats, c.weights, c.size)
        for group, tables in self._grouped:
            full = np.full(n, -1, dtype=np.int64)
            full[rows] = group
            out._grouped.append((full, tables))
        return out

    def per_row(self) -> dict[str, NDArray[Any]]:
        """Every term of each response separately: ``(n,)`` dense terms, ``(n, size)`` count tables."""
        out: dict[str, NDArray[Any]] = dict(zip(self._dense_names, self._dense))
        for name, c in self._counts.items():
            out[name] = np.bincount(c.rows * c.size + c.cats, weights=c.weights, minlength=self.n * c.size).reshape(
                self.n, c.size
            )
        return out

    def totals(self, counts: NDArray[Any] | None = None) -> dict[str, NDArray[Any]]:
        """Sums of every term, ``name -> array``: of shape ``()`` / ``(size,)`` for the sample itself (``counts``
        None), ``(B,)`` / ``(B, size)`` for the resampling counts ``counts`` of shape ``(B, n)``."""
        out: dict[str, NDArray[Any]] = {}
        if self._dense and counts is None:
            for name, values in zip(self._dense_names, self._dense):
                out[name] = np.asarray(values.sum())
        elif self._dense:
            if self._stacked is None or self._stacked.shape[1] != len(self._dense):
                self._stacked = np.stack(self._dense, axis=1)
            sums = counts @ self._stacked
            for j, name in enumerate(self._dense_names):
                out[name] = sums[..., j]
        for name, c in self._counts.items():
            if counts is None:
                out[name] = np.bincount(c.cats, weights=c.weights, minlength=c.size)[: c.size]
            else:
                b = counts.shape[0]
                w = counts[:, c.rows] * c.weights
                flat = (np.arange(b, dtype=np.int64)[:, None] * c.size + c.cats[None, :]).ravel()
                out[name] = np.bincount(flat, weights=w.ravel(), minlength=b * c.size).reshape(b, c.size)
        for group, tables in self._grouped:
            g = int(group.max(initial=-1)) + 1
            ok = group >= 0
            if counts is None:
                agg: NDArray[Any] = np.bincount(group[ok], minlength=g).astype(np.float64)
            else:
                b = counts.shape[0]
                flat = (np.arange(b, dtype=np.int64)[:, None] * g + group[ok][None, :]).ravel()
                agg = np.bincount(flat, weights=counts[:, ok].ravel(), minlength=b * g).reshape(b, g)
            for name, table in tables.items():
                out[name] = np.asarray(agg @ table[:g])
        return out


def nan_where(bad: NDArray[Any] | bool, value: NDArray[Any], reason: str) -> NDArray[Any]:
    """``value`` with NaN where ``bad``; emits the reason (UndefinedMetricWarning) if any element is bad."""
    bad = np.asarray(bad, dtype=bool)
    if bad.any():
        undefined(reason, stacklevel=4)
        value = np.where(bad, np.nan, value)
    return value


def as_float(value: NDArray[Any]) -> float | NDArray[Any]:
    """A Python float for a 0-d result, the array otherwise."""
    value = np.asarray(value, dtype=np.float64)
    return float(value) if value.ndim == 0 else value
