"""Chance-corrected agreement for two or more raters with missing ratings and identity / linear / quadratic weights.

Sources: Gwet, K. L. (2014), *Handbook of Inter-Rater Reliability*, 4th ed., chapters 2-5 (multi-rater formulas
with missing ratings, weights, linearised variances); Yannakoudakis & Cummins (2015), "Evaluating the performance
of Automated Text Scoring systems", BEA, section 3; metrics.md section 4.

Notation: subjects (responses) i, categories k = 1..q with values c_k (from the scale, never inferred from the
data), r_ik raters putting subject i in category k, r_i = sum_k r_ik, agreement weights w_kl (1 on the diagonal),
r*_ik = sum_l w_kl r_il, T_w = sum_kl w_kl.

- percent agreement  pa = mean over subjects with r_i >= 2 of sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))
- pi_k = mean over subjects with r_i >= 1 of r_ik / r_i
- coefficient = (pa - pe) / (1 - pe) with pe:
  Gwet AC1/AC2  T_w / (q (q - 1)) sum_k pi_k (1 - pi_k)      Brennan-Prediger  T_w / q^2
  Fleiss (multi-rater Scott's pi)  sum_kl w_kl pi_k pi_l
  Conger (multi-rater Cohen)  sum_kl w_kl (pbar_k pbar_l - s2_kl / R), p_gk the share of rater g's ratings in
  category k, pbar_k its mean over the R raters, s2_kl = (sum_g p_gk p_gl - R pbar_k pbar_l) / (R - 1)
  Krippendorff  1 - (n.. - 1) sum_kl o_kl d_kl / sum_kl n_k n_l d_kl with d = 1 - w and the coincidence matrix
  o_kl = sum_i sum_{j != j'} 1[(k, l) = (x_ij, x_ij')] / (r_i - 1) (equal to Gwet's alpha formula)
With two raters Conger's kappa is Cohen's (weighted) kappa and Fleiss' kappa is Scott's pi.

Memory is O(N x R^2) (one entry per ordered pair of ratings of a subject) plus q x q tables, never N x q x q.
"""
from __future__ import annotations

import numpy as np

from core.metrics.data import as_ratings, category_index
from core.metrics.krippendorff import finish_alpha_from_coincidence
from core.metrics.notes import undefined
from core.metrics.sums import RowSums, as_float, nan_where

WEIGHTS = ("identity", "linear", "quadratic")


def agreement_weights(categories, weights: str = "identity") -> np.ndarray:
    """Agreement weights w_kl over category values c (Gwet 2014, section 3.4; metrics.md section 4).

    identity: 1[k == l]; linear: 1 - |c_k - c_l| / (c_max - c_min); quadratic: 1 - (c_k - c_l)^2 / (c_max - c_min)^2.
    """
    c = np.asarray(categories, dtype=np.float64)
    if weights == "identity":
        return np.eye(c.size)
    if c.size < 2:
        return np.ones((c.size, c.size))
    span = c[-1] - c[0]
    d = np.abs(c[:, None] - c[None, :]) / span
    if weights == "linear":
        return 1.0 - d
    if weights == "quadratic":
        return 1.0 - d * d
    raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")


def category_matrix(ratings, categories) -> tuple[np.ndarray, np.ndarray]:
    """(index matrix with -1 for missing, category values) after validating that every rating is a category."""
    h = as_ratings(ratings)
    cats = np.asarray(categories, dtype=np.float64)
    return category_index(h, cats), cats


def agreement_sums(index: np.ndarray, q: int, prefix: str = "") -> RowSums:
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


