"""The fairness analyses of :mod:`core.metrics.estimates.fairness` (OSA, OSD, CSD) on many bootstrap resamples at once.

With categorical predictors every model is a function of per-cell sums (cell = group x human score), so the three
statistics are evaluated for a whole chunk of resamples from weighted cell tables (one ``bincount`` per table) and
one batched ``eigh`` of a groups x groups matrix per resample. The OSA/OSD residual sums are within-group sums of
squares; for CSD the human-score block of the normal equations is diagonal and is eliminated exactly (Schur
complement), leaving A = diag(n_g) - N diag(1/n_h) N' and r = S_g - N (T_h / n_h) with N the group x score count
table, S_g and T_h the error sums by group and by score: RSS(error ~ group + C(H)) = RSS(error ~ C(H)) - r' A^+ r,
and the group adds rank(A) parameters (Searle 1987, *Linear Models for Unbalanced Data*, ch. 4, absorption of a
factor).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import as_pair
from easl_toolkit.core.metrics.estimates.fairness import CONSTANT_SPREAD, FAIRNESS_KEYS, group_codes
from easl_toolkit.core.metrics.notes import undefined

#: Upper bound on the entries of one sub-chunk's cell table in :meth:`FairnessDesign.resampled`.
SUBCHUNK_ENTRIES = 2_000_000
#: Relative eigenvalue threshold for the rank of the absorbed group matrix A (as ``lstsq``'s ``rcond``).
RANK_TOL = 1e-9


def _adjusted(
    rss: NDArray[Any], tss: NDArray[Any], yy: NDArray[Any], n: NDArray[Any], p: NDArray[Any], unit: float
) -> NDArray[Any]:
    """adjR2 = 1 - (1 - R2)(n - 1)/(n - p - 1), R2 = 1 - RSS/TSS; NaN for TSS ~ 0 (constant y) or n - p - 1 <= 0.

    Constant y: TSS <= n (CONSTANT_SPREAD unit)^2 as in :func:`fairness_analysis`, or TSS <= 1e-9 of the sum of
    squares about the sample's mean (the resample's TSS is then cancellation noise)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - np.maximum(rss, 0.0) / tss
        adj = 1.0 - (1.0 - r2) * (n - 1.0) / (n - p - 1.0)
    ok = (tss > 1e-9 * yy) & (tss > n * (CONSTANT_SPREAD * unit) ** 2) & (yy > 0) & (n - p - 1 > 0)
    return np.where(ok, adj, np.nan)


