"""Typed results of :func:`core.metrics.pipeline.evaluate`: per-system parts and the evaluation.

Front ends read attributes (``ev.systems["model"].observed["corr"].value``); only the JSON writer and ``easl
evaluate --json`` see the dict of :meth:`Evaluation.to_json`, whose contract (schema version
:data:`core.metrics.output_schema.SCHEMA_VERSION`, documented in ``docs/reference/outputs.md``) is: a NaN figure is
written as ``null`` with ``<key>_reason`` beside it; counts are integers; every block has its ``N``; bootstrap
intervals are ``[low, high]`` lists under ``ci`` (empty without a bootstrap); analytic ones are ``{"se", "ci",
"p_value", "method"}`` under ``analytic``.

One reported number is a :class:`Figure`, the figures of one comparison a :class:`Block`; the RSMTool-like tables
written by ``--output`` are :func:`evaluation_tables`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.metrics.data import Scale
from easl_toolkit.core.metrics.intervals.analytic import Analytic, Interval, benchmark, json_number
from easl_toolkit.core.metrics.output_schema import SCHEMA_VERSION, with_rsmtool_names
from easl_toolkit.core.metrics.project_raters import RaterSummary
from easl_toolkit.core.metrics.registry import COUNT_KEYS, OBSERVED_KEYS, SHORT, TRUE_SCORE_KEYS


class Figure(NamedTuple):
    """One reported number: its ``value`` (NaN when undefined for the data), the ``reason`` it is NaN (None when it
    is defined), its bootstrap percentile interval ``ci`` (None without a bootstrap) and its closed-form standard
    error, interval and p-value ``analytic`` (Fisher z, t-based Wald; None when the metric has none).

    Examples
    --------
    >>> Figure(float("nan"), "a correlation is undefined for constant scores").is_defined
    False
    """

    value: float
    reason: str | None = None
    ci: Interval | None = None
    analytic: Analytic | None = None

    @property
    def is_defined(self) -> bool:
        return bool(np.isfinite(self.value))


@dataclass(frozen=True)
class Block:
    """The ``figures`` of one comparison (name -> :class:`Figure`), in the order and with the names of
    :mod:`core.metrics.registry`: ``block["corr"]`` is a :class:`Figure`; an unknown name raises ``KeyError`` (never a
    silent ``None``).

    Examples
    --------
    >>> b = Block({"N": Figure(3.0), "corr": Figure(float("nan"), "constant scores")})
    >>> b.to_json()
    {'N': 3, 'corr': None, 'corr_reason': 'constant scores'}
    """

    figures: Mapping[str, Figure]

    def __getitem__(self, name: str) -> Figure:
        return self.figures[name]

    def __contains__(self, name: object) -> bool:
        return name in self.figures

    def __iter__(self) -> Iterator[str]:
        return iter(self.figures)

    def value(self, name: str) -> float:
        """The value of ``name`` (NaN when absent or undefined)."""
        fig = self.figures.get(name)
        return float("nan") if fig is None else fig.value

    def values(self) -> dict[str, float]:
        return {k: f.value for k, f in self.figures.items()}

    def to_json(self, order: Iterable[str] | None = None) -> dict[str, Any]:
        """``{key: value}`` with ``null`` + ``<key>_reason`` for NaN and integer counts."""
        out: dict[str, Any] = {}
        for key in order or self.figures:
            if key not in self.figures:
                continue
            fig = self.figures[key]
            v = fig.value
            if not np.isfinite(v):
                out[key] = None
                out[key + "_reason"] = fig.reason or "undefined for these data"
            elif key in COUNT_KEYS and float(v).is_integer():
                out[key] = int(v)
            else:
                out[key] = float(v)
        return out

    def report_json(self, with_ci: bool, order: Iterable[str] | None = None) -> dict[str, Any]:
        """:meth:`to_json` with RSMTool's names beside ours and the bootstrap intervals under ``ci``."""
        return {**with_rsmtool_names(self.to_json(order)), "ci": self.ci_json() if with_ci else {}}

    def ci_json(self, *, prefix: str = "", skip: tuple[str, ...] = ("N",)) -> dict[str, Any]:
        """``{prefix + key: [low, high]}`` of the figures that have a bootstrap interval."""
        return {prefix + k: interval_pair(f.ci) for k, f in self.figures.items() if f.ci is not None and k not in skip}

    def analytic_json(self) -> dict[str, Any]:
        """``{key: {"se", "ci", "p_value", "method"}}`` of the figures with a closed-form interval."""
        return {k: f.analytic.to_json() for k, f in self.figures.items() if f.analytic is not None}


