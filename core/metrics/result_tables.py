"""The RSMTool-like tables of an :class:`~core.metrics.results.Evaluation` (``eval``, ``eval_short``,
``consistency``, ``degradation``, ``confusion_<system>``, ``true_score_eval``, ``fairness_<group>``, ``ci``, ...),
written by ``easl evaluate --output`` (:mod:`core.metrics.writer`) and read through ``Evaluation.tables``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from core.metrics.intervals import Interval
from core.metrics.registry import OBSERVED_KEYS, SHORT, TRUE_SCORE_KEYS

if TYPE_CHECKING:
    from core.metrics.results import Evaluation

#: The fairness figures (Loukina, Madnani & Zechner 2019; RSMTool ``get_fairness_analyses``).
FAIRNESS_LABELS = (
    ("osa", "Overall score accuracy"),
    ("osd", "Overall score difference"),
    ("csd", "Conditional score difference"),
)


def safe_name(name: str) -> str:
    """``name`` with every character other than a letter, digit, ``-`` or ``_`` replaced by ``_`` (for file names)."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


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
            tables[f"confusion_{safe_name(s)}"] = frame
    tables["true_score_eval"] = pd.DataFrame(
        [{"system": s, **{k: e.true_score.value(k) for k in TRUE_SCORE_KEYS}} for s, e in ev.systems.items()]
    )
    rows_ci = []
    if ev.bootstrapped:
        for s, e in ev.systems.items():
            for k, (lo, hi) in e.to_json(True, hh.pair)["ci"].items():
                rows_ci.append(
                    {
                        "system": s,
                        "metric": k,
                        "low": np.nan if lo is None else lo,
                        "high": np.nan if hi is None else hi,
                    }
                )
    if rows_ci:
        tables["ci"] = pd.DataFrame(rows_ci)
    return tables
