"""Where commands may write: the one check of every output path, and all-or-none writes of several files.

Every command that writes a file or a directory (``easl export`` estimates and ``--ratings``, ``easl ingest
--rejects``, ``easl evaluate --output``, ``easl simulate --out``) calls :func:`check_outputs` or
:func:`check_output_dir` before any work or transaction: an output is never the project file nor its
``-wal``/``-shm``/``-journal`` companions (compared by device and inode, so symlinks and hard links are the same
file, and by resolved name for companions that do not exist yet), two outputs are never the same file, and a file
can be created in the output's directory (probed: ``os.access`` says yes to root on a read-only file system).
:func:`atomic_outputs` then writes all or none. Messages say what is wrong, never which flag to pass.

Spreadsheet programs execute a CSV cell that begins with ``=``, ``+``, ``-`` or ``@`` (and some a tab or carriage
return) as a formula (OWASP, "CSV Injection"). :func:`neutralise_cells` prefixes such cells of text columns with a
single quote, as OWASP recommends, before a CSV or TSV file is written (unless ``--raw-cells``). Number columns and
text cells that are plain decimal numbers (``-5``) are never touched. A cell that already begins with quotes before
such a character gets one more, so that :func:`restore_cell` undoes the change exactly.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from easl_toolkit.core.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

COMPANIONS = ("", "-wal", "-shm", "-journal")  # the files SQLite keeps beside a database


def _protected(path: str, protect: Sequence[str]) -> str | None:
    """The protected file (project or companion) that ``path`` is, if any."""
    real = os.path.realpath(path)
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    for project in protect:
        base = os.path.realpath(project)
        for suffix in COMPANIONS:
            other = base + suffix
            if real == other or real == os.path.realpath(project + suffix):
                return project + suffix
            if st is not None:
                try:
                    if os.path.samestat(st, os.stat(other)):
                        return project + suffix
                except OSError:
                    pass
    return None


def _probe_directory(path: str, directory: str) -> None:
    """Raise InputError unless a file can be created in ``directory``."""
    if not os.path.exists(directory):
        raise InputError(f"{path}: cannot write there: the directory {directory} does not exist.", path=path)
    if not os.path.isdir(directory):
        raise InputError(f"{path}: cannot write there: {directory} is a file, not a directory.", path=path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".easl-probe-", dir=directory)
    except OSError as exc:
        raise InputError(f"{path}: cannot write in {directory} ({exc.strerror or exc}).", path=path) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def check_outputs(
    paths: Sequence[str | os.PathLike[str] | None], *, protect: Sequence[str | os.PathLike[str]] = ()
) -> None:
    """Check output files before any work: none is a protected file (the project and its companions), none
    repeats another, none is a directory, and each one's directory exists and is writable. ``None`` entries (an
    option not given) are skipped.

    Raises
    ------
    InputError
        One sentence naming the first path at fault.
    """
    given = [os.fspath(p) for p in paths if p is not None]
    guarded = [os.fspath(p) for p in protect]
    seen: dict[str, str] = {}
    for path in given:
        hit = _protected(path, guarded)
        if hit is not None:
            what = "the project file" if hit in guarded else f"the project's SQLite file {hit}"
            raise InputError(f"{path}: refusing to write there: it is {what}, which would be destroyed.", path=path)
        key = os.path.realpath(path)
        if key in seen:
            raise InputError(
                f"{path}: two outputs of one command name the same file ({seen[key]} and {path}).", path=path
            )
        seen[key] = path
        if os.path.isdir(path):
            raise InputError(f"{path}: is a directory; give a file name.", path=path)
        _probe_directory(path, os.path.dirname(os.path.abspath(path)))


def check_output_dir(path: str | os.PathLike[str]) -> None:
    """Check an output directory before any work: it is a directory or does not exist yet, and its nearest existing
    ancestor is a writable directory.

    Raises
    ------
    InputError
        One sentence naming the path.
    """
    path = os.fspath(path)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise InputError(f"{path}: is a file, not a directory; give a directory for the report.", path=path)
        _probe_directory(path, path)
        return
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise InputError(f"{path}: cannot create the directory: {parent} is a file, not a directory.", path=path)
    _probe_directory(path, parent)


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (signal 0 checks without sending; another user's process is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_leftovers(directory: str, prefix: str, suffix: str) -> list[str]:
    """Remove the files ``<prefix><pid>.<anything><suffix>`` (and ``<prefix><pid><suffix>``) of ``directory`` whose
    process ``pid`` is no longer alive: what a command killed while it wrote (``easl init``'s ``.NAME.<pid>.creating``,
    a ``.NAME.<pid>.XXXX.tmp`` output) leaves behind. Files of a live process, of this process, and names of another
    form are kept; a file that cannot be removed is left. Returns the names removed."""
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix) or suffix not in name[len(prefix) :]:
            continue
        head = name[len(prefix) :].split(".", 1)[0].split(suffix, 1)[0]
        if not head.isdecimal() or not head.isascii():
            continue
        pid = int(head)
        if pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))
            removed.append(name)
    return removed


def temporary_path(path: str | os.PathLike[str]) -> str:
    """A new empty temporary file beside ``path`` (same directory, so that a rename is atomic), readable as the
    umask allows; the caller renames it over ``path`` or removes it. Its name, ``.NAME.<pid>.XXXX.tmp``, carries
    this process's id, so that the next write to ``path`` removes the temporaries of a killed writer
    (:func:`remove_leftovers`)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(f"{path}: cannot write there: the directory {directory} does not exist.", path=path)
    prefix = f".{os.path.basename(path)}."
    remove_leftovers(directory, prefix, ".tmp")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"{path}: cannot write in {directory} ({exc.strerror or exc}).", path=path) from None
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return tmp


