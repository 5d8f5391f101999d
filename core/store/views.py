"""What the project file reports: the estimates per item, the live ratings in long form, and the status figures
(read from the figures stored with the state, :func:`core.store.state.stored_figures`, without the model arrays).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store.choosing import state_seq, stop_rng
from easl_toolkit.core.store.db import Database, max_seq
from easl_toolkit.core.store.hits import current_iteration
from easl_toolkit.core.store.items import Catalog
from easl_toolkit.core.store.records import FrontEndRecords
from easl_toolkit.core.store.schema import SCHEMA_VERSION
from easl_toolkit.core.store.settings import Settings
from easl_toolkit.core.store.state import load_state, state_figures, stored_figures

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

ESTIMATE_COLUMNS = ["item_id", "estimate", "mean", "variance", "ci_low", "ci_high", "n_annotations"]
RANK_COLUMNS = ["rank_low", "rank_high"]  # aware projects: the 95% rank interval (1 = the highest estimate)
RATING_COLUMNS = ["item_id", "annotator", "score", "hit_id", "iteration", "annotation_id", "created_at"]
VARIANCE_SCALE = "unit interval [0, 1] (multiply by (score_max - score_min)^2 for the score range)"


@dataclass(frozen=True)
class ProjectStatus:
    """The figures of ``easl status`` (README, ``easl status``).

    Attributes
    ----------
    path, method : the project file and its method.
    iteration : the current iteration (0 = the covering iteration).
    n_items, n_observations, n_log_records : items, live scores, records in the observation log.
    n_hits_total : HITs of every iteration; ``n_hits_open``, ``n_hits_complete``, ``n_hits_retracted``: of the
        current iteration.
    mean_variance, max_variance : posterior variances on the unit scale [0, 1] as the models hold them (the
        summary's ``variance``, e.g. eq 13 for EASL); None, with ``variance_reason``, unless every one is finite.
    n_annotations : ``{"min", "mean", "max"}`` live annotations per item (None with a ``reason`` without items).
    events : queued front-end events per status; ``n_rejects`` : rejected inputs of every source.
    hit_size, score_range, seed, schema_version : the settings.
    stop : the stopping rule's figures (``Model.stop_figures``): aware projects ``{"target", "expected_spearman",
        "reached", "reason", "margin", "min_scores"}`` (``target`` None without ``--stop-at``); evaluation campaigns
        per system each metric's estimate and 95% interval, the human scores spent and counted, the cost of scoring
        every response once and twice, the targets, the stop width and the verdict
        (``core.models.campaign.CampaignModel.stop_figures``); None for the other methods.
    """

    path: str
    method: str
    iteration: int
    n_items: int
    n_observations: int
    n_log_records: int
    n_hits_total: int
    n_hits_open: int
    n_hits_complete: int
    n_hits_retracted: int
    mean_variance: float | None
    max_variance: float | None
    variance_reason: str | None
    n_annotations: dict[str, Any]
    events: dict[str, int]
    n_rejects: int
    hit_size: int
    score_range: tuple[float, float]
    seed: int | None
    schema_version: int = field(default=SCHEMA_VERSION)
    stop: dict[str, Any] | None = None

    def to_json(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The JSON object of ``easl status --json``: a figure that is not a number is null with a
        ``<key>_reason`` beside it. ``extra`` holds front ends' figures (e.g. the Label Studio plugin's last
        reconciliation), placed after ``n_rejects``."""
        counts = ("n_items", "n_observations", "n_log_records", "n_hits_total", "n_hits_open", "n_hits_complete")
        out: dict[str, Any] = {
            k: getattr(self, k) for k in ("path", "method", "iteration", *counts, "n_hits_retracted")
        }
        for key in ("mean_variance", "max_variance"):
            out[key] = getattr(self, key)
            if out[key] is None:
                out[f"{key}_reason"] = self.variance_reason
        out["variance_scale"] = VARIANCE_SCALE
        out["n_annotations"] = dict(self.n_annotations)
        if self.stop is not None:
            out["stop"] = dict(self.stop)
        out["events"] = dict(self.events)
        out["n_rejects"] = self.n_rejects
        out.update(extra or {})
        out.update(hit_size=self.hit_size, score_range=list(self.score_range), seed=self.seed)
        out["schema_version"] = self.schema_version
        return out

    def __getitem__(self, key: str) -> Any:
        """``to_json()[key]``, for callers written against the former dict."""
        return self.to_json()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_json()

    def get(self, key: str, default: Any = None) -> Any:
        """``to_json().get(key, default)``, for callers written against the former dict."""
        return self.to_json().get(key, default)


