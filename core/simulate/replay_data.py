"""Real ratings for a replay (:mod:`core.simulate.replay`): long-form (item, annotator, score) rows read from a
CSV, TSV, JSONL or Parquet file, checked, and coded as integer positions with scores on the unit scale.

Every problem is one :class:`~core.errors.InputError` naming the file, the line and the field, raised before
anything is written: an unknown column, an empty id, a score that is not a number or lies outside the scale, an
item with fewer than :data:`MIN_RATINGS_PER_ITEM` ratings (two held out as the truth, two to draw from), or a
single annotator.

:func:`flag_table` sets the annotator flags of a replay's ``aware`` campaigns beside each annotator's agreement over
all their ratings (:func:`annotator_agreement`): a flag a project manager can trust names an annotator whose ratings,
taken whole, do not follow the others'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.errors import InputError

#: Fewest ratings of an item: half are held out as the truth, the rest are the pool a campaign draws from.
MIN_RATINGS_PER_ITEM = 4
#: Largest items x annotators matrix of the pool (float32): 1.6 GB.
MAX_POOL_CELLS = 400_000_000
#: Agreement over all ratings at or above which an annotator should never be flagged ``random``.
TRUSTED_AGREEMENT = 0.6
FLAGS = ("random", "noisy", "collapsed")


@dataclass(frozen=True)
class Ratings:
    """Ratings coded for a replay.

    Attributes
    ----------
    item, annotator : ndarray of int64
        Positions in ``item_ids`` and ``annotator_ids``, one per rating.
    score : ndarray of float64
        The score on the unit scale, ``(x - scale[0]) / (scale[1] - scale[0])``.
    item_ids, annotator_ids : ndarray of object
        The ids as given (strings).
    scale : tuple of float
        The score range ``(min, max)``.
    source : str
        Where the ratings come from (a file name, or the shipped study's name).
    """

    item: NDArray[Any]
    annotator: NDArray[Any]
    score: NDArray[Any]
    item_ids: NDArray[Any]
    annotator_ids: NDArray[Any]
    scale: tuple[float, float]
    source: str

    @property
    def n_items(self) -> int:
        """Number of distinct items."""
        return int(self.item_ids.size)

    @property
    def n_annotators(self) -> int:
        """Number of distinct annotators."""
        return int(self.annotator_ids.size)

    @property
    def size(self) -> int:
        """Number of ratings."""
        return int(self.score.size)

    def per_item(self) -> NDArray[Any]:
        """Ratings per item."""
        out: NDArray[Any] = np.bincount(self.item, minlength=self.n_items)
        return out


def _locate(source: str, lines: NDArray[Any] | None, row: int, unit: str = "line") -> str:
    if lines is None:
        return f"{source}: row {row + 1}"
    return f"{source}:{int(lines[row])}" if unit == "line" else f"{source}:row {int(lines[row])}"


def _ids(frame: pd.DataFrame, name: str, source: str, where: Callable[[int], str]) -> NDArray[Any]:
    """The ids of column ``name`` as stripped strings; an empty one is an error."""
    col = frame[name]
    text = col.astype(str).str.strip()
    bad = col.isna().to_numpy() | (text == "").to_numpy()
    if bad.any():
        raise InputError(f"{where(int(np.flatnonzero(bad)[0]))}: field {name!r} is empty.", path=source, field=name)
    out: NDArray[Any] = text.to_numpy(dtype=object)
    return out


def _scores(
    raw: pd.Series, scale: tuple[float, float] | None, source: str, where: Callable[[int], str]
) -> tuple[NDArray[Any], tuple[float, float]]:
    """The scores as floats and the scale (default: their range); a score that is not a number or lies outside
    the scale is an error."""
    name = str(raw.name)
    score = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(score)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where(k)}: field {name!r}: {raw.iloc[k]!r} is not a number.", path=source, field=name)
    lo, hi = (float(score.min()), float(score.max())) if scale is None else (float(scale[0]), float(scale[1]))
    if not hi > lo:
        raise InputError(f"{source}: the score range {lo:g}-{hi:g} is empty; give the scale (MIN < MAX).", path=source)
    out = (score < lo) | (score > hi)
    if out.any():
        k = int(np.flatnonzero(out)[0])
        raise InputError(
            f"{where(k)}: field {name!r}: {score[k]:g} is outside the scale {lo:g}-{hi:g}.", path=source, field=name
        )
    return score, (lo, hi)


def _check_counts(r: Ratings, where: Callable[[int], str], item_column: str, annotator_column: str) -> Ratings:
    """``r`` if it has enough ratings per item (:data:`MIN_RATINGS_PER_ITEM`), two annotators at least, and a pool
    that fits in memory."""
    item, item_ids, annotator_ids, source = r.item, r.item_ids, r.annotator_ids, r.source
    counts = np.bincount(item)
    few = np.flatnonzero(counts < MIN_RATINGS_PER_ITEM)
    if few.size:
        n = int(counts[few[0]])
        raise InputError(
            f"{where(int(np.flatnonzero(item == few[0])[0]))}: item {item_ids[few[0]]!r} has {n} rating"
            f"{'s' if n != 1 else ''}; a replay needs at least {MIN_RATINGS_PER_ITEM} per item (half held out as the "
            "truth, the rest to draw from).",
            path=source,
            field=item_column,
        )
    if annotator_ids.size < 2:
        raise InputError(
            f"{source}: every rating is by one annotator ({annotator_ids[0]!r}); a replay needs at least two.",
            path=source,
            field=annotator_column,
        )
    if item_ids.size * annotator_ids.size > MAX_POOL_CELLS:
        raise InputError(
            f"{source}: {item_ids.size:,} items x {annotator_ids.size:,} annotators is too large for a replay "
            f"(at most {MAX_POOL_CELLS:,} pairs); replay a sample of the items.",
            path=source,
        )
    return r


def code_ratings(
    frame: pd.DataFrame,
    *,
    item_column: str = "item_id",
    annotator_column: str = "annotator",
    score_column: str = "score",
    scale: tuple[float, float] | None = None,
    source: str = "ratings",
    lines: NDArray[Any] | None = None,
    unit: str = "line",
) -> Ratings:
    """Check and code long-form ratings (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per rating.
    item_column, annotator_column, score_column : str
        Column names.
    scale : (float, float), optional
        The score range; default the smallest and largest score given.
    source : str
        The file name, for messages.
    lines : ndarray of int, optional
        The source line (or row) of each record, for messages; default the row number.
    unit : {"line", "row"}
        What ``lines`` counts.

    Returns
    -------
    Ratings

    Raises
    ------
    InputError
        The first problem found, located (module docstring).

    Examples
    --------
    >>> f = pd.DataFrame({"item_id": list("aaaabbbb"), "annotator": list("xyzwxyzw"),
    ...                   "score": [1, 2, 2, 3, 4, 5, 4, 5]})
    >>> r = code_ratings(f, scale=(1, 5))
    >>> r.n_items, r.n_annotators, r.score[:3].tolist()
    (2, 4, [0.0, 0.25, 0.25])
    >>> try:
    ...     code_ratings(f.iloc[1:], scale=(1, 5), source="pilot.csv")
    ... except InputError as e:
    ...     print(str(e)[:40])
    pilot.csv: row 1: item 'a' has 3 ratings
    """
    where = partial(_locate, source, lines, unit=unit)  # where(k): the location of record k, for messages
    for name in (item_column, annotator_column, score_column):
        if name not in frame.columns:
            cols = ", ".join(map(str, frame.columns))
            raise InputError(
                f"{source}: column {name!r} is missing (the columns are: {cols}).", path=source, field=name
            )
    if len(frame) == 0:
        raise InputError(f"{source}: no ratings.", path=source)
    item, item_ids = pd.factorize(_ids(frame, item_column, source, where))
    annotator, annotator_ids = pd.factorize(_ids(frame, annotator_column, source, where))
    score, (lo, hi) = _scores(frame[score_column], scale, source, where)
    ratings = Ratings(
        item=item.astype(np.int64),
        annotator=annotator.astype(np.int64),
        score=(score - lo) / (hi - lo),
        item_ids=np.asarray(item_ids, dtype=object),
        annotator_ids=np.asarray(annotator_ids, dtype=object),
        scale=(lo, hi),
        source=source,
    )
    return _check_counts(ratings, where, item_column, annotator_column)


def read_ratings(
    path: str | Path,
    *,
    item_column: str = "item_id",
    annotator_column: str | None = None,
    score_column: str = "score",
    scale: tuple[float, float] | None = None,
) -> Ratings:
    """Read and code a ratings file (CSV, TSV, JSONL or Parquet, by extension; :func:`core.tables.read_table`).

    ``annotator_column`` defaults to ``annotator``, else ``annotator_id`` (the shipped study's name). Other
    parameters and errors: :func:`code_ratings`.
    """
    from easl_toolkit.core.tables import read_table

    table = read_table(path)
    if annotator_column is None:
        cols = set(map(str, table.frame.columns))
        annotator_column = "annotator_id" if "annotator" not in cols and "annotator_id" in cols else "annotator"
    return code_ratings(
        table.frame,
        item_column=item_column,
        annotator_column=annotator_column,
        score_column=score_column,
        scale=scale,
        source=table.path,
        lines=table.lines,
        unit=table.unit,
    )


def shipped_ratings() -> Ratings:
    """The shipped real study (:func:`core.datasets.agh_tv_ratings`, scale 1-5) coded for a replay."""
    from easl_toolkit.core.datasets import AGH_TV, AGH_TV_SCALE, agh_tv_ratings

    return code_ratings(agh_tv_ratings(), annotator_column="annotator_id", scale=AGH_TV_SCALE, source=AGH_TV)


def annotator_agreement(r: Ratings) -> NDArray[Any]:
    """Each annotator's agreement over all their ratings: the Pearson correlation of their scores with the mean of
    the other annotators' scores of the same items (leave-one-annotator-out item means; NaN with fewer than 3
    scores or no spread). The reference the annotator flags of a replay are compared with."""
    n, na = r.n_items, r.n_annotators
    pair = r.item * na + r.annotator
    s_pair = np.bincount(pair, r.score, n * na)[pair]
    c_pair = np.bincount(pair, minlength=n * na)[pair].astype(np.float64)
    s_item = np.bincount(r.item, r.score, n)[r.item]
    c_item = np.bincount(r.item, minlength=n)[r.item].astype(np.float64)
    others = c_item - c_pair
    with np.errstate(invalid="ignore", divide="ignore"):
        loo = (s_item - s_pair) / others
    ok = others > 0
    from easl_toolkit.core.models.aware.diagnostics import group_corr

    return group_corr(r.annotator[ok], r.score[ok], loo[ok], na)


def flag_table(r: Ratings, diagnostics: pd.DataFrame) -> pd.DataFrame:
    """One row per annotator: ``annotator`` (id), ``ratings`` (all of theirs), ``agreement_all`` (over all their
    ratings), ``campaign_scores`` (mean scores they gave per ``aware`` campaign), and per flag the share of the
    campaigns (seeds) in which the flag was raised; sorted by agreement. Empty when no ``aware`` run was made."""
    if diagnostics is None or diagnostics.empty:
        return pd.DataFrame()
    n_seeds = max(int(diagnostics["seed"].nunique()), 1)
    ann = diagnostics["annotator"].to_numpy(dtype=np.int64)
    na = r.n_annotators
    out = pd.DataFrame(
        {
            "annotator": r.annotator_ids,
            "ratings": np.bincount(r.annotator, minlength=na),
            "agreement_all": annotator_agreement(r),
            "campaign_scores": np.bincount(ann, diagnostics["n_scores"].to_numpy(dtype=np.float64), na) / n_seeds,
        }
    )
    flag = diagnostics["flag"].astype(str).to_numpy()
    for name in FLAGS:
        out[name] = np.bincount(ann, (flag == name).astype(np.float64), na) / n_seeds
    return out.sort_values("agreement_all", kind="stable").reset_index(drop=True)


def flag_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Counts for the report: annotators flagged ``random`` in at least one campaign, those of them whose agreement
    over all ratings is at least :data:`TRUSTED_AGREEMENT`, and the same for ``noisy``."""
    if table.empty:
        return {}
    trusted = table["agreement_all"] >= TRUSTED_AGREEMENT
    out: dict[str, Any] = {"annotators": len(table), "trusted": int(trusted.sum())}
    for name in FLAGS:
        ever = table[name] > 0
        out[f"{name}_ever"] = int(ever.sum())
        out[f"{name}_trusted"] = int((ever & trusted).sum())
        out[f"{name}_mean_per_campaign"] = float(table[name].sum())
    return out