def interval_pair(iv: Interval | tuple[float, float] | None) -> list[float | None]:
    """``[low, high]`` with ``None`` for a bound that is not finite or an interval that is None (the JSON form)."""
    return [None, None] if iv is None else [json_number(iv[0]), json_number(iv[1])]


@dataclass(frozen=True)
class SystemEvaluation:
    """One system against the human ratings: observed, true-score and degradation blocks.

    Examples
    --------
    >>> import numpy as np
    >>> from core.metrics.pipeline import evaluate
    >>> ev = evaluate(np.array([[1, 2], [2, 2], [3, 3], [4, 3.]]), {"m": np.array([1, 2, 3, 4.])})
    >>> ev.systems["m"].true_score["N_multiple"].value
    4.0
    """

    observed: Block  # against the reference (first) human column
    true_score: Block  # PRMSE and its parts, against every human rating
    degradation: Block  # observed minus human-human (empty with one human column)
    disattenuated_corr: Figure

    def to_json(self, with_ci: bool, human_human: Block) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "observed": with_rsmtool_names(self.observed.to_json(OBSERVED_KEYS)),
            "true_score": self.true_score.to_json(TRUE_SCORE_KEYS),
            "degradation": {},
        }
        if list(self.degradation):  # OBSERVED_KEYS[0] is N
            counts = {"N": int(self.observed.value("N")), "N_human_human": int(human_human.value("N"))}
            entry["degradation"] = with_rsmtool_names({**counts, **self.degradation.to_json(OBSERVED_KEYS[1:])})
        dc = self.disattenuated_corr
        entry.update(Block({"disattenuated_corr": dc}).to_json())
        ci: dict[str, Any] = {}
        if with_ci:
            ci.update(self.observed.ci_json())
            for k in ("prmse", "mse_true", "true_score_variance", "rater_error_variance"):
                ci[k] = interval_pair(self.true_score[k].ci)
            if dc.ci is not None:
                ci["disattenuated_corr"] = interval_pair(dc.ci)
            ci.update(self.degradation.ci_json(prefix="degradation_"))
        entry["ci"] = ci
        entry["analytic"] = self.observed.analytic_json()
        return entry


@dataclass(frozen=True)
class HumanHuman:
    """Agreement among the human raters."""

    names: tuple[str, str] | None  # the two columns compared by ``pair`` (None with one human column)
    pair: Block  # observed metrics of the first two human columns (double-scored responses)
    all_raters: Block | None  # every chance-corrected coefficient over every human column (two or more)
    raters: tuple[str, ...] = ()  # every human column

    def to_json(self, with_ci: bool) -> dict[str, Any]:
        block = self.pair.report_json(with_ci, OBSERVED_KEYS) if self.names else {"N": 0, "ci": {}}
        return {"raters": list(self.names) if self.names else [], **block, "analytic": self.pair.analytic_json()}

    def all_raters_json(self, with_ci: bool) -> dict[str, Any] | None:
        if self.all_raters is None:
            return None
        out: dict[str, Any] = {"raters": list(self.raters), **self.all_raters.to_json()}
        out["ci"] = self.all_raters.ci_json(skip=("N", "N_pairable", "N_raters")) if with_ci else {}
        out["analytic"] = self.all_raters.analytic_json()
        out["benchmark"] = {
            k: {
                scale: benchmark(f.value, f.analytic.se, scale=scale).label
                for scale in ("landis_koch", "fleiss", "altman")
            }
            for k, f in self.all_raters.figures.items()
            if f.analytic is not None
        }
        return out


class FairnessFigure(NamedTuple):
    """One fairness analysis (adjusted R2 of an OLS model, its F-test p-value, and the group coefficients)."""

    value: float
    p_value: float
    r2: float
    estimates: Mapping[str, float]
    reason: str | None = None
    ci: Interval | None = None
    ci_reason: str | None = None
    estimates_p_value: Mapping[str, float] = {}
    estimates_ci: Mapping[str, tuple[float, float]] = {}


