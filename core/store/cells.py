"""Cells of annotation rows, vectorised: ids as stripped strings, scores as numbers, and the Arrow lookups and
codes that validation (:mod:`core.store.validation`) builds on.

Ids are stripped as ``str.strip()`` strips (:func:`id_strings`). A key is a tuple of parts: equal keys get equal
integer codes (each part's :func:`codes`, combined by :func:`combine`), with no Python string made per row; the
text of a key, its parts joined by the unit separator ``SEP``, is made only for the rows appended
(:func:`core.store.log_rows.keys`).
"""

from __future__ import annotations

import unicodedata
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

SEP = "\x1f"  # unit separator between the parts of a key


#: every character ``str.strip()`` removes (``str.isspace`` in Python 3.11; tests/test_cells.py checks it)
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


_WS = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]"  # an RE2 character class of WHITESPACE
_PADDED = f"^{_WS}|{_WS}$"  # a cell that str.strip() would change


def strip_strings(text: NDArray[Any]) -> NDArray[Any]:
    """``str.strip()`` of every string of an object array of strings: only the padded cells (found by Arrow's
    regular expressions, :data:`_PADDED`) are stripped in Python; returns ``text`` itself when none is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    padded = pc.match_substring_regex(pa.array(text, type=pa.string()), _PADDED).to_numpy(zero_copy_only=False)
    if not padded.any():
        return text
    out = text.copy()
    idx = np.flatnonzero(padded)
    out[idx] = [v.strip() for v in text[idx].tolist()]
    return out


def id_strings(values: pd.Series, *, padded: bool = True, cells: Any = None) -> pd.Series:
    """Ids as stripped strings, ``None`` when missing or blank; integral numbers lose their ``.0``. ``padded=False``:
    the caller knows that no string begins or ends with whitespace (``core.tables.Table.unpadded``). ``cells``: the
    values as an Arrow string array too (:func:`arrow_cells`), or None: unpadded, its blanks are found there."""
    arr = values.to_numpy(dtype=object)
    if cells is not None and not padded and not cells.null_count:
        import pyarrow.compute as pc

        blank = pc.equal(cells, "").to_numpy(zero_copy_only=False)
        if blank.any():
            arr = arr.copy()
            arr[blank] = None
        return pd.Series(arr, dtype=object)
    missing = pd.isna(arr)
    if missing.all():
        return pd.Series(np.full(len(arr), None, dtype=object), dtype=object)
    kind = pd.api.types.infer_dtype(arr, skipna=True)
    if kind == "string":  # CSV cells: strings only, stripped where padded
        if missing.any():
            text = arr.copy()
            text[~missing] = strip_strings(arr[~missing]) if padded else arr[~missing]
        else:
            text = strip_strings(arr) if padded else arr
        blank = np.zeros(len(arr), dtype=bool)
        blank[~missing] = text[~missing] == ""
        if blank.any() or missing.any():
            text = text.copy() if text is arr else text
            text[missing | blank] = None
        return pd.Series(text, dtype=object)
    s = pd.Series(arr.copy(), dtype=object)
    is_float: NDArray[Any]
    if kind == "empty":
        is_float = np.zeros(len(s), dtype=bool)
    else:
        is_float = np.fromiter((isinstance(v, float) for v in s.tolist()), dtype=bool, count=len(s))
    if is_float.any():
        fl = s[is_float & ~missing].astype(np.float64)
        values = fl.to_numpy()
        integral = np.isfinite(values) & (values == np.round(values))
        small = integral & (np.abs(values) < 2.0**63)  # int64 holds them; larger ones as Python ints (exact)
        s.loc[fl.index[small]] = values[small].astype(np.int64).astype(str)
        large = integral & ~small
        if large.any():
            s.loc[fl.index[large]] = np.asarray([str(int(v)) for v in values[large].tolist()], dtype=object)
    text = pd.Series(s.astype(str).to_numpy(dtype=object), dtype=object).str.strip()
    text[missing | (text == "").to_numpy()] = None
    return text


class ArrowCells:
    """The Arrow string arrays of a frame's columns as the CSV reader made them (``core.tables.Table.arrow``), held in
    the frame's ``attrs["arrow"]``, so that validation works on them instead of converting the object columns back
    to Arrow (the ingest target of ``bench/bench_scale.py``). They describe that frame only: pandas copies ``attrs``
    to the frames made from it, which :func:`arrow_cells` tells apart."""

    def __init__(self, frame: pd.DataFrame, columns: dict[str, Any]) -> None:
        self.owner = weakref.ref(frame)
        self.columns = columns

    def __deepcopy__(self, memo: dict[int, Any]) -> ArrowCells:
        return self  # (pandas deep-copies attrs into every derived frame)

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _no_cells, ()  # a pickled frame holds no Arrow cells (they are a cache of its columns)

    @staticmethod
    def attach(frame: pd.DataFrame, columns: dict[str, Any] | None) -> pd.DataFrame:
        """``frame`` with ``columns`` (Arrow arrays of its rows, by name) held in its ``attrs``; returns it."""
        if columns is not None:
            frame.attrs["arrow"] = ArrowCells(frame, columns)
        return frame


def _no_cells() -> None:
    return None


def frame_part(frame: pd.DataFrame, start: int, stop: int) -> pd.DataFrame:
    """Rows ``start`` to ``stop`` of ``frame`` (numbered from 0), with their Arrow cells when ``frame`` has them."""
    out = frame.iloc[start:stop].reset_index(drop=True)
    held = frame.attrs.get("arrow")
    if isinstance(held, ArrowCells) and held.owner() is frame:
        ArrowCells.attach(out, {k: v.slice(start, stop - start) for k, v in held.columns.items()})
    return out


def arrow_cells(frame: pd.DataFrame, column: str) -> Any:
    """The Arrow array of ``frame[column]``'s cells (:class:`ArrowCells`), or None when it has none."""
    held = frame.attrs.get("arrow")
    if not isinstance(held, ArrowCells) or held.owner() is not frame:
        return None
    return held.columns.get(column)


