"""The fairness analyses of Loukina, Madnani & Zechner (2019) from merged cell statistics.

Every model of :func:`core.metrics.estimates.fairness.fairness_analysis` has only categorical predictors (the subgroup
and the human score as a category), so the design row is constant within a cell c = (group, human score). With n_c
responses, cell mean ybar_c and within-cell sum of squares W_c of the outcome y (the error M - H, or its square),
ordinary least squares on the responses equals weighted least squares on the cells with weights n_c
(X'X = sum_c n_c x_c x_c', X'y = sum_c n_c x_c ybar_c), and

    RSS = sum_c W_c + sum_c n_c (ybar_c - x_c' beta)^2,   TSS = sum_c W_c + sum_c n_c (ybar_c - ybar)^2

(the between/within decomposition; Searle 1987, *Linear Models for Unbalanced Data*, ch. 1). The coefficient
inference, the F-tests and the adjusted R2 are those of :mod:`core.metrics.estimates.fairness` (the same functions,
given the cell design weighted by sqrt(n_c)).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.metrics.assemble import fairness_result
from easl_toolkit.core.metrics.bootstrap import percentile_interval
from easl_toolkit.core.metrics.estimates.fairness import FAIRNESS_KEYS, fairness_record, ols_record, tss_floor
from easl_toolkit.core.metrics.estimates.fairness_resampled import group_problem
from easl_toolkit.core.metrics.intervals.analytic import Interval
from easl_toolkit.core.metrics.notes import capture, quiet
from easl_toolkit.core.metrics.results import FairnessEvaluation


def cell_statistics(h: NDArray[Any], m: NDArray[Any], groups: NDArray[Any]) -> pd.DataFrame:
    """Per (group, human score) cell: n, mean and centred sum of squares of e = M - H and of e^2."""
    e = m - h
    df = pd.DataFrame({"g": pd.Series(groups).astype(str).to_numpy(), "h": h, "e": e, "s": e * e})
    by = df.groupby(["g", "h"], sort=True)
    mean = by[["e", "s"]].transform("mean")
    df["ee"] = (df["e"] - mean["e"]) ** 2
    df["ss"] = (df["s"] - mean["s"]) ** 2
    out = by.agg(n=("e", "size"), e=("e", "mean"), s=("s", "mean"), ee=("ee", "sum"), ss=("ss", "sum"))
    out["n"] = out["n"].astype(np.float64)
    return out


def merge_cells(x: pd.DataFrame, y: pd.DataFrame) -> pd.DataFrame:
    """Pairwise update of per-cell count, means and centred sums of squares (Chan, Golub & LeVeque 1983)."""
    j = x.merge(y, how="outer", left_index=True, right_index=True, suffixes=("_x", "_y")).fillna(0.0)
    n = j["n_x"] + j["n_y"]
    out = pd.DataFrame({"n": n}, index=j.index)
    for col, sq in (("e", "ee"), ("s", "ss")):
        delta = j[col + "_y"] - j[col + "_x"]
        out[col] = j[col + "_x"] + delta * j["n_y"] / n
        out[sq] = j[sq + "_x"] + j[sq + "_y"] + delta * delta * j["n_x"] * j["n_y"] / n
    return out.sort_index()


def _cell_ols(mean: NDArray[Any], within: float, n: NDArray[Any], x: NDArray[Any], floor: float) -> dict[str, Any]:
    """The ``_ols`` record of OLS on the responses, from the cells (means ``mean``, weights ``n``, design ``x``)."""
    total = float(n.sum())
    root = np.sqrt(n)
    design = np.column_stack([np.ones(n.size), x]) * root[:, None]
    coef, _, rank, _ = np.linalg.lstsq(design, root * mean, rcond=None)
    fitted = design @ coef / root
    rss = within + float((n * (mean - fitted) ** 2).sum())
    grand = float((n * mean).sum() / total)
    tss = within + float((n * (mean - grand) ** 2).sum())
    return ols_record(coef, rss, tss, total, int(rank), design, floor)


def fairness_from_cells(cells: pd.DataFrame, unit: float, base_group: str | None = None) -> dict[str, Any]:
    """The record of :func:`core.metrics.estimates.fairness.fairness_analysis` from merged cells (index (group, human
    score); columns n, e, s = the means of the error and the squared error, ee, ss = their within-cell sums of
    squares)."""
    groups = cells.index.get_level_values(0).to_numpy().astype(str)
    scores = cells.index.get_level_values(1).to_numpy(dtype=np.float64)
    n = cells["n"].to_numpy(dtype=np.float64)
    names, codes = np.unique(groups, return_inverse=True)
    total = int(n.sum())
    means = {"e": (cells["e"].to_numpy(dtype=np.float64), float(cells["ee"].sum()))}
    means["s"] = (cells["s"].to_numpy(dtype=np.float64), float(cells["ss"].sum()))
    floors = {"e": tss_floor(total, unit), "s": tss_floor(total, unit**2)}
    return fairness_record(names, codes, scores, n, base_group, lambda y, x: _cell_ols(*means[y], n, x, floors[y]))


def resampled_cells(
    h: NDArray[Any], m: NDArray[Any], groups: NDArray[Any], cells: pd.DataFrame, counts: NDArray[Any]
) -> dict[str, NDArray[Any]]:
    """(b, cells) weighted sums of each resample: n, S1 = sum w (e - ebar_c), S2 = sum w (e - ebar_c)^2 and T1, T2
    likewise for e^2 (centred at the cell means of ``cells``, :func:`cell_statistics` of the same responses)."""
    e = m - h
    codes = cells.index.get_indexer(pd.MultiIndex.from_arrays([pd.Series(groups).astype(str).to_numpy(), h]))
    de = e - cells["e"].to_numpy()[codes]
    ds = e * e - cells["s"].to_numpy()[codes]
    b, c = counts.shape[0], len(cells)
    flat = (np.arange(b, dtype=np.int64)[:, None] * c + codes[None, :]).ravel()

    def table(v: NDArray[Any]) -> NDArray[Any]:
        return np.bincount(flat, weights=(counts * v[None, :]).ravel(), minlength=b * c).reshape(b, c)

    return {"n": table(np.ones(e.size)), "S1": table(de), "S2": table(de * de), "T1": table(ds), "T2": table(ds * ds)}


def merge_resampled(
    x: dict[str, pd.DataFrame], cx: pd.DataFrame, y: dict[str, pd.DataFrame], cy: pd.DataFrame, merged: pd.DataFrame
) -> dict[str, pd.DataFrame]:
    """Resampled cell sums (frames cells x resamples) of two parts re-centred at the merged cell means and added:
    S1 + n d and S2 + 2 d S1 + n d^2 with d = the part's cell mean - the merged one."""
    out: dict[str, pd.DataFrame] = {}
    for part, cells in ((x, cx), (y, cy)):
        moved = dict(part)
        for first, second, mean in (("S1", "S2", "e"), ("T1", "T2", "s")):
            d = cells[mean] - merged[mean].reindex(cells.index)
            moved[second] = part[second] + part[first].mul(2.0 * d, axis=0) + part["n"].mul(d * d, axis=0)
            moved[first] = part[first] + part["n"].mul(d, axis=0)
        for k, v in moved.items():
            v = v.reindex(merged.index, fill_value=0.0)
            out[k] = out[k] + v if k in out else v
    return out