@dataclass(frozen=True)
class FairnessEvaluation:
    """Overall score accuracy, overall score difference and conditional score difference of one system."""

    base_group: str
    groups: Mapping[str, int]  # group label -> number of responses
    osa: FairnessFigure
    osd: FairnessFigure
    csd: FairnessFigure
    bootstrapped: bool = False
    n: int = 0  # responses analysed

    def figures(self) -> dict[str, FairnessFigure]:
        return {"osa": self.osa, "osd": self.osd, "csd": self.csd}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"N": int(self.n), "base_group": self.base_group, "groups": dict(self.groups)}
        for key, fig in self.figures().items():
            item = Block({k: Figure(getattr(fig, k), fig.reason) for k in ("value", "p_value", "r2")}).to_json()
            item["estimates"] = {g: json_number(c) for g, c in fig.estimates.items()}
            item["estimates_p_value"] = {g: json_number(c) for g, c in fig.estimates_p_value.items()}
            item["estimates_ci"] = {g: interval_pair(c) for g, c in fig.estimates_ci.items()}
            out[key] = item
        out["ci"] = {k: interval_pair(f.ci) for k, f in self.figures().items()} if self.bootstrapped else {}
        why = {k: f.ci_reason for k, f in self.figures().items() if f.ci_reason}  # (set only with a bootstrap)
        if why:
            out["ci_reason"] = why
        return out