@contextlib.contextmanager
def atomic_outputs(paths: Sequence[str | os.PathLike[str]]) -> Iterator[list[str]]:
    """Yield one temporary file name per path (each in its target's directory); when the block succeeds every
    temporary is renamed over its target, on any error all are removed and every target is left as it was.

    A write error while the files are written (disk full, file too large) is turned into one ``InputError``
    sentence naming the file.
    """
    targets = [os.fspath(p) for p in paths]
    temps: list[str] = []
    try:
        for path in targets:
            temps.append(temporary_path(path))
        try:
            yield temps
        except OSError as exc:
            i = next((k for k, t in enumerate(temps) if exc.filename in (t, None)), 0)
            raise InputError(
                f"{targets[i]}: cannot write the file ({exc.strerror or exc}); nothing was written.", path=targets[i]
            ) from None
        for tmp, path in zip(temps, targets):
            os.replace(tmp, path)
    finally:
        for tmp in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


#: the characters that make a spreadsheet program read a cell beginning with them as a formula (OWASP, "CSV
#: Injection": ``=``, ``+``, ``-``, ``@``, tab, carriage return)
FORMULA_START = "=+-@\t\r"
#: a cell that a spreadsheet reads as a formula: quotes (a cell already neutralised) then a formula character
_FORMULA = "^'*[=+\\-@\\t\\r]"
#: a cell that is a plain decimal number (after the quotes of :data:`_FORMULA`): a number, not a formula
_NUMBER = "^'*[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?$"


def neutralise_cells(table: pa.Table) -> pa.Table:
    """``table`` with every cell of its string columns that a spreadsheet would execute (:data:`FORMULA_START`, not
    a plain number) prefixed with a single quote; the table itself when there is none (the common case, found from
    the first byte of each string with numpy, no Python object per cell)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for k, column in enumerate(table.columns):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        array = column.combine_chunks()
        if not _may_start_a_formula(array):
            continue
        formula = pc.and_not(
            pc.match_substring_regex(array, _FORMULA).fill_null(False),
            pc.match_substring_regex(array, _NUMBER).fill_null(False),
        )
        if not pc.any(formula).as_py():
            continue
        quoted = pc.binary_join_element_wise(pa.scalar("'", column.type), array, pa.scalar("", column.type))
        table = table.set_column(k, table.field(k), pc.if_else(formula, quoted, array))
    return table


def _may_start_a_formula(array: pa.Array) -> bool:
    """Whether some string of ``array`` begins with a formula character or a quote (its first byte, read from the
    Arrow buffers: an Arrow value set built from Python strings would import pandas, which ``easl next`` and
    ``easl export`` to CSV never load)."""
    import numpy as np
    import pyarrow as pa

    buffers = array.buffers()
    if buffers[2] is None or len(array) == 0:
        return False
    width = np.dtype(np.int64 if pa.types.is_large_string(array.type) else np.int32)
    offsets = np.frombuffer(buffers[1], dtype=width)[array.offset : array.offset + len(array) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8)
    starts = offsets[:-1][offsets[1:] > offsets[:-1]]
    first = data[starts]
    return bool(np.isin(first, np.frombuffer((FORMULA_START + "'").encode(), dtype=np.uint8)).any())


def neutralise_frame(frame: Any) -> Any:
    """:func:`neutralise_cells` of the text columns of a pandas DataFrame (object columns of strings and missing
    values); the frame itself when no cell changes."""
    import pandas as pd
    import pyarrow as pa

    out = frame
    for name in frame.columns:
        column = frame[name]
        if column.dtype != object or pd.api.types.infer_dtype(column, skipna=True) != "string":
            continue
        array = pa.array(column.to_numpy(dtype=object), type=pa.large_string(), from_pandas=True)
        done = neutralise_cells(pa.table({"c": array})).column(0)
        if done.equals(pa.chunked_array([array])):
            continue
        out = out.copy() if out is frame else out
        values = done.to_numpy(zero_copy_only=False).astype(object)
        values[column.isna().to_numpy()] = None
        out[name] = pd.Series(values, index=frame.index, dtype=object)
    return out


def restore_cell(text: str) -> str:
    """The cell as stored, from a cell :func:`neutralise_cells` wrote: one leading quote removed when the rest would
    be neutralised again (e.g. ``'=A1`` gives ``=A1``); any other text as it is."""
    rest = text[1:]
    if text.startswith("'") and re.match(_FORMULA, rest) and not re.match(_NUMBER, rest):
        return rest
    return text
