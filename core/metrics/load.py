"""Reading evaluation input files (CSV, TSV, JSONL, Parquet; wide or long form) into the data model.

Wide form: one row per response, human score columns and system score columns.
Long form (the raw ratings of an export): one row per rating with item, rater and score columns. Every human
rater keeps its id and becomes one column of the responses x raters matrix (so Conger's kappa is computed per
rater and the result does not depend on the order of the rows). Columns are in the order the caller gives, else
by decreasing number of ratings, ties by rater id: the first column (the reference of the RSMTool comparisons)
is the rater who rated most. A rater who rated an item more than once keeps the first rating in file order (the
others are counted in a note); a row without a rater is the rater ``(none)``, as ``easl status`` names it. A
system is either a rater value in the rater column (its score for each item) or a column of the file (one value
per item). A project's ratings (:func:`load_campaign`) come as the rater table of
:mod:`core.metrics.project_raters`.

Errors are :class:`core.errors.InputError` sentences naming the file, the column and, where it applies, the line;
they say what is wrong with the input, never which command-line option to use (the front ends add that).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.errors import InputError
from easl_toolkit.core.metrics.project_raters import NO_ANNOTATOR, RaterSummary, RaterTable
from easl_toolkit.core.tables import Table, read_table


@dataclass
class EvaluationInput:
    """Loaded data: the (responses, raters) human scores with the raters' names, the systems' scores, the response
    ids, the groups, the notes of the reading, and (a project's) how its human raters were built."""

    human: NDArray[Any]  # (n, R)
    human_names: list[str]
    system: dict[str, NDArray[Any]]
    ids: NDArray[Any]  # (n,) response ids (strings)
    groups: NDArray[Any] | None
    notes: list[str]
    raters: RaterSummary | None = None


def _read(path: str | os.PathLike[str]) -> Table:
    """The table of ``path``; an InputError when it has no rows."""
    table = read_table(path)
    if table.frame.empty:
        raise InputError(f"{path}: the file has no rows.", path=path)
    return table


def _unique_ids(table: Table, id_col: str) -> NDArray[Any]:
    """The ids of column ``id_col`` as strings; an InputError naming the first repeated one."""
    ids: NDArray[Any] = table.frame[id_col].astype(str).to_numpy()
    dup = pd.Series(ids).duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputError(f"{table.location(i)}: column {id_col!r} repeats the id {ids[i]!r}.", field=id_col)
    return ids


def require_columns(df: Any, path: str | os.PathLike[str], cols: list[str], what: str = "column") -> None:
    """An InputError naming the first of ``cols`` that is not a column of ``df`` (a pandas or Dask frame)."""
    for c in cols:
        if c not in df.columns:
            shown = ", ".join(map(str, df.columns[:12])) + (", ..." if len(df.columns) > 12 else "")
            raise InputError(f"{path}: no {what} {c!r} (columns: {shown}).", path=path, field=c)


#: the largest magnitude of a score evaluated: the metrics square differences of scores and sum them over responses
#: (variances, MSE, PRMSE) and the standard errors square those again, so |x| <= 1e50 keeps every intermediate far
#: below float64's maximum (about 1.8e308: (2e50)^4 times a billion responses is 1.6e210); a larger score is refused
#: with its line rather than turned into overflow warnings and undefined figures
MAX_SCORE_MAGNITUDE = 1e50


def numeric_column(table: Table, col: str, *, strict: bool) -> NDArray[Any]:
    """A column as float64 with NaN for empty cells.

    Non-numeric cells: with ``strict`` an InputError naming the first bad line; otherwise NaN (the score policy then
    drops or counts them). A column with values but no numeric value at all is always an InputError. A value beyond
    ``MAX_SCORE_MAGNITUDE`` (infinity included) is an InputError naming its line.
    """
    raw = table.frame[col]
    values = pd.to_numeric(raw, errors="coerce")
    empty = raw.isna() | raw.astype(str).str.strip().isin(["", "nan", "NaN", "NA", "null", "None"])
    bad = values.isna() & ~empty
    out: NDArray[np.float64] = values.to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        huge = np.abs(out) > MAX_SCORE_MAGNITUDE
    problem = ""
    if bad.any() and (strict or bad.sum() == (~empty).sum()):
        i = int(np.flatnonzero(bad.to_numpy())[0])
        problem = f"has a non-numeric value {str(raw.iloc[i])[:40]!r}."
    elif huge.any():
        i = int(np.flatnonzero(huge)[0])
        problem = (
            f"has the value {str(raw.iloc[i])[:40]!r}, beyond {MAX_SCORE_MAGNITUDE:g} in magnitude: its squares "
            f"would overflow, so no metric could be computed."
        )
    if problem:
        raise InputError(f"{table.location(i)}: column {col!r} {problem}", field=col)
    return out


def frame_scores(frame: pd.DataFrame, col: str, table: Callable[[], Table], *, strict: bool) -> NDArray[Any]:
    """A column of a partition as float64: a typed numeric column (Parquet) as it is, NaN for missing; text parsed by
    :func:`numeric_column` on ``table()``."""
    if pd.api.types.is_numeric_dtype(frame[col].dtype):
        return np.asarray(frame[col].to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
    return numeric_column(table(), col, strict=strict)


def _distinct(path: str | os.PathLike[str], names: list[str], what: str) -> None:
    """Each name once: a human column named twice would be a rater compared with itself (r = 1, alpha = 1)."""
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(f"{path}: the {what} {name!r} is named twice.", path=path, field=name)


def load_wide(
    path: str | os.PathLike[str],
    *,
    human: list[str],
    system: list[str],
    id_col: str | None = None,
    group_col: str | None = None,
) -> EvaluationInput:
    """Read a wide file: one row per response with the named human and system score columns."""
    _distinct(path, human, "human score column")
    _distinct(path, system, "system score column")
    table = _read(path)
    df = table.frame
    require_columns(df, path, human, "human score column")
    require_columns(df, path, system, "system score column")
    if id_col:
        require_columns(df, path, [id_col], "id column")
    if group_col:
        require_columns(df, path, [group_col], "group column")
    h = np.column_stack([numeric_column(table, c, strict=False) for c in human])
    sys = {c: numeric_column(table, c, strict=True) for c in system}
    ids = _unique_ids(table, id_col) if id_col else np.array([str(i) for i in range(len(df))])
    groups = df[group_col].astype(str).to_numpy() if group_col else None
    return EvaluationInput(h, list(human), sys, ids, groups, [])


def load_long(
    path: str | os.PathLike[str],
    *,
    columns: tuple[str, str, str],
    system: list[str],
    human: list[str] | None = None,
    group_col: str | None = None,
) -> EvaluationInput:
    """Read the long form (``columns`` = the item, rater and score column names) and pivot it into rating slots."""
    item_c, rater_c, score_c = columns
    _distinct(path, human or [], "human rater")
    _distinct(path, system, "system")
    table = _read(path)
    df = table.frame
    require_columns(df, path, [item_c, rater_c, score_c], "long-form column")
    if group_col:
        require_columns(df, path, [group_col], "group column")
    score = numeric_column(table, score_c, strict=True)
    items = df[item_c].astype(str).to_numpy()
    raters = rater_ids(df[rater_c])
    row_of, uniques = pd.factorize(items)  # items in order of first appearance
    ids = uniques.astype(str)
    n = ids.size
    rater_systems = long_rater_systems(path, rater_c, set(raters), df.columns, system, human)
    rows = LongRows(table, raters, score, items, row_of, n, rater_systems, partial(numeric_column, table, strict=True))
    sys = {s: long_system_scores(rows, s) for s in system}
    is_human = ~np.isin(raters, rater_systems)
    if human:
        is_human &= np.isin(raters, human)
    is_human &= ~np.isnan(score)
    hr = np.flatnonzero(is_human)
    h, names, repeats = rater_matrix(row_of[hr], raters[hr], score[hr], n, order=human)
    groups = None  # each item's first label (row_of numbers every item: the groups' index is 0..n-1)
    if group_col:
        groups = pd.Series(df[group_col].astype(str).to_numpy()).groupby(row_of).first().to_numpy(dtype=object)
    return EvaluationInput(h, names, sys, ids, groups, long_notes(hr.size, n, len(names), repeats))


def long_notes(n_ratings: int, n_items: int, n_raters: int, repeats: int) -> list[str]:
    """The notes of a long-form input: what was read and the repeated ratings left out."""
    notes = [f"long form: {n_ratings} human ratings of {n_items} items by {n_raters} rater(s)"]
    if repeats:
        notes.append(f"{repeats} repeated rating(s) of an item by the same rater left out (the first one is kept)")
    return notes


def long_rater_systems(
    path: str | os.PathLike[str],
    rater_col: str,
    raters: Collection[str],
    columns: Collection[str],
    system: Collection[str],
    human: Collection[str] | None,
) -> list[str]:
    """The systems of the long form that are values of the rater column ``rater_col``; an InputError for a system
    that is neither a rater nor a column, or a human rater who does not appear."""
    for s in system:
        if s not in raters and s not in columns:
            raise InputError(
                f"{path}: system {s!r} is neither a value of the rater column {rater_col!r} nor a column.", path=path
            )
    unknown = [r for r in human or () if r not in raters]
    if unknown:
        raise InputError(
            f"{path}: human rater {unknown[0]!r} does not appear in column {rater_col!r}.", path=path, field=rater_col
        )
    return [s for s in system if s in raters]


@dataclass(frozen=True)
class LongRows:
    """The rows of a long-form table, read once for the scores of its systems (:func:`long_system_scores`).

    Attributes
    ----------
    table : Table
        The table read (for the line of an error).
    raters, score, items : arrays
        Each row's rater id, score and item id.
    row_of : array of int
        Each row's item row, ``0 .. n - 1``.
    n : int
        The number of items.
    rater_systems : collection of str
        The systems that are values of the rater column.
    column : callable
        ``column(name)``: the numbers of the column ``name``.
    """

    table: Table
    raters: NDArray[Any]
    score: NDArray[Any]
    items: NDArray[Any]
    row_of: NDArray[Any]
    n: int
    rater_systems: Collection[str]
    column: Callable[[str], NDArray[Any]]


def long_system_scores(rows: LongRows, s: str) -> NDArray[Any]:
    """The scores of system ``s`` of the long form by item row (``rows.row_of``; ``rows.n`` items): the rows whose
    rater is ``s`` (one per item), or the column ``s`` (``rows.column(s)``: its numbers; one value per item)."""
    v = np.full(rows.n, np.nan)
    row_of, items = rows.row_of, rows.items
    if s in rows.rater_systems:
        sel = np.flatnonzero(rows.raters == s)
        dup = pd.Series(row_of[sel]).duplicated().to_numpy()
        if dup.any():
            i = int(sel[np.flatnonzero(dup)[0]])
            raise InputError(f"{rows.table.location(i)}: system {s!r} scores item {items[i]!r} more than once.")
        v[row_of[sel]] = rows.score[sel]
        return v
    col = rows.column(s)
    ok = ~np.isnan(col)
    per_item = pd.DataFrame({"r": row_of[ok], "v": col[ok]}).groupby("r")["v"]
    lo, hi = per_item.min(), per_item.max()
    conflict = lo.index[(hi - lo).abs().to_numpy() > 0]
    if conflict.size:
        i = int(np.flatnonzero((row_of == int(conflict[0])) & ok)[0])
        raise InputError(f"{rows.table.location(i)}: column {s!r} has different values for item {items[i]!r}.", field=s)
    v[lo.index.to_numpy()] = lo.to_numpy()
    return v


def rater_ids(values: pd.Series) -> NDArray[Any]:
    """The rater column as ids: a missing or empty cell is the rater :data:`core.metrics.project_raters.NO_ANNOTATOR`
    (``"(none)"``, as ``easl status --annotators`` and ``easl ingest`` name ratings without an annotator)."""
    missing = values.isna().to_numpy()
    out: NDArray[Any] = values.astype(str).to_numpy()
    none = missing | (np.char.str_len(out.astype(str)) == 0) if out.size else missing
    if none.any():
        out = out.astype(object)
        out[none] = NO_ANNOTATOR
    return out


def rater_matrix(
    rows: NDArray[Any], raters: NDArray[Any], scores: NDArray[Any], n: int, *, order: list[str] | None = None
) -> tuple[NDArray[Any], list[str], int]:
    """The (n, raters) matrix of ratings given as (row, rater id, score) triples, one column per rater.

    Columns follow ``order`` when given, else decreasing number of ratings, ties by rater id (independent of the
    order of the triples). A repeated (row, rater) keeps its first score. Returns the matrix, the rater ids and the
    number of repeats left out.
    """
    ids, col, counts = np.unique(raters.astype(str), return_inverse=True, return_counts=True)
    if order:
        rank = {r: i for i, r in enumerate(order)}
        columns = sorted(range(ids.size), key=lambda k: rank.get(ids[k], len(rank)))
    else:
        columns = sorted(range(ids.size), key=lambda k: (-counts[k], ids[k]))
    position = np.empty(ids.size, dtype=np.int64)
    position[columns] = np.arange(ids.size)
    j = position[col]
    first = ~pd.Series(rows * max(ids.size, 1) + j).duplicated().to_numpy()
    h = np.full((n, max(ids.size, 1)), np.nan)
    h[rows[first], j[first]] = scores[first]
    return h, [str(ids[k]) for k in columns] or ["rating"], int((~first).sum())


@dataclass(frozen=True)
class SystemFile:
    """A table of system scores per item: its ``path``, the score ``columns`` (None: every numeric column but the id
    and the group), the id column ``id_col`` and an optional group column ``group_col`` (of this file or an extra
    column of the project's items)."""

    path: str | os.PathLike[str]
    columns: list[str] | None = None
    id_col: str = "item_id"
    group_col: str | None = None


def load_campaign(raters: RaterTable, items: pd.DataFrame, scores: SystemFile) -> EvaluationInput:
    """The human raters of an annotation campaign, with a scoring system's scores per item.

    ``raters`` is the campaign's rater table (:func:`core.metrics.project_raters.rater_table`: one score per item and
    rater, how it was built, its notes), ``items`` the project's items (``item_id`` and extra columns, as
    ``Project.items``), ``scores`` the file of system scores (:class:`SystemFile`). Every rater becomes one human
    column (:func:`rater_matrix`: most items first); every item with a rating or a system score is a response.
    """
    system_path, system, id_col, group_col = scores.path, scores.columns, scores.id_col, scores.group_col
    table = _read(system_path)
    df = table.frame
    require_columns(df, system_path, [id_col], "id column")
    if not system:
        numeric = [c for c in df.columns if pd.to_numeric(df[c], errors="coerce").notna().any()]
        system = [c for c in numeric if c not in (id_col, group_col)]
        if not system:
            raise InputError(f"{system_path}: no numeric score column besides {id_col!r}.", path=system_path)
    require_columns(df, system_path, system, "system score column")
    sys_ids = _unique_ids(table, id_col)
    known = set(items["item_id"].astype(str))
    unknown = [i for i in sys_ids if i not in known]
    if unknown:
        raise InputError(
            f"{system_path}: item {unknown[0]!r} is not an item of the project ({len(unknown)} unknown id(s)).",
            path=system_path,
            field=id_col,
        )
    rated = raters.scores
    ids = pd.unique(pd.concat([rated["item_id"].astype(str), pd.Series(sys_ids)], ignore_index=True))
    row_of = pd.Series(np.arange(ids.size), index=ids)
    n = ids.size
    h, names, _ = rater_matrix(
        row_of[rated["item_id"].astype(str)].to_numpy(),
        rated["annotator"].astype(str).to_numpy(),
        rated["score"].to_numpy(dtype=np.float64),
        n,
    )  # one row per (item, rater): the rater table averaged the repeats
    sys_rows = row_of[sys_ids].to_numpy()
    by_system = {}
    for s in system:
        v = np.full(n, np.nan)
        v[sys_rows] = numeric_column(table, s, strict=True)
        by_system[s] = v
    groups = _campaign_groups(table, items, sys_ids, ids, group_col) if group_col else None
    n_ratings = int(rated["n_ratings"].sum()) if "n_ratings" in rated else len(rated)
    notes = [
        f"campaign: {n_ratings} ratings of {int(np.isfinite(h).any(axis=1).sum())} items by {len(names)} "
        f"human rater(s) ({', '.join(names)}); {sys_rows.size} items with system scores",
        *raters.notes,
    ]
    return EvaluationInput(h, names, by_system, np.asarray(ids, dtype=str), groups, notes, raters.summary)


def _campaign_groups(
    table: Table, items: pd.DataFrame, sys_ids: NDArray[Any], ids: NDArray[Any], group_col: str
) -> NDArray[Any]:
    """Each response's group: column ``group_col`` of the system file, else an extra column of the items."""
    df = table.frame
    if group_col in df.columns:
        source = pd.Series(df[group_col].astype(str).to_numpy(), index=sys_ids)
    elif group_col in items.columns:
        source = pd.Series(items[group_col].astype(str).to_numpy(), index=items["item_id"].astype(str))
    else:
        raise InputError(
            f"{table.path}: no group column {group_col!r} in the file or the project's items.",
            path=table.path,
            field=group_col,
        )
    out: NDArray[Any] = source.reindex(ids).to_numpy(dtype=object)
    return out