def _samples(cells: pd.DataFrame, boot: dict[str, pd.DataFrame], unit: float) -> dict[str, NDArray[Any]]:
    """OSA, OSD and CSD of every resample, from its cell sums (:func:`fairness_from_cells` on each)."""
    n = boot["n"].to_numpy()

    def resample(j: int) -> pd.DataFrame:
        w = n[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            s1, t1 = boot["S1"].to_numpy()[:, j] / w, boot["T1"].to_numpy()[:, j] / w
            frame = pd.DataFrame(
                {
                    "n": w,
                    "e": cells["e"].to_numpy() + s1,
                    "s": cells["s"].to_numpy() + t1,
                    "ee": np.maximum(boot["S2"].to_numpy()[:, j] - w * s1 * s1, 0.0),
                    "ss": np.maximum(boot["T2"].to_numpy()[:, j] - w * t1 * t1, 0.0),
                },
                index=cells.index,
            )
        return frame[w > 0]

    records = [quiet(fairness_from_cells, resample(j), unit) for j in range(n.shape[1])]
    return {k: np.array([rec[k]["value"] for rec in records], dtype=np.float64) for k in FAIRNESS_KEYS}


def fairness_evaluation(
    cells: pd.DataFrame | None,
    unit: float,
    base_group: str | None,
    n_resamples: int,
    boot: dict[str, pd.DataFrame] | None = None,
    confidence: float = 0.95,
) -> FairnessEvaluation:
    """The :class:`FairnessEvaluation` of one system from its merged cells, with percentile intervals of the
    resampled cells (the Poisson bootstrap)."""
    if cells is None:
        cells = pd.DataFrame({"n": [], "e": [], "s": [], "ee": [], "ss": []}, index=pd.MultiIndex.from_tuples([]))
    fa, why, _ = capture(fairness_from_cells, cells, unit, base_group)
    sizes = cells["n"].groupby(level=0).sum()
    problem = group_problem(sizes.index, sizes.to_numpy())
    samples = _samples(cells, boot, unit) if n_resamples > 0 and boot is not None and problem is None else {}
    cis = {k: Interval(*percentile_interval(v, confidence)) for k, v in samples.items()}
    return fairness_result(fa, why, cis=cis, n_resamples=n_resamples, problem=problem, n=int(cells["n"].sum()))
