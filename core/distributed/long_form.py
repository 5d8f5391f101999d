"""The long form (one rating per row) on Dask: a first pass for the raters, a shuffle by item, a pivot per partition.

As :func:`core.metrics.load.load_long` in memory: every human rater becomes one column, in the order given or
by decreasing number of ratings (ties by rater id), counted over the whole data set in a first pass; a system is a
rater value (its score per item) or a column (one value per item). The rows are numbered in file order, shuffled so
that every item's rows are in one partition, and each partition is pivoted with
:func:`core.metrics.load.rater_matrix` in that order (a repeated rating keeps the first one in file order).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from core.metrics.load import frame_scores, long_rater_systems, long_system_scores, rater_matrix
from core.tables import Table

#: Column of the wide partitions holding the group labels; of the long rows holding the row number.
GROUP, ORDER = "__easl_group__", "__easl_row__"


@dataclass(frozen=True)
class LongSpec:
    source: str
    item: str
    rater: str
    score: str
    system: tuple[str, ...]
    rater_systems: tuple[str, ...] = ()
    human: tuple[str, ...] = ()  # the human raters in column order (after the first pass)
    group: str | None = None


def _table(frame: pd.DataFrame, spec: LongSpec, k: int) -> Table:
    lines = frame[ORDER].to_numpy(dtype=np.int64) + 1 if ORDER in frame else np.arange(1, len(frame) + 1)
    return Table(frame.reset_index(drop=True), lines, f"{spec.source} (row of the data set)", "row")


def _scores(frame: pd.DataFrame, spec: LongSpec, k: int, col: str) -> NDArray[Any]:
    return frame_scores(frame, col, lambda: _table(frame, spec, k), strict=True)


def scan(frame: pd.DataFrame, spec: LongSpec, k: int) -> tuple[int, pd.Series]:
    """(rows, number of rows with a score per rater id) of one partition."""
    score = _scores(frame, spec, k, spec.score)
    raters = frame[spec.rater].astype(str).to_numpy()
    counts = pd.Series(np.isfinite(score).astype(np.int64)).groupby(raters).sum()
    return len(frame), counts


def numbered(frame: pd.DataFrame, offset: int) -> pd.DataFrame:
    """The partition with its rows numbered in file order from ``offset``."""
    return frame.assign(**{ORDER: np.arange(offset, offset + len(frame), dtype=np.int64)})


def to_wide(frame: pd.DataFrame, spec: LongSpec, k: int) -> pd.DataFrame:
    """The wide form (one row per item: the human raters' columns, the systems, the group) of complete items."""
    frame = frame.sort_values(ORDER, kind="stable").reset_index(drop=True)
    table = _table(frame, spec, k)
    score = _scores(frame, spec, k, spec.score)
    items = frame[spec.item].astype(str).to_numpy()
    raters = frame[spec.rater].astype(str).to_numpy()
    ids, first, row_of = np.unique(items, return_index=True, return_inverse=True)
    n = ids.size
    column = partial(_scores, frame, spec, k)
    out = {
        s: long_system_scores(table, s, raters, spec.rater_systems, score, row_of, items, n, column)
        for s in spec.system
    }
    hr = np.flatnonzero(np.isin(raters, spec.human) & np.isfinite(score))
    h, names, repeats = rater_matrix(row_of[hr], raters[hr], score[hr], n, order=list(spec.human))
    wide = pd.DataFrame({name: np.full(n, np.nan) for name in spec.human})
    for j, name in enumerate(names):
        if name in spec.human:
            wide[name] = h[:, j]
    for s, v in out.items():
        wide[s] = v
    if spec.group:
        wide[GROUP] = frame[spec.group].astype(str).to_numpy()[first]
    wide.attrs["easl_repeats"] = repeats
    return wide


def resolve(
    spec: LongSpec, counts: pd.Series, columns: list[str], human: tuple[str, ...] | None
) -> tuple[LongSpec, int]:
    """The spec with the systems and the human raters' column order fixed from the first pass's counts; and the
    number of human ratings."""
    rater_systems = tuple(long_rater_systems(spec.source, spec.rater, set(counts.index), columns, spec.system, human))
    if human:
        order = tuple(r for r in human if r not in rater_systems)
    else:
        rated = counts[(counts > 0) & ~counts.index.isin(rater_systems)]
        order = tuple(sorted(rated.index, key=lambda r: (-int(rated[r]), r)))
    n_ratings = int(counts.reindex(list(order)).fillna(0).sum())
    human_order = tuple(r for r in order if counts.get(r, 0) > 0) or ("rating",)
    return dataclasses.replace(spec, rater_systems=rater_systems, human=human_order), n_ratings
