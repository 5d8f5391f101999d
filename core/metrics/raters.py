"""Agreement among all human raters: the chance-corrected coefficients over every human column.

Every coefficient of :mod:`core.metrics.agreement` (Gwet's AC, Brennan-Prediger, Fleiss' kappa, Conger's kappa)
and Krippendorff's alpha (:mod:`core.metrics.krippendorff`), identity, linear and quadratic weights, on the
human ratings mapped to the scale's categories (Gwet 2014, ch. 2-5; Krippendorff 2011).
"""
from __future__ import annotations

import numpy as np

from core.metrics.agreement_totals import agreement_totals, finish_agreement
from core.metrics.krippendorff import coincidence_delta, finish_alpha_from_coincidence
from core.metrics.results import Block, Figure
from core.metrics.suite import point_values, round_to_categories

_WEIGHTINGS = (("identity", ""), ("linear", "_linear"), ("quadratic", "_quadratic"))


def multi_rater(h: np.ndarray, cats: np.ndarray) -> Block:
    """The ``all_raters`` block: every coefficient over all human columns of ``h`` (NaN = missing)."""
    hc = np.where(np.isfinite(h), round_to_categories(np.nan_to_num(h, nan=cats[0]), cats), np.nan)
    idx = np.where(np.isfinite(hc), np.searchsorted(cats, np.nan_to_num(hc, nan=cats[0])), -1)
    t = agreement_totals(idx, cats.size)
    f = {}
    for w, suffix in _WEIGHTINGS:
        for key, coef in (("gwet_ac1" if w == "identity" else "gwet_ac2" + suffix, "gwet"), ("bp" + suffix, "bp"),
                          ("fleiss_kappa" + suffix, "fleiss"), ("conger_kappa" + suffix, "conger")):
            f[key] = (lambda w=w, coef=coef: finish_agreement(t, cats, w, h.shape[1], "", (coef,))[coef])
    coinc = t["coinc"].reshape(cats.size, cats.size)
    for level in ("nominal", "ordinal", "interval"):
        f["krippendorff_alpha_" + level] = (lambda level=level: finish_alpha_from_coincidence(
            coinc, coincidence_delta(cats, level)))
    values, reasons, _ = point_values(f)
    from core.metrics.registry import MULTI_RATER_KEYS
    return Block({k: Figure(values[k], reasons.get(k)) for k in MULTI_RATER_KEYS if k in values})