@dataclass(frozen=True)
class Evaluation:
    """Result of :func:`core.metrics.pipeline.evaluate`: ``n_responses`` evaluated against the reference human and
    ``n_input`` rows given, ``dropped`` (reason -> count), the ``scale``, ``human_columns``, ``confidence``, the
    bootstrap's ``n_resamples`` and ``seed``, ``human_human`` (:class:`HumanHuman`), ``systems`` (name ->
    :class:`SystemEvaluation`), ``subgroups`` (group column -> group label -> system -> :class:`Block`), ``fairness``
    (group column -> system -> :class:`FairnessEvaluation`), ``notes``, the arrays for the plots (``human``,
    ``system``, ``prmse_samples``), ``bootstrapped`` (whether the figures carry bootstrap intervals) and, for a
    project's evaluation, ``raters`` (how its human raters were built, :class:`~core.metrics.project_raters.
    RaterSummary`).

    Examples
    --------
    >>> import numpy as np
    >>> from core.metrics.pipeline import evaluate
    >>> ev = evaluate(np.array([[1, 2], [2, 2], [3, 3], [4, 3.]]), {"m": np.array([1, 2, 3, 4.])})
    >>> ev.n_responses, ev.to_json()["systems"]["m"]["observed"]["corr"]
    (4, 1.0)
    """

    n_responses: int
    n_input: int
    dropped: Mapping[str, int]
    scale: Scale
    human_columns: tuple[str, ...]
    confidence: float
    n_resamples: int
    seed: int
    human_human: HumanHuman
    systems: Mapping[str, SystemEvaluation]
    subgroups: Mapping[str, Mapping[str, Mapping[str, Block]]]
    fairness: Mapping[str, Mapping[str, FairnessEvaluation]]
    notes: tuple[str, ...]
    human: NDArray[Any] = field(repr=False)
    system: Mapping[str, NDArray[Any]] = field(repr=False)
    prmse_samples: Mapping[str, NDArray[Any]] = field(repr=False, default_factory=dict)
    bootstrapped: bool = False  # bootstrap intervals were computed (resamples > 0 and at least 2 responses)
    consistency_by_group: Mapping[str, Mapping[str, Block]] = field(default_factory=dict)  # human-human per group
    confusion: Mapping[str, NDArray[Any]] = field(repr=False, default_factory=dict)  # system -> (q, q) counts
    raters: RaterSummary | None = None  # a project's: how its human raters were built (project_raters)

    @property
    def n_dropped(self) -> int:
        return self.n_input - self.n_responses

    @property
    def human_names(self) -> list[str]:
        return list(self.human_columns)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``easl evaluate --json`` (:data:`SCHEMA_VERSION`; ``docs/reference/outputs.md``)."""
        data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "n_input": int(self.n_input),
            "n_responses": int(self.n_responses),
            "n_dropped": int(self.n_dropped),
            "dropped": dict(self.dropped),
            "scale": {"min": self.scale.min, "max": self.scale.max},
            "human_columns": list(self.human_columns),
            "raters": None if self.raters is None else self.raters.to_json(),
            "confidence": self.confidence,
            "bootstrap": {
                "n_resamples": int(self.n_resamples),
                "seed": int(self.seed),
                "method": "percentile" if self.bootstrapped else None,
            },
        }
        if self.scale.is_categorical:
            data["scale"]["categories"] = [float(c) for c in self.scale.categories]
        hh = self.human_human
        with_ci = self.bootstrapped
        data["human_human"] = hh.to_json(with_ci)
        data["all_raters"] = hh.all_raters_json(with_ci)
        data["systems"] = {name: s.to_json(with_ci, hh.pair) for name, s in self.systems.items()}
        data["subgroups"] = {
            g: {label: {s: b.report_json(with_ci) for s, b in per.items()} for label, per in by_label.items()}
            for g, by_label in self.subgroups.items()
        }
        data["fairness"] = {g: {s: f.to_json() for s, f in per.items()} for g, per in self.fairness.items()}
        data["consistency_by_group"] = {
            g: {label: b.report_json(with_ci, OBSERVED_KEYS) for label, b in per.items()}
            for g, per in self.consistency_by_group.items()
        }
        data["notes"] = list(self.notes)
        return data

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """RSMTool-like tables written by ``--output`` (``eval``, ``eval_short``, ``consistency``, ...;
        :func:`evaluation_tables`)."""
        return evaluation_tables(self)


#: The fairness figures (Loukina, Madnani & Zechner 2019; RSMTool ``get_fairness_analyses``).
FAIRNESS_LABELS = (
    ("osa", "Overall score accuracy"),
    ("osd", "Overall score difference"),
    ("csd", "Conditional score difference"),
)


def evaluation_tables(ev: Evaluation) -> dict[str, pd.DataFrame]:
    """RSMTool-like tables of ``ev``, by table name (``eval``, ``eval_short``, ``consistency``, ...)."""
    tables: dict[str, pd.DataFrame] = {}
    for gname, by_label in ev.subgroups.items():
        rows = [
            {"group": label, "system": s, **{k: b.value(k) for k in (*OBSERVED_KEYS, "dsm")}}
            for label, per_sys in by_label.items()
            for s, b in per_sys.items()
        ]
        tables[f"eval_by_{gname}"] = pd.DataFrame(rows)
    for gname, per_sys in ev.fairness.items():
        rows = []
        for s, fe in per_sys.items():
            for key, label in FAIRNESS_LABELS:
                fig = fe.figures()[key]
                row = {"system": s, "metric": label, "value": fig.value, "p_value": fig.p_value, "r2": fig.r2}
                if fe.bootstrapped:
                    ci = fig.ci if fig.ci is not None else Interval(np.nan, np.nan)
                    row.update({"ci_low": ci.low, "ci_high": ci.high, "ci_reason": fig.ci_reason or ""})
                rows.append({**row, **{f"coef_{g}": c for g, c in fig.estimates.items()}})
        tables[f"fairness_{gname}"] = pd.DataFrame(rows)
    rows_eval = [{"system": s, **{k: e.observed.value(k) for k in OBSERVED_KEYS}} for s, e in ev.systems.items()]
    tables["eval"] = pd.DataFrame(rows_eval)
    tables["eval_short"] = pd.DataFrame(rows_eval)[["system", *SHORT]]
    hh = ev.human_human
    if hh.names is not None:
        tables["consistency"] = pd.DataFrame(
            [{"human_1": hh.names[0], "human_2": hh.names[1], **{k: hh.pair.value(k) for k in OBSERVED_KEYS}}]
        )
        tables["degradation"] = pd.DataFrame(
            [
                {
                    "system": s,
                    **{k: e.degradation.value(k) for k in OBSERVED_KEYS if k != "N"},
                    "disattenuated_corr": e.disattenuated_corr.value,
                }
                for s, e in ev.systems.items()
            ]
        )
    for gname, per_label in ev.consistency_by_group.items():
        tables[f"consistency_by_{gname}"] = pd.DataFrame(
            [{"group": label, **{k: b.value(k) for k in OBSERVED_KEYS}} for label, b in per_label.items()]
        )
    if ev.scale.is_categorical:
        labels = [f"{c:g}" for c in ev.scale.categories]
        for s, counts in ev.confusion.items():
            frame = pd.DataFrame(counts, columns=labels)
            frame.insert(0, "human \\ system", labels)
            tables["confusion_" + "".join(c if c.isalnum() or c in "-_" else "_" for c in s)] = frame
    tables["true_score_eval"] = pd.DataFrame(
        [{"system": s, **{k: e.true_score.value(k) for k in TRUE_SCORE_KEYS}} for s, e in ev.systems.items()]
    )
    rows_ci = [
        {"system": s, "metric": k, "low": np.nan if lo is None else lo, "high": np.nan if hi is None else hi}
        for s, e in (ev.systems.items() if ev.bootstrapped else ())
        for k, (lo, hi) in e.to_json(True, hh.pair)["ci"].items()
    ]
    if rows_ci:
        tables["ci"] = pd.DataFrame(rows_ci)
    return tables
