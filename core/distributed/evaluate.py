"""``easl evaluate`` on a Dask cluster: partitioned Parquet or CSV read with ``dask.dataframe``, one task per
partition (:func:`core.distributed.partitions.partition_stats`), the results merged in partition order (the same
sums whatever order the tasks finish in) and finished by :func:`core.distributed.finish.finish`. Without a scale, a
first pass takes the range of the human ratings (as :func:`core.metrics.prepare.prepare`).

The long form (one rating per row), as :func:`core.metrics.load.load_long` in memory: every human rater becomes one
column, in the order given or by decreasing number of ratings (ties by rater id), counted over the whole data set in
a first pass; a system is a rater value (its score per item) or a column (one value per item). The rows are
numbered in file order, shuffled so that every item's rows are in one partition, and each partition is pivoted with
:func:`core.metrics.load.rater_matrix` in that order (a repeated rating keeps the first one in file order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.distributed.finish import finish
from easl_toolkit.core.distributed.partitions import PartitionStats, Spec, merge, partition_range, partition_stats
from easl_toolkit.core.errors import EaslError, InputError
from easl_toolkit.core.metrics.load import (
    LongRows,
    frame_scores,
    long_notes,
    long_rater_systems,
    long_system_scores,
    rater_ids,
    rater_matrix,
    require_columns,
)
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.pipeline import DEFAULT_OPTIONS
from easl_toolkit.core.metrics.prepare import scale_from_range
from easl_toolkit.core.metrics.registry import report_weightings
from easl_toolkit.core.metrics.results import Evaluation
from easl_toolkit.core.tables import Table

Progress = Callable[[str, int, int], None]


def read_partitions(source: str, columns: list[str], blocksize: str = "64MB", optional: Iterable[str] = ()) -> Any:
    """A ``dask.dataframe`` of the needed columns of partitioned Parquet or CSV/TSV (a glob, a file, a directory).

    CSV cells are read as text (as the in-memory reader), so every partition has the same types.
    """
    import dask.dataframe as dd

    path = str(source)
    lower = path.lower().rstrip("/*")
    try:
        if lower.endswith((".csv", ".tsv", ".txt")):
            sep = "\t" if lower.endswith(".tsv") else ","
            ddf = dd.read_csv(path, dtype=str, sep=sep, blocksize=blocksize)
        elif lower.endswith((".parquet", ".pq")) or Path(path).is_dir():
            ddf = dd.read_parquet(path)
        else:
            raise InputError(f"{source}: the Dask engine reads Parquet (.parquet) or CSV/TSV files.", path=source)
    except (FileNotFoundError, OSError) as exc:
        raise InputError(f"{source}: cannot read: {exc}", path=source) from None
    except (KeyError, ValueError) as exc:
        raise InputError(f"{source}: {exc}", path=source) from None
    require_columns(ddf, source, columns)
    return ddf[columns + [c for c in optional if c in ddf.columns and c not in columns]]


def _long_parts(
    client: Any,
    source: str,
    columns: tuple[str, str, str],
    system: tuple[str, ...],
    human: tuple[str, ...],
    group_col: str | None,
) -> tuple[list[Any], tuple[str, ...], LongSpec, int]:
    """The long form as wide partitions (the module docstring): the raters' first pass, the rows
    numbered in file order, a shuffle by item, a pivot per partition."""
    import dask.dataframe as dd
    from dask.delayed import delayed

    item, rater, score = columns
    ddf = read_partitions(source, [item, rater, score, *([group_col] if group_col else [])], optional=system)
    lspec = LongSpec(source, item, rater, score, system, group=group_col)
    raw = list(ddf.to_delayed())
    scans = _guard(lambda: [f.result() for f in _run(client, raw, scan, lspec)])
    counts = pd.concat([c for _, c in scans]).groupby(level=0).sum() if scans else pd.Series(dtype=np.int64)
    lspec, n_ratings = resolve(lspec, counts, list(ddf.columns), human or None)
    offsets = np.concatenate([[0], np.cumsum([n for n, _ in scans])[:-1]]).astype(np.int64)
    meta = ddf._meta.assign(**{ORDER: pd.Series(dtype=np.int64)})
    rows = dd.from_delayed([delayed(numbered)(p, int(o)) for p, o in zip(raw, offsets)], meta=meta)
    shuffled = rows.shuffle(on=item, npartitions=max(1, len(raw)))
    parts = [delayed(to_wide)(p, lspec, k) for k, p in enumerate(shuffled.to_delayed())]
    return parts, lspec.human, lspec, n_ratings


def check_ids(client: Any, ids: Any, source: str, id_col: str) -> None:
    """InputError naming a repeated response id (as the in-memory reader), from a distributed count of the ids."""
    top = ids.astype(str).value_counts().nlargest(1)
    repeated = _guard(lambda: client.compute(top).result())
    if len(repeated) and int(repeated.iloc[0]) > 1:
        value, times = repeated.index[0], int(repeated.iloc[0])
        raise InputError(f"{source}: column {id_col!r} repeats the id {value!r} ({times} times).", field=id_col)


def _ordered_merge(futures: list[Any], rank_limit: int, progress: Callable[[int], None]) -> PartitionStats:
    """Merge partition results in partition order as they arrive (deterministic sums, bounded memory)."""
    import distributed

    as_completed: Any = distributed.as_completed
    position = {f.key: i for i, f in enumerate(futures)}
    ready: dict[int, PartitionStats] = {}
    acc: PartitionStats | None = None
    nxt = 0
    for done, fut in enumerate(as_completed(futures), start=1):
        ready[position[fut.key]] = fut.result()
        fut.release()
        progress(done)
        while nxt in ready:
            part = ready.pop(nxt)
            acc = part if acc is None else merge(acc, part, rank_limit)
            nxt += 1
    return acc if acc is not None else PartitionStats()


def _run(client: Any, parts: list[Any], fn: Callable[..., Any], spec: Any) -> list[Any]:
    from dask.delayed import delayed

    tasks = [delayed(fn, pure=False)(p, spec, k) for k, p in enumerate(parts)]
    return list(client.compute(tasks))


def _guard(call: Callable[[], Any]) -> Any:
    """Run ``call``; a worker lost more often than the scheduler allows becomes one clear error."""
    from distributed import KilledWorker

    try:
        return call()
    except KilledWorker as exc:
        raise EaslError(
            f"the Dask computation failed: a task's workers died repeatedly ({exc}); no result was written. "
            "Give the workers more memory or use smaller partitions."
        ) from None


@dataclass(frozen=True)
class Columns:
    """Where the ratings are in a partitioned data set: the ``human`` and ``system`` columns of the wide form, the
    ``group`` and ``id`` columns; or ``long`` (item, rater, score) columns of the long form, then ``human`` the
    raters to keep (empty: every rater)."""

    human: tuple[str, ...] = ()
    system: tuple[str, ...] = ()
    group: str | None = None
    id: str | None = None
    long: tuple[str, str, str] | None = None


def evaluate_dask(
    client: Any,
    source: str,
    columns: Columns,
    *,
    options: EvaluationOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    rank_limit: int = 5_000_000,
) -> Evaluation:
    """The evaluation of a partitioned data set on ``client`` (same figures as the in-memory
    :func:`core.metrics.pipeline.evaluate` with the same ``options``; the bootstrap draws Poisson(1) weights per
    partition)."""
    weightings = report_weightings(options.weights)
    human, system, group_col, id_col, long = columns.human, columns.system, columns.group, columns.id, columns.long
    if long is not None:
        parts, human, lspec, n_ratings = _long_parts(client, source, long, system, human, group_col)
        group_col, group_name = (GROUP if group_col else None), group_col
    else:
        cols = list(dict.fromkeys([*human, *system, *([group_col] if group_col else [])]))
        ddf = read_partitions(source, cols + ([id_col] if id_col and id_col not in cols else []))
        if id_col:
            check_ids(client, ddf[id_col], source, id_col)
            ddf = ddf[cols]
        parts, group_name = list(ddf.to_delayed()), group_col
    total = len(parts)
    notes = [f"Dask: {total} partition(s) of {source}"]
    scale = options.scale
    spec = Spec(
        str(source),
        human,
        system,
        group_col,
        scale,
        options.exclude_zeros,
        weightings,
        n_bootstrap=options.n_bootstrap,
        seed=options.seed,
        rank_limit=rank_limit,
    )
    report = progress or (lambda stage, done, n: None)
    scale_note = None
    if scale is None:
        futures = _run(client, parts, partition_range, spec)
        ranges = _guard(lambda: [f.result() for f in futures])
        report("scale", total, total)
        scale, scale_note = scale_from_range(min(r[0] for r in ranges), max(r[1] for r in ranges))
        spec = Spec(**{**spec.__dict__, "scale": scale})
    report_weightings(options.weights, scale.category_array if scale.is_categorical else None)
    futures = _run(client, parts, partition_stats, spec)
    stats = _guard(lambda: _ordered_merge(futures, rank_limit, lambda done: report("partitions", done, total)))
    if long is not None:
        notes += long_notes(n_ratings, stats.n_input, len(human), stats.repeats)
    return finish(
        stats, spec, options=options, group_name=group_name or "group", scale_note=scale_note, extra_notes=notes
    )


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
    raters = rater_ids(frame[spec.rater])
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
    raters = rater_ids(frame[spec.rater])
    ids, first, row_of = np.unique(items, return_index=True, return_inverse=True)
    n = ids.size
    rows = LongRows(table, raters, score, items, row_of, n, spec.rater_systems, partial(_scores, frame, spec, k))
    out = {s: long_system_scores(rows, s) for s in spec.system}
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