@dataclass(frozen=True)
class EstimateTable:
    """The estimates of ``easl export --output x.csv``: ``table`` (Arrow, written without pandas) or, when the items
    have extra columns, ``frame`` (:meth:`Output.estimates`)."""

    n_rows: int
    table: pa.Table | None = None
    frame: pd.DataFrame | None = None

    def write_csv(self, tmp: str, path: str | os.PathLike[str], *, raw_cells: bool = False) -> None:
        """Write into the file ``tmp`` as CSV (the bytes of ``core.tables.write_table``) for the file ``path``
        (named in errors); text cells a spreadsheet would execute are neutralised unless ``raw_cells``."""
        if self.table is None:
            from easl_toolkit.core.tables import write_table_to

            assert self.frame is not None
            write_table_to(self.frame, tmp, path, raw_cells=raw_cells)
            return
        from easl_toolkit.core.store.arrow_columns import write_csv

        write_csv(self.table, tmp, raw_cells=raw_cells)


class Output:
    """What a project reports: estimates, ratings, the stopping rule's figures and the status."""

    def __init__(self, db: Database, settings: Settings, catalog: Catalog, records: FrontEndRecords) -> None:
        self._db = db
        self._settings = settings
        self._catalog = catalog
        self._records = records

    def _estimate_columns(self) -> tuple[dict[str, NDArray[Any]], list[str]]:
        """The estimate columns (numpy arrays in file order: ``ESTIMATE_COLUMNS`` but ``item_id``, and ``RANK_COLUMNS``
        for aware projects) and the reserved names (:meth:`estimates`)."""
        with self._db.reading() as conn:
            state = load_state(conn, writable=False)
        summ = self._settings.model.summary(state).on_scale(self._settings.hyper)
        out = {
            "estimate": summ.estimate,
            "mean": summ.mean,
            "variance": summ.variance,
            "ci_low": summ.ci_low,
            "ci_high": summ.ci_high,
            "n_annotations": np.rint(state["count"]).astype(np.int64),
        }
        reserved = list(ESTIMATE_COLUMNS)
        figures = self._settings.model.rank_figures(state, self._stop_rng())
        if figures is not None:  # rank intervals from posterior draws
            n = self._catalog.n_items
            out["rank_low"] = (n - np.rint(figures.rank_high)).astype(np.int64)
            out["rank_high"] = (n - np.rint(figures.rank_low)).astype(np.int64)
            reserved += RANK_COLUMNS
        return out, reserved

    def estimates(self) -> pd.DataFrame:
        """One row per item: ``item_id, estimate, mean, variance, ci_low, ci_high, n_annotations``, then ``text``
        and the item's extra columns (renamed ``item_<name>`` if they clash), on the project's score range
        (``core.models.Posterior.on_scale``); ``n_annotations`` counts live observations. Aware projects add
        ``rank_low, rank_high`` after ``n_annotations``: the 95% interval of the item's rank over posterior draws
        (1 = the highest estimate, ``core.models.aware.posterior.rank_figures``).
        """
        import pandas as pd

        columns, reserved = self._estimate_columns()
        items = self._catalog.items()
        out = pd.DataFrame({"item_id": items["item_id"].to_numpy(dtype=object), **columns})
        data = items.drop(columns=["item_id"])
        data.columns = [f"item_{c}" if c in reserved else c for c in data.columns]
        return pd.concat([out, data.reset_index(drop=True)], axis=1)

    def estimates_table(self) -> EstimateTable:
        """:meth:`estimates` for a CSV file (``easl export``): an Arrow table built without pandas when the items
        have no extra columns (the columns and values of :meth:`estimates`), else the DataFrame."""
        if self._catalog.columns:
            return EstimateTable(n_rows=self._catalog.n_items, frame=self.estimates())
        from concurrent.futures import ThreadPoolExecutor

        import pyarrow as pa

        from easl_toolkit.core.store.arrow_columns import floats, integers
        from easl_toolkit.core.store.hit_columns import read_every_item

        with ThreadPoolExecutor(max_workers=1) as pool:
            # the ids and texts are read by a connection of their own (SQLite releases the GIL) while the estimates
            # are computed
            items = pool.submit(read_every_item, self._db.path, ["item_id", "text"])
            columns, _ = self._estimate_columns()
            ids, texts = items.result()
        arrays = [ids, *(integers(v) if v.dtype.kind in "iu" else floats(v) for v in columns.values()), texts]
        table = pa.Table.from_arrays(arrays, names=["item_id", *columns, "text"])
        return EstimateTable(n_rows=self._catalog.n_items, table=table)

    def ratings(self) -> pd.DataFrame:
        """Live observations in long form, in log order: ``item_id, annotator, score, hit_id, iteration,
        annotation_id, created_at`` (score on the project's range, as given)."""
        import pandas as pd

        rows = self._db.conn.execute(
            "SELECT i.item_id, o.annotator, o.score_raw, o.hit_id, h.iteration, o.annotation_id, o.created_at "
            "FROM live l JOIN observations o ON o.seq = l.seq JOIN items i ON i.idx = l.item_idx "
            "LEFT JOIN hits h ON h.hit_id = o.hit_id ORDER BY l.seq"
        ).fetchall()
        cols = list(zip(*rows)) if rows else [()] * len(RATING_COLUMNS)
        frame = pd.DataFrame({c: pd.Series(list(v), dtype=object) for c, v in zip(RATING_COLUMNS, cols)})
        frame["score"] = frame["score"].astype(np.float64)
        frame["iteration"] = pd.array(frame["iteration"].tolist(), dtype="Int64")
        return frame

    def _stop_rng(self) -> np.random.Generator:
        return stop_rng(self._settings.hyper.seed, state_seq(self._db.conn))

    def stop_figures(self) -> dict[str, Any] | None:
        """The stopping rule's figures (:attr:`ProjectStatus.stop`, ``Model.stop_figures``, drawn with
        ``core.store.choosing.stop_rng``); None for a model without a stopping rule."""
        with self._db.reading() as conn:
            state = load_state(conn, writable=False)
            rng = self._stop_rng()
        figures: dict[str, Any] | None = self._settings.model.stop_figures(state, rng)
        return figures

    def design_estimates(self, systems: NDArray[Any], names: Sequence[str]) -> dict[str, Any] | None:
        """``Model.design_estimates`` of the project's state for the systems' scores ``systems`` (n_items, K, in
        item order): None for a model that does not draw its items with recorded probabilities."""
        with self._db.reading() as conn:
            state = load_state(conn, writable=False)
            return self._settings.model.design_estimates(state, systems, list(names))

    def status(self) -> ProjectStatus:
        """The figures of ``easl status`` and the front ends (:class:`ProjectStatus`); one read snapshot."""
        with self._db.reading() as conn:
            it = current_iteration(conn)
            # one index range count per status (the status target; measurements: docs/studies/code-notes.md)
            n_open, n_complete, n_retracted = conn.execute(
                "SELECT (SELECT COUNT(*) FROM hits WHERE iteration = ?1 AND status = 'open'), "
                "(SELECT COUNT(*) FROM hits WHERE iteration = ?1 AND status = 'complete'), "
                "(SELECT COUNT(*) FROM hits WHERE iteration = ?1 AND status = 'retracted')",
                (it,),
            ).fetchone()
            n_hits_total = conn.execute("SELECT COALESCE(SUM(n_hits), 0) FROM iterations").fetchone()[0]
            n_log = max_seq(conn)
            events = self._records.event_counts()
            n_rejects = conn.execute("SELECT COUNT(*) FROM rejects").fetchone()[0]
            figures = stored_figures(conn)
            if figures is not None and figures.get("seq") == n_log and "n_live" in figures:
                # the state reflects the whole log, so its count is the live scores' (no scan of a large index)
                n_obs = figures["n_live"]
            else:
                n_obs = conn.execute("SELECT COUNT(*) FROM live").fetchone()[0]
            if figures is None:  # a file written by an older version: from the arrays
                state = load_state(conn)
                figures = state_figures(self._settings.model.selection_keys(state)[1], state["count"])
        s = self._settings.reported
        return ProjectStatus(
            path=self._db.path,
            method=s["method"],
            iteration=it,
            n_items=self._catalog.n_items,
            n_observations=int(n_obs),
            n_log_records=int(n_log),
            n_hits_total=int(n_hits_total),
            n_hits_open=int(n_open),
            n_hits_complete=int(n_complete),
            n_hits_retracted=int(n_retracted),
            mean_variance=figures["mean_variance"],
            max_variance=figures["max_variance"],
            variance_reason=figures["variance_reason"],
            n_annotations=figures["n_annotations"],
            events=events,
            n_rejects=int(n_rejects),
            hit_size=s["hit_size"],
            score_range=(s["score_min"], s["score_max"]),
            seed=s["seed"],
            stop=self.stop_figures(),
        )
