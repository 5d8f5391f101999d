"""The analytic intervals of every figure of one evaluation that has them, keyed like the point estimates.

Pearson's r of every comparison: Fisher's z interval and scipy's p-value
(:func:`~core.metrics.intervals.analytic.pearson_analytic`); every chance-corrected coefficient of the pairwise and
all-raters blocks: Gwet's linearised standard error with a t-interval and p-value (irrCAC;
:mod:`core.metrics.intervals.agreement_variance`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.metrics.estimates.comparisons import Comparisons
from core.metrics.intervals.agreement_variance import Inference, named_inference
from core.metrics.intervals.analytic import T_METHOD, Analytic, pearson_analytic


def closed_form_intervals(
    comp: Comparisons, values: dict[str, float], *, confidence: float, population_size: float | None
) -> dict[str, Analytic]:
    """Closed-form intervals keyed like ``values``: Fisher z for r; Gwet's linearised standard errors with t
    intervals (irrCAC) for every chance-corrected coefficient of the pairwise and all-raters blocks."""
    out: dict[str, Analytic] = {}
    kw: dict[str, Any] = {"confidence": confidence, "population_size": population_size}
    pairs = [(f"s:{s}:", suite) for s, suite in comp.systems.items()]
    pairs += [("hh:", comp.human_human)] if comp.human_human is not None else []
    for prefix, suite in pairs:
        out[prefix + "corr"] = pearson_analytic(values.get(prefix + "corr", np.nan), int(suite.rows.size), confidence)
        index = suite.category_index()
        if index is not None and comp.cats is not None:  # (a pair has a category index only with categories)
            out.update(as_analytic(prefix, named_inference(index, comp.cats, **kw)))
    if comp.raters is not None and comp.cats is not None:
        out.update(as_analytic("a:", named_inference(comp.raters, comp.cats, weightings=comp.weightings, **kw)))
    return out


def as_analytic(prefix: str, inference: dict[str, Inference]) -> dict[str, Analytic]:
    """The :class:`Analytic` records of Gwet's t-intervals, keyed ``prefix + name``."""
    return {prefix + k: Analytic(v.se, v.low, v.high, v.p_value, T_METHOD) for k, v in inference.items()}