def arrow_ids(cells: Any) -> Any:
    """The ids of the Arrow string array ``cells`` when no cell is padded (:func:`id_strings` of them): a blank
    cell is missing (null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.if_else(pc.equal(cells, ""), pa.scalar(None, pa.string()), cells)


#: the control characters (Unicode category Cc: C0, DEL and C1) as an RE2 character class
CONTROL = "[\\x{0}-\\x{1f}\\x{7f}-\\x{9f}]"


@dataclass(frozen=True)
class IdTexts:
    """Ids checked as texts (:func:`checked_ids`): ``values`` in Unicode NFC (None kept), ``changed`` the rows whose
    text was not NFC (None: none was), ``bad`` the rows holding a control character or an unpaired surrogate (None:
    none does) and, for those, ``reason``."""

    values: NDArray[Any]
    changed: NDArray[Any] | None = None
    bad: NDArray[Any] | None = None

    def reason(self, i: int, what: str) -> str:
        """Why row ``i`` of :attr:`bad` is refused, naming the first offending character."""
        text = self.values[i]
        c = next((c for c in text if unicodedata.category(c) in ("Cc", "Cs")), "?")
        kind = "an unpaired surrogate" if unicodedata.category(c) == "Cs" else "the control character"
        return f"the {what} contains {kind} U+{ord(c):04X}, which no file or screen shows"


def checked_ids(values: NDArray[Any], *, printable: bool = False) -> IdTexts:
    """Ids (strings, None for missing) as Unicode NFC (UAX #15), so that ids differing only in normalisation (a
    precomposed "é" and "e" + combining acute) are one id, and the rows holding a control character (category Cc:
    NUL, escape, ...) or an unpaired surrogate (from a JSON escape), which are refused. ``printable=True``: the
    caller knows every string is printable ASCII (``core.tables.Table.printable``): nothing is checked. Otherwise
    only the non-ASCII strings (found by Arrow) are normalised in Python."""
    if printable or not len(values):
        return IdTexts(values)
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        array = pa.array(values, type=pa.string())
    except (UnicodeEncodeError, pa.ArrowException):  # a lone surrogate cannot be UTF-8
        return _checked_in_python(values)
    ascii_ = pc.string_is_ascii(array).fill_null(True).to_numpy(zero_copy_only=False)
    control = pc.match_substring_regex(array, CONTROL).fill_null(False).to_numpy(zero_copy_only=False)
    out, changed = values, None
    other = np.flatnonzero(~ascii_)
    if other.size:
        given = values[other].tolist()
        nfc = [unicodedata.normalize("NFC", v) for v in given]
        differ = np.fromiter((a != b for a, b in zip(nfc, given)), dtype=bool, count=other.size)
        if differ.any():
            out = values.copy()
            out[other[differ]] = [v for v, d in zip(nfc, differ.tolist()) if d]
            changed = np.zeros(len(values), dtype=bool)
            changed[other[differ]] = True
    return IdTexts(out, changed, control if control.any() else None)


def _checked_in_python(values: NDArray[Any]) -> IdTexts:
    """:func:`checked_ids` one string at a time (ids Arrow cannot hold: an unpaired surrogate)."""
    out = values.copy()
    bad = np.zeros(len(values), dtype=bool)
    changed = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values.tolist()):
        if v is None:
            continue
        if any(unicodedata.category(c) in ("Cc", "Cs") for c in v):
            bad[i] = True
            continue
        nfc = unicodedata.normalize("NFC", v)
        if nfc != v:
            out[i], changed[i] = nfc, True
    return IdTexts(out, changed if changed.any() else None, bad if bad.any() else None)


def not_timestamps(values: NDArray[Any]) -> NDArray[Any]:
    """Which given values (strings, None for missing) are not ISO-8601 timestamps (a date, or a date and time with
    optional fraction and offset: ``pandas.to_datetime(format="ISO8601")``); a missing value is not refused."""
    given = present(values)
    out = np.zeros(len(values), dtype=bool)
    if given.any():
        import pandas as pd

        parsed = pd.to_datetime(
            pd.Series(values[given], dtype=object).astype(str), format="ISO8601", errors="coerce", utc=True
        )
        out[given] = parsed.isna().to_numpy()
    return out


def present(values: Any) -> NDArray[Any]:
    """Which cells of ``values`` are not None, for arrays whose missing cells are None (:func:`id_strings`' output):
    an element-wise comparison rather than ``pd.notna``, for the ingest target of ``bench/bench_scale.py``."""
    out: NDArray[Any] = np.asarray(values, dtype=object) != None  # noqa: E711 (element-wise over an object array)
    return out


def _strings(values: Any) -> Any:
    """``values`` (strings, None for missing) as an Arrow string array; an Arrow array as it is."""
    import pyarrow as pa

    return values if isinstance(values, pa.Array) else pa.array(values, type=pa.string())


def positions(values: Any, universe: NDArray[Any]) -> NDArray[Any]:
    """The position of each string of ``values`` (None: missing; or an Arrow string array) in ``universe`` (distinct
    strings), -1 where it is not there: a hash lookup in Arrow."""
    import pyarrow.compute as pc

    found = pc.index_in(_strings(values), value_set=_strings(universe))
    out: NDArray[Any] = found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return out


def item_positions(ids: NDArray[Any], all_ids: NDArray[Any], hits: pd.DataFrame, cells: Any = None) -> NDArray[Any]:
    """The index of each item id (None: missing) among the project's ``all_ids``, -1 when unknown. The items of the
    named HITs are looked up first (a small set when a batch scores a few HITs of a large project), the rest among
    all items. ``cells``: the ids as an Arrow array too (:func:`arrow_ids`), or None."""
    if not len(hits):
        return positions(ids if cells is None else cells, all_ids)
    near = np.unique(hits["item_idx"].to_numpy(dtype=np.int64))
    at = positions(ids if cells is None else cells, all_ids[near])
    out: NDArray[Any] = np.where(at >= 0, near[np.maximum(at, 0)], -1)
    rest = np.flatnonzero((at < 0) & present(ids))
    if rest.size:
        out[rest] = positions(ids[rest], all_ids)
    return out


def codes(values: Any) -> NDArray[Any]:
    """Dense integer codes of the strings ``values`` (equal strings, equal codes; a missing value, None, gets the
    code 0 and every string a code of 1 or more; or an Arrow string array): Arrow's dictionary encoding, with no
    Python string made."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(_strings(values)).indices
    out: NDArray[Any] = encoded.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
    return out


def combine(*parts: NDArray[Any]) -> NDArray[Any]:
    """Dense integer codes of the tuples of non-negative integer ``parts`` (equal tuples, equal codes, in the order
    of the tuples): the parts are folded in as ``code * (max + 1) + part`` and made dense once (``np.unique``, one
    sort), or earlier where the numbers would pass 2**62."""
    out: NDArray[Any] = np.zeros(len(parts[0]), dtype=np.int64)
    bound = 1  # out < bound
    for part in parts:
        part = np.asarray(part, dtype=np.int64)
        if part.size == 0:
            return out
        width = int(part.max()) + 1
        if bound * width >= 2**62:
            out = _dense(out)
            bound = int(out.max()) + 1
        out, bound = out * width + part, bound * width
    return _dense(out)


def _dense(values: NDArray[Any]) -> NDArray[Any]:
    """The rank of each value among the distinct ``values`` (0, 1, ...)."""
    out: NDArray[Any] = np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return out


def first_of(codes: NDArray[Any]) -> NDArray[Any]:
    """For each position, the position of the first occurrence of its code."""
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, first = np.unique(codes, return_index=True)
    at = np.full(int(uniq[-1]) + 1, -1, dtype=np.int64)
    at[uniq] = first
    out: NDArray[Any] = at[codes]
    return out


def decimals(cells: Any) -> NDArray[Any] | None:
    """The Arrow string array ``cells`` as float64 when every cell is a decimal number that Arrow's cast reads (as
    :func:`numbers` reads it) to a finite number, else None (then :func:`numbers`, whose messages name the cells):
    the ingest target of ``bench/bench_scale.py`` (measurements: docs/studies/code-notes.md)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(cells) or cells.null_count or pc.any(pc.starts_with(cells, "+")).as_py():
        return None  # (pandas reads "+9e24" one unit off, as 8.999999999999999e+24)
    try:
        out = np.array(pc.cast(cells, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    except pa.ArrowInvalid:
        return None
    if not np.isfinite(out).all():
        return None
    if np.signbit(out[out == 0]).any() and not pc.any(pc.match_substring_regex(cells, "[.eE]")).as_py():
        return None  # (all integers: pandas reads them as such, "-0" as 0; among other numbers as -0.0)
    return out


def numbers(raw: pd.Series) -> tuple[NDArray[Any], NDArray[Any]]:
    """Scores as float64 (NaN where not a number) and a mask of integers too large for a float (a JSON number
    of hundreds of digits: ``float()`` overflows)."""
    too_large = np.zeros(len(raw), dtype=bool)
    try:
        return pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, copy=True), too_large
    except OverflowError:
        pass
    out = np.full(len(raw), np.nan)
    for i, v in enumerate(raw.tolist()):
        if isinstance(v, int) and not isinstance(v, bool):
            try:
                out[i] = float(v)
            except OverflowError:
                too_large[i] = True
        else:
            out[i] = pd.to_numeric(pd.Series([v], dtype=object), errors="coerce").iloc[0]
    return out, too_large


def bad_id_kinds(values: pd.Series) -> NDArray[Any] | None:
    """For each value that cannot be an id, the JSON kind it is (``object``, ``array``, ``boolean``); None when
    every value is a string, a number or missing (the common case, checked without a Python loop for strings)."""
    plain = ("string", "empty", "integer", "floating", "mixed-integer-float")
    if pd.api.types.infer_dtype(values, skipna=True) in plain:
        return None

    def kind(v: object) -> str | None:
        if isinstance(v, dict):
            return "object"
        if isinstance(v, (list, tuple)):
            return "array"
        return "boolean" if isinstance(v, (bool, np.bool_)) else None

    kinds = np.asarray([kind(v) for v in values.tolist()], dtype=object)
    return kinds if (kinds != None).any() else None  # noqa: E711


def short_text(value: object) -> str:
    import json

    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Locations:
    """Where each row came from (``"file:line"``, ``"file:row N"``), formatted only for the rows a message names:
    ``prefix`` + the row's number, or the given texts. Indexed like an object array (an int gives a ``str``, an
    integer array an object array)."""

    def __init__(self, prefix: str = "", numbers: NDArray[Any] | None = None, texts: NDArray[Any] | None = None):
        self.prefix = prefix
        self.numbers = numbers if numbers is not None else np.zeros(0, dtype=np.int64)
        self.texts = texts

    def __len__(self) -> int:
        return len(self.texts) if self.texts is not None else len(self.numbers)

    def part(self, start: int, stop: int) -> Locations:
        """The locations of rows ``start`` to ``stop`` (exclusive)."""
        if self.texts is not None:
            return Locations(texts=self.texts[start:stop])
        return Locations(self.prefix, self.numbers[start:stop])

    def __getitem__(self, idx: Any) -> Any:
        if self.texts is not None:
            return self.texts[idx]
        picked = self.numbers[idx]
        if np.ndim(picked) == 0:
            return f"{self.prefix}{int(picked)}"
        return np.asarray([f"{self.prefix}{n}" for n in np.asarray(picked).tolist()], dtype=object)