@dataclass
class FairnessDesign:
    """The per-response encoding of one fairness analysis (:func:`fairness_design`), for many bootstrap resamples;
    ``problem``: None, or why the bootstrap interval is undefined."""

    n: int
    group_names: NDArray[Any]
    group_codes: NDArray[Any]  # (n,) group index
    score_codes: NDArray[Any]  # (n,) index of the human score among the distinct scores
    n_scores: int
    error: NDArray[Any]  # (n,) M - H, centred at its sample mean (RSS and TSS do not change)
    squared: NDArray[Any]  # (n,) (M - H)^2, centred at its sample mean
    unit: float  # largest absolute score (scale of "constant" errors)
    problem: str | None

    def resampled(self, counts: ArrayLike) -> dict[str, NDArray[Any]]:
        """``{"osa", "osd", "csd"} -> array (b,)``: the values :func:`fairness_analysis` gives on each resample of a
        chunk (``counts`` (b, n): how often each response was drawn), NaN where a resample has fewer than two groups
        or constant errors."""
        draws = np.atleast_2d(np.asarray(counts, dtype=np.float64))
        b = draws.shape[0]
        if self.problem is not None:
            return {k: np.full(b, np.nan) for k in FAIRNESS_KEYS}
        kg, kh = self.group_names.size, self.n_scores
        step = int(max(1, SUBCHUNK_ENTRIES // max(self.n, kg * kh, 1)))
        parts = [self._chunk(draws[i : i + step], kg, kh) for i in range(0, b, step)]
        return {k: np.concatenate([p[k] for p in parts]) for k in FAIRNESS_KEYS}

    def _chunk(self, counts: NDArray[Any], kg: int, kh: int) -> dict[str, NDArray[Any]]:
        b = counts.shape[0]
        base = np.arange(b, dtype=np.int64)[:, None]
        cell = (base * (kg * kh) + (self.group_codes * kh + self.score_codes)[None, :]).ravel()
        grp = (base * kg + self.group_codes[None, :]).ravel()

        def table(index: NDArray[Any], weights: NDArray[Any], size: int) -> NDArray[Any]:
            w = (counts * weights[None, :]).ravel()
            return np.bincount(index, weights=w, minlength=b * size).reshape(b, size)

        n_cell = table(cell, np.ones(self.n), kg * kh).reshape(b, kg, kh)
        e_cell = table(cell, self.error, kg * kh).reshape(b, kg, kh)
        ee_g = table(grp, self.error**2, kg)
        s_g = table(grp, self.squared, kg)
        ss_g = table(grp, self.squared**2, kg)
        n_g, n_h = n_cell.sum(axis=2), n_cell.sum(axis=1)
        e_g, e_h = e_cell.sum(axis=2), e_cell.sum(axis=1)
        n = n_g.sum(axis=1)
        present_g, present_h = n_g > 0, n_h > 0
        inv_g = np.where(present_g, 1.0 / np.where(present_g, n_g, 1.0), 0.0)
        inv_h = np.where(present_h, 1.0 / np.where(present_h, n_h, 1.0), 0.0)
        p_g = present_g.sum(axis=1) - 1.0
        p_h = present_h.sum(axis=1) - 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            yy_e, y_e = ee_g.sum(axis=1), e_g.sum(axis=1)
            tss_e = yy_e - y_e**2 / n
            yy_s, y_s = ss_g.sum(axis=1), s_g.sum(axis=1)
            tss_s = yy_s - y_s**2 / n
        rss_osa = yy_s - (s_g**2 * inv_g).sum(axis=1)
        rss_osd = yy_e - (e_g**2 * inv_g).sum(axis=1)
        rss_h = yy_e - (e_h**2 * inv_h).sum(axis=1)
        # absorb the human-score factor: A = diag(n_g) - N diag(1/n_h) N', r = S_g - N (T_h / n_h)
        a = np.einsum("bgh,bh,bkh->bgk", n_cell, inv_h, n_cell)
        a = -a
        a[:, np.arange(kg), np.arange(kg)] += n_g
        r = e_g - np.einsum("bgh,bh->bg", n_cell, e_h * inv_h)
        eig, vec = np.linalg.eigh(a)
        keep = eig > RANK_TOL * np.maximum(eig.max(axis=1, keepdims=True), 0.0)
        keep &= eig > 0
        proj = np.einsum("bgk,bg->bk", vec, r)
        explained = np.where(keep, proj**2 / np.where(keep, eig, 1.0), 0.0).sum(axis=1)
        rss_full = rss_h - explained
        p_full = p_h + keep.sum(axis=1)
        ok = (present_g.sum(axis=1) >= 2) & (n >= 3)
        u = self.unit
        osa = _adjusted(rss_osa, tss_s, yy_s, n, p_g, u**2)
        osd = _adjusted(rss_osd, tss_e, yy_e, n, p_g, u)
        csd = _adjusted(rss_full, tss_e, yy_e, n, p_full, u) - _adjusted(rss_h, tss_e, yy_e, n, p_h, u)
        return {"osa": np.where(ok, osa, np.nan), "osd": np.where(ok, osd, np.nan), "csd": np.where(ok, csd, np.nan)}


def group_problem(names: Iterable[Any], sizes: NDArray[Any]) -> str | None:
    """Why the fairness intervals are undefined for subgroups ``names`` of ``sizes`` responses, or None."""
    if len(sizes) < 2 or sizes.sum() < 3:
        return "fairness intervals need at least two subgroups and three responses"
    small = [str(k) for k, v in zip(names, sizes) if v < 2]
    if small:
        verb = "has" if len(small) == 1 else "have"
        return f"fairness intervals need at least 2 responses in every subgroup; {', '.join(small[:5])} {verb} 1"
    return None


def fairness_design(y_true: ArrayLike, y_pred: ArrayLike, groups: ArrayLike) -> FairnessDesign:
    """Encode one fairness analysis (:func:`fairness_analysis`) of human scores ``y_true``, system scores ``y_pred``
    and subgroup labels ``groups`` (each of shape (n,)) for the bootstrap over responses.

    The interval is undefined (``problem`` set) with fewer than two groups or three responses, or when a group has
    a single response (it is absent from about a third of the resamples, so the resampled model changes).
    """
    h, m = as_pair(y_true, y_pred)
    names, codes = group_codes(groups, h.size)
    sizes = np.bincount(codes, minlength=names.size)
    _, hcodes = np.unique(h, return_inverse=True)
    error = m - h
    squared = error**2
    return FairnessDesign(
        n=int(h.size),
        group_names=names,
        group_codes=codes.astype(np.int64),
        score_codes=hcodes.astype(np.int64),
        n_scores=int(hcodes.max()) + 1 if h.size else 0,
        error=error - (error.mean() if h.size else 0.0),
        squared=squared - (squared.mean() if h.size else 0.0),
        unit=float(max(np.abs(h).max(), np.abs(m).max())) if h.size else 0.0,
        problem=group_problem(names, sizes),
    )


def fairness_resampled(
    y_true: ArrayLike, y_pred: ArrayLike, groups: ArrayLike, counts: ArrayLike
) -> dict[str, NDArray[Any]]:
    """OSA, OSD and CSD (adjusted R2 as in :func:`fairness_analysis`) for each row of resampling ``counts``.

    Equivalent to calling :func:`fairness_analysis` on each resample (Loukina, Madnani & Zechner 2019; RSMTool
    ``get_fairness_analyses``), computed from weighted cell sums as described in the module docstring.

    Parameters
    ----------
    y_true, y_pred, groups
        As :func:`~core.metrics.estimates.fairness.fairness_analysis`.
    counts : ndarray of shape (b, n)
        Number of times each response is drawn in each resample.

    Returns
    -------
    dict ``"osa"|"osd"|"csd"`` -> array (b,); NaN (with an UndefinedMetricWarning) when the design has a problem.

    References
    ----------
    Loukina, A., Madnani, N., & Zechner, K. (2019). The many dimensions of algorithmic fairness in educational
    applications. BEA workshop. RSMTool ``get_fairness_analyses``.

    Examples
    --------
    One resample that is the sample itself gives :func:`fairness_analysis`'s values:

    >>> import numpy as np
    >>> from core.metrics.estimates.fairness import fairness_analysis
    >>> h, m, g = [2, 3, 2, 3, 4, 1], [1, 1.5, 3, 3.5, 4, 2], ["K", "K", "E", "E", "K", "E"]
    >>> same = fairness_resampled(h, m, g, np.ones((1, 6)))["osd"][0]
    >>> bool(np.isclose(same, fairness_analysis(h, m, g)["osd"]["value"]))
    True
    """
    design = fairness_design(y_true, y_pred, groups)
    if design.problem is not None:
        undefined(design.problem)
    return design.resampled(counts)
