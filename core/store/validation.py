"""Validation of annotation rows before they enter the observation log.

A batch is checked whole and vectorised (pandas/numpy); every bad row gets one reason, reported as
``"file:line: field: reason"``. Checks, in order:

1. ``score``: missing, not a number, NaN, infinite, outside the project's score range.
2. ids (``item_id``, ``hit_id``, ``annotator``, ``annotation_id``): a JSON object, array or boolean; a control
   character or an unpaired surrogate. Ids are taken in Unicode NFC (``core.store.cells.checked_ids``), so ids that
   differ only in normalisation are one id. ``created_at``, when given: an ISO-8601 timestamp (it is stored as
   given). ``item_id``: missing or unknown (an id written neutralised for spreadsheets by easl, ``'=x``, is
   found as the item ``=x``: ``core.outputs.restore_cell``).
3. ``hit_id`` (when given): unknown, retracted, or the item is not in that HIT. Methods that compare the scores
   of a HIT (``Model.whole_submissions``: RA, TrueSkill) require it.
4. Conflicts inside the batch: two rows with the same idempotency key and different scores (e.g. two anonymous
   scores of one item); an ``annotation_id`` spanning several HITs.
5. For ``whole_submissions`` models: a HIT submission (rows with one annotation_id, else one (hit_id, annotator))
   that lacks a valid score for some item of its HIT; all its rows are rejected.

Idempotency key (README, ``easl ingest``): ``(annotation_id, item_id)`` when ``annotation_id`` is given, else
``(hit_id, item_id, annotator)`` with missing parts empty. Group key (the HIT submission, used by pairwise
models): ``annotation_id`` when given, else ``(hit_id, annotator)``; rows with neither belong to no submission
(empty group key; only the commutative models, which ignore groups, accept such rows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.errors import InputError
from easl_toolkit.core.outputs import restore_cell
from easl_toolkit.core.store.cells import (
    SEP,
    ArrowCells,
    Locations,
    arrow_cells,
    arrow_ids,
    bad_id_kinds,
    checked_ids,
    codes,
    combine,
    decimals,
    first_of,
    id_strings,
    item_positions,
    not_timestamps,
    numbers,
    positions,
    present,
    short_text,
    strip_strings,
)
from easl_toolkit.core.tables import Table

__all__ = ["Batch", "ID_COLUMNS", "INPUT_COLUMNS", "SEP", "bad_id_kinds", "id_strings", "normalize_rows", "validate"]

ID_COLUMNS = ("item_id", "hit_id", "annotator", "annotation_id")
REJECT_COLUMNS = ("item_id", "score", "hit_id", "annotator", "annotation_id")  #: the row as given, in a reject
INPUT_COLUMNS = ("item_id", "score", "hit_id", "annotator", "annotation_id", "created_at")


@dataclass
class Batch:
    """A validated batch of annotation rows.

    Attributes
    ----------
    valid : pandas.DataFrame
        Rows that passed, in input order: ``row`` (0-based input position; its location is ``locations[row]``),
        ``item_id``, ``item_idx``, ``score_raw``, ``score01``, ``hit_id``, ``annotator``, ``annotation_id``,
        ``created_at``, ``group`` (an integer code of the HIT submission), ``hit_pos`` (the position of the row's
        HIT among the batch's HITs, -1 without one), ``hit_size`` (the number of distinct items of the row's HIT, 0
        without one), ``repeat`` (True for a later copy of an earlier row: same key and score).
    rejects : pandas.DataFrame
        ``location, field, reason`` and the row as given (``item_id, score, hit_id, annotator, annotation_id``).
    n_rows : int
    """

    valid: pd.DataFrame
    rejects: pd.DataFrame
    n_rows: int
    messages: list[str] = field(default_factory=list)
    locations: Locations = field(default_factory=Locations)


def normalize_rows(rows: Any, source: str) -> tuple[pd.DataFrame, Locations, str]:
    """Turn a ``Table``, a DataFrame or a list of dicts into a frame of object columns ``INPUT_COLUMNS`` plus the
    location of every row: ``(frame, locations, name)``, ``name`` the file name or ``source`` (used in messages).
    Raises ``InputError`` when ``item_id`` or ``score`` is not a column.
    """
    locations: Locations
    if isinstance(rows, Table):
        frame, name = rows.frame, rows.path
        locations = Locations(f"{name}:" if rows.unit == "line" else f"{name}:row ", np.asarray(rows.lines))
    else:
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame.from_records(list(rows))
        frame = frame.reset_index(drop=True)
        name = source
        if "location" in frame.columns:
            locations = Locations(texts=frame["location"].astype(object).to_numpy())
        else:
            locations = Locations(f"{source}:row ", np.arange(1, len(frame) + 1, dtype=np.int64))
    missing = [c for c in ("item_id", "score") if c not in frame.columns]
    if missing:
        cols = ", ".join(map(str, frame.columns)) or "(none)"
        raise InputError(
            f"{name}: column {missing[0]!r} is missing (the columns are: {cols}); annotations need "
            f"item_id and score, and may have hit_id, annotator, annotation_id.",
            path=name,
            field=missing[0],
        )
    # object columns throughout validation: pandas' Arrow-backed strings would convert every column at each step
    out = pd.DataFrame(
        {
            col: pd.Series(
                frame[col].to_numpy(dtype=object) if col in frame.columns else np.full(len(frame), None, dtype=object),
                dtype=object,
            )
            for col in INPUT_COLUMNS
        },
        index=pd.RangeIndex(len(frame)),
    )
    out.attrs["unpadded"] = isinstance(rows, Table) and rows.unpadded
    out.attrs["printable"] = isinstance(rows, Table) and rows.printable
    if isinstance(rows, Table) and rows.arrow is not None:
        ArrowCells.attach(out, {k: v for k, v in rows.arrow.items() if k in INPUT_COLUMNS and len(v) == len(out)})
    return out, locations, name


def _object_frame(columns: dict[str, NDArray[Any]]) -> pd.DataFrame:
    """A DataFrame of the arrays, object arrays kept as object columns (not Arrow-backed strings)."""
    return pd.DataFrame({k: pd.Series(v, dtype=object) if v.dtype == object else v for k, v in columns.items()})


class _Reasons:
    """The first reason found for each bad row of a batch: ``field`` and ``reason`` by row, ``bad`` where given."""

    def __init__(self, n: int) -> None:
        self.field = np.full(n, None, dtype=object)
        self.reason = np.full(n, None, dtype=object)
        self.bad = np.zeros(n, dtype=bool)

    def flag(self, mask: NDArray[Any], field_name: str, text: str | Callable[[int], str]) -> None:
        """Give the rows of ``mask`` not bad yet the reason ``text`` (or ``text(row)``, a row's own)."""
        mask = np.asarray(mask, dtype=bool) & ~self.bad
        if not mask.any():
            return
        self.bad[mask] = True
        self.field[mask] = field_name
        if callable(text):
            self.reason[mask] = np.asarray([text(i) for i in np.flatnonzero(mask).tolist()], dtype=object)
        else:
            self.reason[mask] = text


def validate(
    frame: pd.DataFrame,
    locations: Locations,
    *,
    item_index: pd.Index,
    hits: pd.DataFrame,
    score_min: float,
    score_max: float,
    whole_submissions: bool,
    method: str,
) -> Batch:
    """Validate annotation rows (see the module docstring for the checks and keys).

    Parameters
    ----------
    frame : DataFrame from :func:`normalize_rows`.
    locations : :class:`core.store.cells.Locations`, ``"file:line"`` of each row.
    item_index : pandas.Index of the project's item ids (position = item index).
    hits : DataFrame ``hit_id, status, item_idx`` for (at least) every HIT named in the batch.
    score_min, score_max : the project's score range (inclusive).
    whole_submissions : whether the model compares every score of a HIT submission (``Model.whole_submissions``).
    method : the method's name (for messages).
    """
    why = _Reasons(len(frame))
    padded = not frame.attrs.get("unpadded", False)  # (core.tables.Table.unpadded: no cell to strip)
    num = _check_scores(frame, why, padded, score_min, score_max)
    ids = _check_ids(frame, why, padded)
    known = item_index.to_numpy(dtype=object)
    item_idx = _check_items(frame, why, padded, ids, known, hits)
    item_id, hit_id = ids["item_id"], ids["hit_id"]
    has_hit = present(hit_id.to_numpy())
    if whole_submissions:
        why.flag(~has_hit, "hit_id", f"a hit_id is required: method {method!r} compares the scores of a whole HIT")
    row_hit, hit_size = _check_hits(
        why, item_id, hit_id, has_hit, item_idx, len(item_index), hits, ids["arrow"].get("hit_id")
    )
    key_code, group_code = _check_keys(why, num, ids, has_hit, item_idx, locations)
    if whole_submissions:
        _check_whole_hits(why, group_code, hit_id, item_idx, item_index, hits, method)
    bad_rows, good = np.flatnonzero(why.bad), np.flatnonzero(~why.bad)
    rejects = _object_frame(
        {
            "location": locations[bad_rows],
            "field": why.field[bad_rows],
            "reason": why.reason[bad_rows],
            **{c: frame[c].to_numpy(dtype=object)[bad_rows] for c in REJECT_COLUMNS},
        }
    )
    valid = _object_frame(
        {
            "row": good,
            "item_id": item_id.to_numpy(dtype=object)[good],
            "item_idx": item_idx[good],
            "score_raw": num[good],
            "score01": np.clip((num[good] - score_min) / (score_max - score_min), 0.0, 1.0),
            **{c: ids[c].to_numpy(dtype=object)[good] for c in ("hit_id", "annotator", "annotation_id")},
            "created_at": ids["created_at"].to_numpy(dtype=object)[good],
            "group": group_code[good],
            "hit_pos": row_hit[good],
            "hit_size": hit_size[good],
        }
    )
    valid["repeat"] = first_of(key_code[good]) != np.arange(good.size)
    where = locations[bad_rows].tolist()
    messages = [f"{at}: {why.field[i]}: {why.reason[i]}" for at, i in zip(where, bad_rows.tolist())]
    return Batch(valid=valid, rejects=rejects, n_rows=len(frame), messages=messages, locations=locations)


def _check_scores(frame: pd.DataFrame, why: _Reasons, padded: bool, score_min: float, score_max: float) -> NDArray[Any]:
    """Check 1: the scores as numbers (NaN where not one), their problems flagged."""
    cells = arrow_cells(frame, "score")
    plain = decimals(cells) if cells is not None else None
    if plain is not None:  # every cell a plain decimal number: none missing, none NaN
        _flag_range(why, plain, score_min, score_max)
        return plain
    n = len(frame)
    raw = pd.Series(frame["score"].to_numpy(dtype=object), dtype=object)
    raw_kind = pd.api.types.infer_dtype(raw, skipna=True)
    if raw_kind == "string":  # CSV cells: stripped where padded
        cells = raw.to_numpy(dtype=object)
        stripped = cells.copy()
        if padded:
            given = pd.notna(cells)
            stripped[given] = strip_strings(cells[given])
        raw_str = pd.Series(stripped, dtype=object)
    else:
        raw_str = pd.Series(raw.astype(str).to_numpy(dtype=object), dtype=object).str.strip()
    is_missing = raw.isna().to_numpy() | (raw_str == "").to_numpy()
    num, too_large = numbers(raw)
    if raw_kind not in ("string", "empty", "floating", "integer"):
        is_bool = np.fromiter((isinstance(v, (bool, np.bool_)) for v in raw.tolist()), dtype=bool, count=n)
        num[is_bool] = np.nan  # JSON true/false are not scores
    raw_text = np.full(n, "", dtype=object)  # the lower-case text of the cells that are not numbers
    not_number = np.flatnonzero(np.isnan(num))
    raw_text[not_number] = raw_str.iloc[not_number].astype(str).str.lower().to_numpy(dtype=object)
    why.flag(is_missing, "score", "the score is missing")
    why.flag(too_large, "score", lambda i: f"the number has {len(str(abs(raw.iloc[i])))} digits, too large for a score")
    why.flag(np.isnan(num) & np.isin(raw_text, ["nan", "-nan", "+nan"]), "score", "NaN is not a score")
    why.flag(np.isnan(num), "score", lambda i: f"not a number ({raw.iloc[i]!r})")
    _flag_range(why, num, score_min, score_max)
    return num


def _flag_range(why: _Reasons, num: NDArray[Any], score_min: float, score_max: float) -> None:
    """Check 1's last: infinite scores and scores outside the project's range."""
    why.flag(np.isinf(num), "score", "the score is infinite")
    with np.errstate(invalid="ignore"):
        out_of_range = (num < score_min) | (num > score_max)
    why.flag(
        out_of_range,
        "score",
        lambda i: f"{num[i]:g} is outside the project's score range [{score_min:g}, {score_max:g}]",
    )


def _check_ids(frame: pd.DataFrame, why: _Reasons, padded: bool) -> dict[str, Any]:
    """Check 2: the ids are strings or integers, as texts in NFC without control characters, and ``created_at`` a
    timestamp. Returns the ids (Series of texts) by column, ``created_at``, under ``"item_id changed"`` where NFC
    changed an item id, and under ``"arrow"`` the ids that are the frame's Arrow cells as they are
    (:func:`core.store.cells.arrow_ids`) as Arrow arrays by column."""

    def not_an_id(cells: pd.Series, kinds: NDArray[Any], what: str) -> Callable[[int], str]:
        return lambda i: (
            f"the {what} must be a string or an integer, not a JSON {kinds[i]} ({short_text(cells.iloc[i])})"
        )

    def not_text(checked: Any, what: str) -> Callable[[int], str]:
        return lambda i: str(checked.reason(i, what))

    for col in ID_COLUMNS:
        kinds = bad_id_kinds(frame[col]) if arrow_cells(frame, col) is None else None  # (Arrow cells: strings)
        if kinds is not None:  # (!= None: elementwise over an object array)
            why.flag(kinds != None, col, not_an_id(frame[col], kinds, col.replace("_", " ")))  # noqa: E711
    printable = bool(frame.attrs.get("printable", False))
    ids: dict[str, Any] = {"arrow": {}}
    for col in ID_COLUMNS:
        cells = arrow_cells(frame, col)
        given = id_strings(frame[col], padded=padded, cells=cells).to_numpy(dtype=object)
        checked = checked_ids(given, printable=printable)
        if checked.bad is not None:
            why.flag(checked.bad, col, not_text(checked, col.replace("_", " ")))
        ids[col] = pd.Series(checked.values, dtype=object)
        if cells is not None and not padded and checked.changed is None:
            ids["arrow"][col] = arrow_ids(cells)
        if col == "item_id":
            ids["item_id changed"] = checked.changed
    created_at = id_strings(frame["created_at"], padded=padded, cells=arrow_cells(frame, "created_at"))
    created_at = created_at.to_numpy(dtype=object)
    why.flag(
        not_timestamps(created_at),
        "created_at",
        lambda i: f"{short_text(created_at[i])} is not an ISO-8601 timestamp (e.g. 2026-11-26T12:00:00Z)",
    )
    ids["created_at"] = pd.Series(created_at, dtype=object)
    return ids


def _check_items(
    frame: pd.DataFrame, why: _Reasons, padded: bool, ids: dict[str, Any], known: NDArray[Any], hits: pd.DataFrame
) -> NDArray[Any]:
    """Check 2, items: each row's item index (-1 when missing or unknown); an id as given (not NFC, as an older
    project may hold it) or neutralised for spreadsheets (``'=x``: ``ids["item_id"]`` restored) is found too."""
    item_id = ids["item_id"]
    why.flag(~present(item_id.to_numpy()), "item_id", "the item id is missing")
    item_idx = item_positions(item_id.to_numpy(dtype=object), known, hits, ids["arrow"].get("item_id"))
    changed = ids["item_id changed"]
    if changed is not None:
        again = np.flatnonzero((item_idx < 0) & changed)
        if again.size:
            given = id_strings(frame["item_id"], padded=padded).to_numpy(dtype=object)[again]
            item_idx[again] = positions(given, known)
    unknown = item_idx < 0
    quoted = np.flatnonzero(unknown & present(item_id.to_numpy())) if unknown.any() else np.zeros(0, np.int64)
    if quoted.size:
        quoted = quoted[[v.startswith("'") for v in item_id.to_numpy(dtype=object)[quoted].tolist()]]
        if quoted.size:
            restored = np.asarray([restore_cell(v) for v in item_id.to_numpy(dtype=object)[quoted].tolist()], object)
            found = positions(restored, known)
            item_idx[quoted] = found
            item_id.iloc[quoted[found >= 0]] = restored[found >= 0]
    why.flag(item_idx < 0, "item_id", lambda i: f"unknown item {item_id.iloc[i]!r}")
    return item_idx


def _check_hits(
    why: _Reasons,
    item_id: pd.Series,
    hit_id: pd.Series,
    has_hit: NDArray[Any],
    item_idx: NDArray[Any],
    n_items: int,
    hits: pd.DataFrame,
    cells: Any = None,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Check 3: a HIT given is known, not retracted, and holds the row's item. Returns each row's HIT position
    among the distinct ids of ``hits`` (-1: none or unknown) and the number of distinct items of its HIT (0:
    none). ``cells``: ``hit_id`` as an Arrow array too, or None."""
    n = len(hit_id)
    hit_ids = hits["hit_id"].to_numpy(dtype=object)
    first = np.flatnonzero(np.r_[True, hit_ids[1:] != hit_ids[:-1]]) if len(hits) else np.zeros(0, dtype=np.int64)
    distinct = hit_ids[first]  # hits lists each HIT's rows together
    given = hit_id.to_numpy(dtype=object) if cells is None else cells
    row_hit = positions(given, distinct) if len(hits) else np.full(n, -1, dtype=np.int64)
    status_of = np.append(hits["status"].to_numpy(dtype=object)[first], np.full(1, None, dtype=object))  # last: unknown
    hit_status = status_of[np.where(row_hit >= 0, row_hit, len(first))]
    hit_known = row_hit >= 0
    why.flag(has_hit & ~hit_known, "hit_id", lambda i: f"unknown HIT {hit_id.iloc[i]!r}")
    why.flag(has_hit & (hit_status == "retracted"), "hit_id", lambda i: f"HIT {hit_id.iloc[i]!r} was retracted")
    in_hit = np.zeros(n, dtype=bool)
    hit_size = np.zeros(n, dtype=np.int64)
    if len(hits):
        width = np.int64(max(n_items, int(hits["item_idx"].max()) + 1) + 1)
        hit_of = np.cumsum(np.r_[True, hit_ids[1:] != hit_ids[:-1]]) - 1
        pairs = np.unique(hit_of * width + hits["item_idx"].to_numpy(dtype=np.int64))
        hit_size[hit_known] = np.bincount(pairs // width, minlength=len(first))[row_hit[hit_known]]
        asked = hit_known & (item_idx >= 0)
        wanted = row_hit[asked] * width + item_idx[asked]
        at = np.minimum(np.searchsorted(pairs, wanted), len(pairs) - 1)
        in_hit[asked] = pairs[at] == wanted
    why.flag(
        has_hit & hit_known & (item_idx >= 0) & ~in_hit,
        "item_id",
        lambda i: f"item {item_id.iloc[i]!r} is not in HIT {hit_id.iloc[i]!r}",
    )
    return row_hit, hit_size


def _check_keys(
    why: _Reasons,
    num: NDArray[Any],
    ids: dict[str, Any],
    has_hit: NDArray[Any],
    item_idx: NDArray[Any],
    locations: Locations,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Check 4, conflicts inside the batch among the rows valid so far: two rows with one key and different
    scores; an annotation id spanning several HITs. Returns the key and group codes of every row (integers)."""
    n = len(num)
    annotation_id, annotator = ids["annotation_id"], ids["annotator"]
    has_ann = present(annotation_id.to_numpy())

    def coded(col: str, given: bool) -> NDArray[Any]:
        cells = ids["arrow"].get(col)
        return codes(ids[col].to_numpy(dtype=object) if cells is None else cells) if given else np.zeros(n, np.int64)

    ann_code, hit_code = coded("annotation_id", bool(has_ann.any())), coded("hit_id", bool(has_hit.any()))
    annotator_code = coded("annotator", bool(present(annotator.to_numpy()).any()))
    # (annotation_id, item) with an annotation id, else (hit_id, item, annotator); the submission: annotation_id,
    # else (hit_id, annotator) with a HIT, else none (tag 0)
    key_code = combine(has_ann, np.where(has_ann, ann_code, hit_code), item_idx + 1, annotator_code * ~has_ann)
    group_tag = np.where(has_ann, 1, np.where(has_hit, 2, 0))
    group_code = combine(group_tag, np.where(has_ann, ann_code, hit_code), annotator_code * (group_tag == 2))
    rows = np.flatnonzero(~why.bad)
    if rows.size:
        first = rows[first_of(key_code[rows])]  # the first row (valid so far) with each row's key
        conflict = num[rows] != num[first]
        if conflict.any():
            mask = np.zeros(n, dtype=bool)
            mask[rows[conflict]] = True
            firsts = dict(zip(rows[conflict].tolist(), locations[first[conflict]].tolist()))
            why.flag(
                mask,
                "score",
                lambda i: (
                    f"conflicts with {firsts[i]} (same annotation_id and item, different score)"
                    if has_ann[i]
                    else f"conflicts with {firsts[i]} (same item, HIT and annotator, different score); give each "
                    f"score an annotation_id or an annotator"
                ),
            )
    ok = ~why.bad
    if (ok & has_ann & has_hit).any():
        sub = pd.DataFrame(
            {"ann": ann_code[ok & has_ann], "hit": hit_code[ok & has_ann]}, index=np.flatnonzero(ok & has_ann)
        )
        spread = sub.groupby("ann", sort=False)["hit"].transform("nunique").to_numpy() > 1
        if spread.any():
            mask = np.zeros(n, dtype=bool)
            mask[sub.index.to_numpy()[spread]] = True
            why.flag(mask, "annotation_id", lambda i: f"annotation {annotation_id.iloc[i]!r} covers several HITs")
    return key_code, group_code


def _check_whole_hits(
    why: _Reasons,
    group_code: NDArray[Any],
    hit_id: pd.Series,
    item_idx: NDArray[Any],
    item_index: pd.Index,
    hits: pd.DataFrame,
    method: str,
) -> None:
    """Check 5 (methods that compare the scores of a HIT): a submission lacking a valid score for some item of
    its HIT; all its rows are rejected, with one message per submission."""
    rows = np.flatnonzero(~why.bad)
    if not rows.size:
        return
    sub = pd.DataFrame(
        {"group": group_code[rows], "hit": hit_id.to_numpy(dtype=object)[rows], "item": item_idx[rows]}, index=rows
    )
    seen = sub.drop_duplicates(["group", "item"]).groupby("group", sort=False)["item"].size()
    hit_sizes = hits.drop_duplicates(["hit_id", "item_idx"]).groupby("hit_id")["item_idx"].size()
    group_hit = sub.drop_duplicates("group").set_index("group")["hit"]
    need = group_hit.map(hit_sizes)
    short = seen.index[(seen.reindex(need.index).to_numpy() < need.to_numpy())]
    if not len(short):
        return
    short_set = set(short.tolist())
    hit_items = hits.groupby("hit_id")["item_idx"].agg(lambda s: sorted(set(s.tolist())))
    got_items = sub[sub["group"].isin(short_set)].groupby("group")["item"].agg(set)
    texts = {}
    for g, got in got_items.items():  # one entry per incomplete submission (a bad group, not a row)
        h = group_hit[g]
        lacking = [str(item_index[j]) for j in hit_items[h] if j not in got]
        texts[g] = (
            f"the submission for HIT {h!r} lacks valid scores for items {', '.join(lacking)}; "
            f"method {method!r} compares the scores of a whole HIT"
        )
    mask = np.zeros(len(group_code), dtype=bool)
    mask[rows] = np.isin(group_code[rows], list(short_set))
    why.flag(mask, "hit_id", lambda i: texts[group_code[i]])