def finish_agreement(t: dict, categories, weights: str = "identity", n_raters: int = 2, prefix: str = "",
                     which: tuple[str, ...] = ("gwet", "bp", "fleiss", "conger", "krippendorff")) -> dict:
    """pa, pe and coefficients from :func:`agreement_sums` totals (batch-capable, leading axes allowed)."""
    cats = np.asarray(categories, dtype=np.float64)
    q = cats.size
    w = agreement_weights(cats, weights)
    p = prefix
    n2 = np.asarray(t[p + "n2"], dtype=np.float64)
    n_rated = np.asarray(t[p + "n_rated"], dtype=np.float64)
    pairs = t[p + "pairs"].reshape(np.shape(n2) + (q, q))
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = (w * pairs).sum(axis=(-2, -1)) / n2
        pi = t[p + "pi"] / n_rated[..., None]
    no_pairs = n2 < 1
    reason_pairs = "chance-corrected agreement needs at least one response with two ratings"
    out["pa"] = nan_where(no_pairs, pa, reason_pairs)

    def coef(pe, name, extra_bad=None, extra_reason=""):
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
        counts = np.stack([t[p + f"rater{g}"] for g in range(n_raters)], axis=-2)    # (..., R, q)
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
    if "krippendorff" in which:
        coinc = t[p + "coinc"].reshape(np.shape(n2) + (q, q))
        out["krippendorff"] = finish_alpha_from_coincidence(coinc, 1.0 - w)
    return out


def agreement_tables_from_joint(joint: np.ndarray) -> dict:
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
    return {"n_rated": n, "n2": n, "pairs": (both / 2.0).reshape(lead + (q * q,)),
            "coinc": both.reshape(lead + (q * q,)), "pi": (r0 + r1) / 2.0, "rater0": r0, "rater1": r1}


def agreement_totals(index: np.ndarray, q: int) -> dict:
    """The totals of :func:`agreement_sums` computed directly (one ``bincount`` per rater pair, no per-entry arrays).

    Same numbers as ``agreement_sums(index, q).totals()``; used for point estimates, where it is several times
    faster and lighter (O(N x raters) memory).
    """
    n, R = index.shape
    complete = bool(index.min(initial=0) >= 0)
    if complete and R == 2:                 # the common case, from one joint table
        joint = np.bincount(index[:, 0] * q + index[:, 1], minlength=q * q).astype(np.float64).reshape(q, q)
        return agreement_tables_from_joint(joint)
    valid = index >= 0
    r = np.full(n, float(R)) if complete else valid.sum(axis=1).astype(np.float64)
    out = {"n_rated": np.asarray(float(n if complete else (r >= 1).sum())),
           "n2": np.asarray(float(n if complete and R >= 2 else (r >= 2).sum()))}
    sym = np.zeros(q * q)
    coinc_w = None if complete else np.where(r >= 2, 1.0 / np.maximum(r - 1.0, 1.0), 0.0)
    pair_w = None if complete else np.where(r >= 2, 1.0 / np.maximum(r * (r - 1.0), 1.0), 0.0)
    pairs = np.zeros(q * q)
    coinc = np.zeros(q * q)
    for j in range(R):
        for k in range(j + 1, R):
            if complete:
                sym += np.bincount(index[:, j] * q + index[:, k], minlength=q * q)
            else:
                ok = valid[:, j] & valid[:, k]
                cells = index[ok, j] * q + index[ok, k]
                pairs += np.bincount(cells, weights=pair_w[ok], minlength=q * q)
                coinc += np.bincount(cells, weights=coinc_w[ok], minlength=q * q)
    if complete:
        sym = sym.reshape(q, q)
        both = (sym + sym.T).ravel()
        out["pairs"] = both / (R * (R - 1.0)) if R >= 2 else both
        out["coinc"] = both / (R - 1.0) if R >= 2 else both
    else:
        out["pairs"] = (pairs.reshape(q, q) + pairs.reshape(q, q).T).ravel()
        out["coinc"] = (coinc.reshape(q, q) + coinc.reshape(q, q).T).ravel()
    pi = np.zeros(q)
    for j in range(R):
        if complete:
            counts = np.bincount(index[:, j], minlength=q).astype(np.float64)
            pi += counts / R
        else:
            ok = valid[:, j]
            counts = np.bincount(index[ok, j], minlength=q).astype(np.float64)
            pi += np.bincount(index[ok, j], weights=1.0 / r[ok], minlength=q)
        out[f"rater{j}"] = counts
    out["pi"] = pi
    return out


