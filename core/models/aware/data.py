"""The data of the annotator-aware model (:mod:`core.models.aware.fit`): observations in canonical order and their
sufficient statistics by (item, annotator) pair."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: The middle of the unit scale, ``c``.
CENTER = 0.5


@dataclass(frozen=True)
class Observations:
    """Scores in canonical order (item, annotator, score), so that a fit does not depend on the row order.

    Build with :meth:`build`; add a batch with :meth:`extend` (a merge, ``O(n)``, no re-sort).
    """

    item: NDArray[Any]  # int64, sorted
    annotator: NDArray[Any]  # int64
    score: NDArray[Any]  # float64 in [0, 1]
    n_items: int
    n_annotators: int
    key: NDArray[Any]  # int64, item << 32 | annotator: the sort key (non-decreasing)

    @staticmethod
    def _check(item: Any, annotator: Any, score01: Any, n_items: int) -> tuple[NDArray[Any], ...]:
        i = np.asarray(item, dtype=np.int64).ravel()
        a = np.asarray(annotator, dtype=np.int64).ravel()
        x = np.asarray(score01, dtype=np.float64).ravel()
        if not i.size == a.size == x.size:
            raise ValueError(f"item, annotator and score01 differ in length ({i.size}, {a.size}, {x.size})")
        if i.size and (i.min() < 0 or i.max() >= n_items):
            raise ValueError(f"item index out of range [0, {n_items})")
        if a.size and (a.min() < 0 or a.max() >= 2**31):
            raise ValueError("annotator indices must be in [0, 2^31)")
        if x.size and not (np.all(x >= 0.0) and np.all(x <= 1.0)):
            raise ValueError("score01 must be finite and within [0, 1]")
        return i, a, x

    @staticmethod
    def _canonical(key: NDArray[Any], score: NDArray[Any]) -> NDArray[Any]:
        """Order by key, then score: ``argsort`` by key, then rows of equal keys (an annotator scoring an
        item twice: rare) re-ordered by score."""
        order = Observations._stable_argsort(key)
        return Observations._ties_by_score(key[order], score[order], order)

    @staticmethod
    def _stable_argsort(key: NDArray[Any]) -> NDArray[Any]:
        """``np.argsort(key, kind="stable")`` of non-negative keys, as a least-significant-digit radix sort: one
        stable pass per 16-bit digit that is not zero everywhere (numpy sorts 16-bit integers by radix), for the
        ingest target of ``bench/bench_scale.py`` (measurements: docs/studies/code-notes.md)."""
        order: NDArray[Any] = np.arange(key.size)
        for shift in range(0, 64, 16):
            digit = ((key >> shift) & 0xFFFF).astype(np.uint16)
            if digit.any():
                order = order[np.argsort(digit[order], kind="stable")]
        return order

    @staticmethod
    def _ties_by_score(key: NDArray[Any], score: NDArray[Any], order: NDArray[Any]) -> NDArray[Any]:
        same = np.flatnonzero(key[1:] == key[:-1])
        if same.size:
            rows = np.unique(np.concatenate([same, same + 1]))
            sub = rows[np.lexsort((score[rows], key[rows]))]
            order = order.copy()
            order[rows] = order[sub]
        return order

    @classmethod
    def build(
        cls, item: Any, annotator: Any, score01: Any, *, n_items: int, n_annotators: int | None = None
    ) -> Observations:
        """Validate and sort observations (``item`` in ``[0, n_items)``, annotator ids ``>= 0``, scores on
        ``[0, 1]``); ``n_annotators`` defaults to ``max(annotator) + 1``."""
        i, a, x = cls._check(item, annotator, score01, n_items)
        key = (i << 32) | a
        order = cls._canonical(key, x)
        na = int(a.max()) + 1 if a.size else 0
        return cls(i[order], a[order], x[order], int(n_items), max(na, int(n_annotators or 0)), key[order])

    def extend(self, item: Any, annotator: Any, score01: Any, *, n_items: int | None = None) -> Observations:
        """These observations plus a batch, still in canonical order (merged, not re-sorted)."""
        n = int(n_items or self.n_items)
        i, a, x = self._check(item, annotator, score01, n)
        key = (i << 32) | a
        o = self._canonical(key, x)
        i, a, x, key = i[o], a[o], x[o], key[o]
        na = max(self.n_annotators, int(a.max()) + 1 if a.size else 0)
        pos = np.searchsorted(self.key, key, side="right")
        merged_key = np.insert(self.key, pos, key)
        merged_x = np.insert(self.score, pos, x)
        order = self._ties_by_score(merged_key, merged_x, np.arange(merged_key.size))
        tied = not np.array_equal(order, np.arange(order.size)) if order.size else False
        merged = (np.insert(self.item, pos, i), np.insert(self.annotator, pos, a), merged_x, merged_key)
        if tied:
            merged = tuple(m[order] for m in merged)
        return Observations(merged[0], merged[1], merged[2], n, na, merged[3])

    @property
    def size(self) -> int:
        """Number of scores."""
        return int(self.item.size)

    @cached_property
    def pairs(self) -> PairStats:
        """:meth:`PairStats.build` of these observations, built once: a refit's fit and its informative counts
        (:func:`core.models.aware.clickers.informative_arrays`) share it (the ingest target)."""
        return PairStats.build(self)


@dataclass(frozen=True)
class PairStats:
    """Sufficient statistics of the observations by (item, annotator) pair, as sparse ``n_items x
    n_annotators`` matrices: ``count`` (``C_ia``), ``count_sq`` (``C_ia^2``), ``sum_y`` and ``sum_y2`` (sums of
    ``y = x - c`` and ``y^2``). Every EM sweep is a few products with them: no pass over single scores."""

    count: Any
    count_sq: Any
    sum_y: Any
    sum_y2: Any
    n_per_item: NDArray[Any]
    n_per_annotator: NDArray[Any]

    @classmethod
    def build(cls, obs: Observations) -> PairStats:
        """From observations in canonical order (so the pairs come sorted by item, then annotator)."""
        from scipy import sparse  # here: easl status needs none

        n, na = obs.n_items, max(obs.n_annotators, 1)
        key = obs.key
        first = np.empty(key.size, dtype=bool)
        first[:1] = True
        np.not_equal(key[1:], key[:-1], out=first[1:])
        pair = np.cumsum(first) - 1
        y = obs.score - CENTER
        c = np.bincount(pair).astype(np.float64) if key.size else np.zeros(0)
        sy = np.bincount(pair, y) if key.size else np.zeros(0)
        sy2 = np.bincount(pair, y * y) if key.size else np.zeros(0)
        p_item, p_ann = obs.item[first], obs.annotator[first]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(p_item, minlength=n), out=indptr[1:])

        count = sparse.csr_matrix((c, p_ann, indptr), shape=(n, na))

        def mat(data: NDArray[Any]) -> Any:  # (the count's index arrays, of scipy's index type already: not copied)
            return sparse.csr_matrix((data, count.indices, count.indptr), shape=(n, na))

        return cls(
            count,
            mat(c * c),
            mat(sy),
            mat(sy2),
            np.bincount(obs.item, minlength=n).astype(np.float64),
            np.bincount(obs.annotator, minlength=obs.n_annotators).astype(np.float64),
        )
