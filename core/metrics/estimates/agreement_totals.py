"""Sufficient statistics of the chance-corrected agreement family, for one sample or many resamples.

Per-subject terms (:func:`agreement_sums`, one entry per ordered pair of ratings of a subject: O(N x R^2) memory,
never N x q x q) or their totals (:func:`agreement_totals` over the distinct rating patterns,
:func:`agreement_tables_from_joint`) feed :func:`finish_agreement`, which gives pa, every pe and every coefficient
with a leading batch axis (the bootstrap shares the formula). Notation and formulas:
:mod:`core.metrics.estimates.agreement`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import Weights, agreement_weights
from easl_toolkit.core.metrics.estimates.sums import RowSums, nan_where
from easl_toolkit.core.metrics.notes import undefined


def agreement_sums(index: NDArray[Any], q: int, prefix: str = "") -> RowSums:
    """Per-subject terms of every coefficient: pair tables, category shares, per-rater counts, subject counts.

    ``pairs``: sum over ordered rating pairs (j != j') of 1 / (r_i (r_i - 1)) at cell (x_ij, x_ij');
    ``coinc``: the same with 1 / (r_i - 1) (Krippendorff's coincidence matrix); ``pi``: each rating with weight
    1 / r_i; ``rater{g}``: rater g's category counts; ``n_rated`` = 1[r_i >= 1]; ``n2`` = 1[r_i >= 2].
    """
    n, R = index.shape
    valid = index >= 0
    r = valid.sum(axis=1).astype(np.float64)
    s = RowSums(n)
    p = prefix
    s.add(p + "n_rated", (r >= 1).astype(np.float64))
    s.add(p + "n2", (r >= 2).astype(np.float64))
    rows_l, cells_l = [], []
    for j in range(R):
        for k in range(R):
            if j == k:
                continue
            ok = np.flatnonzero(valid[:, j] & valid[:, k])
            rows_l.append(ok)
            cells_l.append(index[ok, j] * q + index[ok, k])
    rows = np.concatenate(rows_l) if rows_l else np.zeros(0, np.int64)
    cells = np.concatenate(cells_l) if cells_l else np.zeros(0, np.int64)
    rr = r[rows]
    s.add_counts(p + "pairs", rows, cells, 1.0 / (rr * (rr - 1.0)), q * q)
    s.add_counts(p + "coinc", rows, cells, 1.0 / (rr - 1.0), q * q)
    ri, rj = np.nonzero(valid)
    s.add_counts(p + "pi", ri, index[ri, rj], 1.0 / r[ri], q)
    for j in range(R):
        ok = np.flatnonzero(valid[:, j])
        s.add_counts(p + f"rater{j}", ok, index[ok, j], 1.0, q)
    return s


def finish_agreement(
    t: dict[str, NDArray[Any]],
    categories: ArrayLike,
    weights: Weights = "identity",
    n_raters: int = 2,
    prefix: str = "",
    which: tuple[str, ...] = ("gwet", "bp", "fleiss", "conger"),
) -> dict[str, NDArray[Any]]:
    """pa, pe and coefficients from :func:`agreement_sums` totals (batch-capable, leading axes allowed; Krippendorff's
    alpha: :func:`~core.metrics.estimates.krippendorff.finish_alpha_from_coincidence` of the ``coinc`` total)."""
    cats = np.asarray(categories, dtype=np.float64)
    q = cats.size
    w = agreement_weights(cats, weights)
    p = prefix
    n2 = np.asarray(t[p + "n2"], dtype=np.float64)
    n_rated = np.asarray(t[p + "n_rated"], dtype=np.float64)
    pairs = t[p + "pairs"].reshape(np.shape(n2) + (q, q))
    out: dict[str, NDArray[Any]] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = (w * pairs).sum(axis=(-2, -1)) / n2
        pi = t[p + "pi"] / n_rated[..., None]
    no_pairs = n2 < 1
    reason_pairs = "chance-corrected agreement needs at least one response with two ratings"
    out["pa"] = nan_where(no_pairs, pa, reason_pairs)

    def coef(
        pe: NDArray[Any], name: str, extra_bad: NDArray[Any] | None = None, extra_reason: str = ""
    ) -> NDArray[Any]:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = (pa - pe) / (1.0 - pe)
        value = nan_where(no_pairs, value, reason_pairs)
        bad = ~no_pairs & ~(pe < 1.0 - 1e-15)
        value = nan_where(bad, value, f"{name} is undefined: chance agreement is 1 (one category in use)")
        if extra_bad is not None:
            value = nan_where(~no_pairs & extra_bad, value, extra_reason)
        return value

    tw = w.sum()
    if "gwet" in which:
        if q < 2:
            out["pe_gwet"] = np.full(np.shape(n2), np.nan)
            out["gwet"] = np.full(np.shape(n2), undefined("Gwet's AC needs at least 2 categories"))
        else:
            pe = tw / (q * (q - 1)) * (pi * (1.0 - pi)).sum(axis=-1)
            out["pe_gwet"] = pe
            out["gwet"] = coef(pe, "Gwet's AC")
    if "bp" in which:
        pe = np.broadcast_to(tw / q**2, np.shape(n2))
        out["pe_bp"] = pe
        out["bp"] = coef(pe, "Brennan-Prediger")
    if "fleiss" in which:
        pe = np.einsum("...k,kl,...l->...", pi, w, pi)
        out["pe_fleiss"] = pe
        out["fleiss"] = coef(pe, "Fleiss' kappa (Scott's pi)")
    if "conger" in which:
        counts = np.stack([t[p + f"rater{g}"] for g in range(n_raters)], axis=-2)  # (..., R, q)
        ng = counts.sum(axis=-1)
        present = ng > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            pg = np.where(present[..., None], counts / np.where(present, ng, 1.0)[..., None], 0.0)
        rr = present.sum(axis=-1).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            pbar = pg.sum(axis=-2) / rr[..., None]
            outer = pbar[..., :, None] * pbar[..., None, :]
            s2 = (np.einsum("...gk,...gl->...kl", pg, pg) - rr[..., None, None] * outer) / (rr[..., None, None] - 1.0)
            pe = (w * (outer - s2 / rr[..., None, None])).sum(axis=(-2, -1))
        out["pe_conger"] = pe
        out["conger"] = coef(pe, "Conger's (Cohen's) kappa", rr < 2, "Conger's kappa needs at least 2 raters")
    return out


def agreement_tables_from_joint(joint: NDArray[Any]) -> dict[str, NDArray[Any]]:
    """The :func:`agreement_sums` totals of two raters with no missing rating, from their joint table.

    ``joint[..., k, l]`` counts subjects rated k by rater 0 and l by rater 1 (batch axes allowed). Then every
    subject has r_i = 2: pairs = (J + J^T) / 2, coinc = J + J^T, pi = (row sums + column sums) / 2, the raters'
    counts are the row and column sums, and n_rated = n2 = the number of subjects.
    """
    j = np.asarray(joint, dtype=np.float64)
    q = j.shape[-1]
    lead = j.shape[:-2]
    both = j + np.swapaxes(j, -1, -2)
    r0, r1 = j.sum(axis=-1), j.sum(axis=-2)
    n = j.sum(axis=(-2, -1))
    return {
        "n_rated": n,
        "n2": n,
        "pairs": (both / 2.0).reshape(lead + (q * q,)),
        "coinc": both.reshape(lead + (q * q,)),
        "pi": (r0 + r1) / 2.0,
        "rater0": r0,
        "rater1": r1,
    }


def agreement_totals(index: NDArray[Any], q: int) -> dict[str, NDArray[Any]]:
    """The totals of :func:`agreement_sums`, computed over the distinct rating patterns (:func:`rating_patterns`),
    each weighted by its number of subjects: at most (q + 1)^R rows, whatever the number of subjects."""
    rows, mult = rating_patterns(index, q)
    return {k: v[0] for k, v in agreement_sums(rows, q).totals(mult[None, :]).items()}


def category_counts(index: NDArray[Any], q: int) -> NDArray[Any]:
    """r_ik: how many raters put subject i in category k, from an index matrix (-1 = missing)."""
    n, R = index.shape
    counts = np.zeros(n * q)
    for j in range(R):
        ok = index[:, j] >= 0
        counts += np.bincount(np.flatnonzero(ok) * q + index[ok, j], minlength=n * q)
    return counts.reshape(n, q)


def rating_patterns(index: NDArray[Any], q: int, *, return_inverse: bool = False) -> tuple[NDArray[Any], ...]:
    """The distinct rows of a category-index matrix in ``np.unique(axis=0)`` order and how many subjects have each
    (the linearised terms of subjects with the same ratings are equal, so the variance sums run over at most
    (q + 1)^R patterns); with ``return_inverse`` also each subject's pattern."""
    n, R = index.shape
    code, top = np.zeros(n, dtype=np.int64), 1  # each row as one integer < top, column 0 most significant
    for j in range(R):
        if top * (q + 1) >= 2**62:  # renumbered 0, 1, ... in the same order, to make room for the next column
            code = np.unique(code, return_inverse=True)[1].reshape(-1)
            top = int(code.max(initial=0)) + 1
        code, top = code * (q + 1) + (index[:, j] + 1), top * (q + 1)
    if top == (q + 1) ** R and top <= 4 * max(n, 1_000_000):  # a small code space: counted, not sorted
        counts = np.bincount(code, minlength=top)
        codes = np.flatnonzero(counts)
        inverse, mult = np.cumsum(counts > 0)[code] - 1, counts[codes]
        rows = codes[:, None] // (q + 1) ** np.arange(R - 1, -1, -1, dtype=np.int64) % (q + 1) - 1
    else:
        _, first, inverse, mult = np.unique(code, return_index=True, return_inverse=True, return_counts=True)
        rows = index[first]
    mult = mult.astype(np.float64)
    return (rows, mult, inverse.reshape(-1)) if return_inverse else (rows, mult)