def _family(ratings, categories, weights: str, which: tuple[str, ...]) -> dict:
    idx, cats = category_matrix(ratings, categories)
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    t = agreement_totals(idx, cats.size)
    return finish_agreement(t, cats, weights, idx.shape[1], which=which)


def chance_corrected_agreement(ratings, categories, weights: str = "identity") -> dict:
    """Every coefficient of the family at once (see the module docstring for the formulas).

    Parameters
    ----------
    ratings : array of shape (n_subjects, n_raters)
        Category values, NaN for missing. Subjects with no rating are ignored.
    categories : array-like
        All category values of the scale, sorted (q = its length; unused categories count).
    weights : {"identity", "linear", "quadratic"}

    Returns
    -------
    dict with ``pa``, ``gwet``, ``bp``, ``fleiss``, ``conger``, ``krippendorff`` and the chance agreements
    ``pe_gwet``, ``pe_bp``, ``pe_fleiss``, ``pe_conger``.
    """
    return {k: as_float(v) for k, v in _family(ratings, categories, weights,
                                               ("gwet", "bp", "fleiss", "conger", "krippendorff")).items()}


def gwet_ac(ratings, categories, weights: str = "identity") -> float:
    """Gwet's AC1 (identity weights) / AC2 (linear or quadratic weights) for any number of raters.

    AC = (pa - pe) / (1 - pe), pe = T_w / (q (q - 1)) sum_k pi_k (1 - pi_k) (Gwet 2014, eq. 4.1, 5.1).
    """
    return as_float(_family(ratings, categories, weights, ("gwet",))["gwet"])


def brennan_prediger(ratings, categories, weights: str = "identity") -> float:
    """Brennan-Prediger coefficient: (pa - pe) / (1 - pe), pe = T_w / q^2 (Brennan & Prediger 1981; Gwet 2014 ch. 5)."""
    return as_float(_family(ratings, categories, weights, ("bp",))["bp"])


def fleiss_kappa(ratings, categories, weights: str = "identity") -> float:
    """Fleiss' kappa = multi-rater Scott's pi: pe = sum_kl w_kl pi_k pi_l (Fleiss 1971; Gwet 2014 ch. 5).

    With two raters and no missing rating this is Scott's pi (1955).
    """
    return as_float(_family(ratings, categories, weights, ("fleiss",))["fleiss"])


scott_pi = fleiss_kappa


def conger_kappa(ratings, categories, weights: str = "identity") -> float:
    """Conger's kappa = multi-rater Cohen's kappa (Conger 1980; Gwet 2014 ch. 5).

    pe = sum_kl w_kl (pbar_k pbar_l - s2_kl / R); with two raters this is Cohen's (weighted) kappa with the
    chance term sum_kl w_kl p_1k p_2l.
    """
    return as_float(_family(ratings, categories, weights, ("conger",))["conger"])


def krippendorff_alpha_weighted(ratings, categories, weights: str = "identity") -> float:
    """Krippendorff's alpha with distance 1 - w_kl over the given categories (Gwet 2014 ch. 5; irrCAC).

    Identity weights give nominal alpha, quadratic weights interval alpha; linear weights use |c_k - c_l|.
    """
    return as_float(_family(ratings, categories, weights, ("krippendorff",))["krippendorff"])


def gwet_standard_errors(ratings, categories, weights: str | tuple[str, ...] = "identity") -> dict:
    """Analytic standard errors of Gwet's AC, Brennan-Prediger and Fleiss' kappa (Gwet 2014, sections 5.3-5.5).

    Linearised per-subject terms over the n subjects with a rating (n2 of them with two or more):
    c_i = (n / n2) (pa_i - pe 1[r_i >= 2]) / (1 - pe), pa_i = sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1)),
    c*_i = c_i - 2 (1 - coef) (pe_i - pe) / (1 - pe) with pe_i = T_w / (q (q - 1)) sum_k r_ik (1 - pi_k) / r_i
    (AC), sum_k r_ik pi+_k / r_i with pi+_k = sum_l w_kl pi_l (Fleiss), pe (BP; then c*_i = c_i);
    Var = sum_i (c*_i - coef)^2 / (n (n - 1)) (infinite population, f = 0).
    O(N x raters^2) time and O(N x raters) memory.

    Returns ``{"gwet", "bp", "fleiss"}``; with a tuple of weight names, ``{weights: {"gwet", "bp", "fleiss"}}``.
    """
    idx, cats = category_matrix(ratings, categories)
    several = isinstance(weights, (tuple, list))
    names = tuple(weights) if several else (weights,)
    for wname in names:
        if wname not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {wname!r}")
    q = cats.size
    valid = idx >= 0
    r = valid.sum(axis=1)
    keep = r >= 1
    idx, valid, r = idx[keep], valid[keep], r[keep].astype(np.float64)
    n = idx.shape[0]
    n2 = float((r >= 2).sum())
    if n < 2 or n2 < 1:
        reason = undefined("analytic standard errors need at least 2 rated responses and one with two ratings")
        res = {"gwet": reason, "bp": reason, "fleiss": reason}
        return {w: dict(res) for w in names} if several else res
    R = idx.shape[1]
    safe = np.maximum(idx, 0)
    # unordered rater pairs; each counts twice (w is symmetric)
    pair_cells = [(None if valid.all() else valid[:, j] & valid[:, k], safe[:, j] * q + safe[:, k])
                  for j in range(R) for k in range(j + 1, R)]
    inv_r = np.broadcast_to((1.0 / r)[:, None], idx.shape)
    pi = np.bincount(idx[valid], weights=inv_r[valid], minlength=q) / n
    two = (r >= 2).astype(np.float64)
    denom = np.where(r >= 2, r * (r - 1.0), 1.0)

    complete = bool(valid.all())

    def per_subject(values_by_cat: np.ndarray) -> np.ndarray:
        acc = np.zeros(n)
        for j in range(R):
            acc += values_by_cat[safe[:, j]] if complete else np.where(valid[:, j], values_by_cat[safe[:, j]], 0.0)
        return acc / r

    results = {}
    for wname in names:
        w = agreement_weights(cats, wname)
        flat = w.ravel()
        pair_sum = np.zeros(n)
        for ok, cell in pair_cells:
            pair_sum += 2.0 * (flat[cell] if ok is None else np.where(ok, flat[cell], 0.0))
        pa_i = np.where(r >= 2, pair_sum / denom, 0.0)
        pa = pa_i.sum() / n2
        tw = w.sum()
        wpi = w @ pi
        out = {}
        terms = [("bp", tw / q**2, None), ("fleiss", float(pi @ wpi), per_subject(wpi))]
        if q > 1:
            terms.insert(0, ("gwet", tw / (q * (q - 1)) * float((pi * (1 - pi)).sum()),
                             tw / (q * (q - 1)) * per_subject(1.0 - pi)))
        else:
            out["gwet"] = undefined("Gwet's AC needs at least 2 categories")
        for name, pe, pe_i in terms:
            if not pe < 1.0 - 1e-15:
                out[name] = undefined(f"no standard error: {name} is undefined (chance agreement is 1)")
                continue
            coef = (pa - pe) / (1.0 - pe)
            c_i = (n / n2) * (pa_i - pe * two) / (1.0 - pe)
            if pe_i is not None:
                c_i = c_i - 2.0 * (1.0 - coef) * (pe_i - pe) / (1.0 - pe)
            out[name] = float(np.sqrt(np.sum((c_i - coef) ** 2) / (n * (n - 1.0))))
        results[wname] = out
    return results if several else results[names[0]]
