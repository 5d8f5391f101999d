"""Uncertainty by resampling: a seeded, vectorised nonparametric bootstrap over responses (analytic intervals:
:mod:`core.metrics.intervals`).

Resampling unit: the response (all its human ratings and every system score together), drawn with replacement n
times per resample (Efron & Tibshirani 1993, ch. 6 and 13, percentile intervals). Chunks of resamples come from one
seeded ``numpy.random.Generator`` as index matrices ``(b, n)`` and their count matrices, so every metric that is a
function of sums over responses (:mod:`core.metrics.estimates.sums`) is evaluated for a whole chunk with one matrix
product and one ``bincount``. Spearman's rho and the fairness analyses are vectorised over the counts
(:func:`~core.metrics.estimates.association.spearman_rho_resampled`,
:meth:`~core.metrics.estimates.fairness_resampled.FairnessDesign.resampled`); Kendall's tau is recomputed per
resample on the same index rows, so every metric sees the same resamples. Shared parameters: ``n_resamples``
(default 1000), ``seed`` (an int or a ``numpy.random.Generator``, default 0), ``confidence`` (default 0.95).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.estimates.comparisons import Comparisons
from easl_toolkit.core.metrics.estimates.fairness import FAIRNESS_KEYS, fairness_analysis
from easl_toolkit.core.metrics.estimates.fairness_resampled import fairness_design
from easl_toolkit.core.metrics.estimates.pair import batch_values
from easl_toolkit.core.metrics.estimates.sums import RowSums
from easl_toolkit.core.metrics.estimates.true_score import TrueScoreTotals, finish_true_score, true_score_sums
from easl_toolkit.core.metrics.notes import capture, quiet, undefined

#: Upper bound on the entries of one chunk's index matrix (memory ~ 16 bytes per entry).
CHUNK_ENTRIES = 8_000_000


def resample_chunks(
    n: int, n_resamples: int, rng: np.random.Generator, chunk_entries: int = CHUNK_ENTRIES
) -> Iterator[tuple[NDArray[Any], NDArray[Any]]]:
    """Yield ``(index, counts)`` for consecutive chunks of bootstrap resamples; the chunk size does not change the
    resamples (the draws come from ``rng`` in order).

    Parameters
    ----------
    n : int
        Number of responses.
    n_resamples : int
    rng : numpy.random.Generator
    chunk_entries : int
        Upper bound on b x n per chunk.

    Returns
    -------
    iterator of (index, counts): ``(b, n)`` int64 rows drawn with replacement, and the ``(b, n)`` float64 number of
    times each response was drawn.

    References
    ----------
    Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall, ch. 6 and 13.

    Examples
    --------
    >>> import numpy as np
    >>> [(i.shape, c.sum(axis=1).tolist()) for i, c in resample_chunks(4, 3, np.random.default_rng(0))]
    [((3, 4), [4.0, 4.0, 4.0])]
    """
    if n < 1 or n_resamples < 1:
        return
    b = int(max(1, min(n_resamples, chunk_entries // max(n, 1))))
    done = 0
    while done < n_resamples:
        size = min(b, n_resamples - done)
        index = rng.integers(0, n, size=(size, n), dtype=np.int64)
        flat = (index + (np.arange(size, dtype=np.int64) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.float64)
        yield index, counts
        done += size


def bootstrap_sums(
    sums: RowSums,
    finish: Callable[[dict[str, NDArray[Any]]], dict[str, NDArray[Any]]],
    n_resamples: int,
    rng: np.random.Generator,
    *,
    per_resample: Callable[[NDArray[Any]], dict[str, float]] | None = None,
    per_chunk: Callable[[NDArray[Any], NDArray[Any]], dict[str, NDArray[Any]]] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, NDArray[Any]]:
    """Bootstrap distribution ``{name: array (n_resamples,)}`` of every statistic ``finish(totals)`` of the per-response
    terms ``sums`` (``totals -> {name: array (b,)}``, once per chunk), ``per_chunk(index (b, n), counts (b, n))``
    (statistics vectorised over resamples: Spearman's rho) and ``per_resample(index (n,))`` (statistics that are not
    sums: Kendall's tau); ``progress(done, n_resamples)`` after each chunk."""
    parts: dict[str, list[NDArray[Any]]] = {}
    done = 0
    for index, counts in resample_chunks(sums.n, n_resamples, rng):
        values = quiet(finish, sums.totals(counts))
        for name, v in values.items():
            parts.setdefault(name, []).append(np.broadcast_to(np.asarray(v, dtype=np.float64), (index.shape[0],)))
        if per_chunk is not None:
            for name, v in quiet(per_chunk, index, counts).items():
                parts.setdefault(name, []).append(np.asarray(v, dtype=np.float64))
        if per_resample is not None:
            rows = [quiet(per_resample, idx) for idx in index]
            for name in rows[0] if rows else ():
                parts.setdefault(name, []).append(np.array([r[name] for r in rows], dtype=np.float64))
        done += index.shape[0]
        if progress is not None:
            progress(done, n_resamples)
    return {k: np.concatenate(v) for k, v in parts.items()}


def bootstrap_comparisons(
    comp: Comparisons, n_resamples: int, seed: int, progress: Callable[[int, int], None] | None, notes: list[str]
) -> dict[str, NDArray[Any]]:
    """Every figure of ``comp`` on ``n_resamples`` resamples of the responses (one seeded generator): the sums-based
    figures batched over each chunk of resamples, Spearman's rho and the fairness analyses vectorised over the
    chunk's counts, Kendall's tau recomputed per resample on the same draws. Nothing (and a note in ``notes``) with
    fewer than 2 reference responses."""
    if n_resamples <= 0:
        return {}
    if comp.reference_rows.size < 2:
        notes.append("bootstrap skipped: it needs at least 2 responses")
        return {}
    return bootstrap_sums(
        comp.sums,
        lambda t: batch_values(comp.finishers(t, with_ranks=False)),
        n_resamples,
        np.random.default_rng(seed),
        per_resample=comp.per_resample,
        per_chunk=comp.per_chunk,
        progress=progress,
    )


def percentile_interval(samples: NDArray[Any], confidence: float = 0.95) -> tuple[float, float]:
    """Bootstrap percentile interval [q_(a/2), q_(1-a/2)] of the finite resample values (Efron & Tibshirani 13.3).

    Parameters
    ----------
    samples : array-like
        The resample values (NaN for undefined ones).

    Returns
    -------
    (low, high); NaN bounds when fewer than half of the resamples gave a finite value.

    Examples
    --------
    >>> import numpy as np
    >>> [round(x, 6) for x in percentile_interval(np.arange(101.0))]
    [2.5, 97.5]
    """
    s = np.asarray(samples, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size == 0 or s.size < 0.5 * np.asarray(samples).size:
        return float("nan"), float("nan")
    a = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(s, [a, 1.0 - a])
    return float(lo), float(hi)


def bootstrap_ci(samples: dict[str, NDArray[Any]], confidence: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile intervals (:func:`percentile_interval`) for every statistic of :func:`bootstrap_sums`.

    Parameters
    ----------
    samples : dict name -> array (n_resamples,)

    Returns
    -------
    dict name -> (low, high)

    Examples
    --------
    >>> import numpy as np
    >>> {k: [round(x, 6) for x in ci] for k, ci in bootstrap_ci({"r": np.arange(101.0)}).items()}
    {'r': [2.5, 97.5]}
    """
    return {k: percentile_interval(v, confidence) for k, v in samples.items()}


def bootstrap_prmse(
    system: ArrayLike,
    ratings: ArrayLike,
    n_resamples: int = 1000,
    seed: int | np.random.Generator = 0,
    rater_error_variance: float | None = None,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Bootstrap distribution and percentile interval of PRMSE (and the other true-score figures).

    Responses (rows) are resampled with replacement, keeping each response's ratings together; every resample's
    PRMSE uses the Appendix B estimators (Loukina et al. 2020) on that resample, vectorised over resamples.

    Parameters
    ----------
    system, ratings, rater_error_variance : as :func:`~core.metrics.estimates.true_score.prmse`

    Returns
    -------
    dict with ``prmse`` (point estimate), ``ci`` (low, high), ``se`` (bootstrap standard deviation) and
    ``samples`` (the resample values).

    References
    ----------
    Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall, ch. 6 and 13. Loukina et
    al. (2020), Appendix B.

    Examples
    --------
    >>> import numpy as np
    >>> h = np.array([[2, 3], [3, 3], [4, 6], [2, np.nan], [5, 4.]])
    >>> res = bootstrap_prmse([2.5, 3, 5, 2, 4.5], h, n_resamples=50, seed=1)
    >>> res["samples"].shape
    (50,)
    """
    rng = np.random.default_rng(seed)  # a Generator is returned as it is
    sums, _ = true_score_sums(ratings, system)
    point = quiet(finish_true_score, TrueScoreTotals.of(sums.totals()), rater_error_variance)["prmse"]
    dist = bootstrap_sums(
        sums,
        lambda t: {"prmse": finish_true_score(TrueScoreTotals.of(t), rater_error_variance)["prmse"]},
        n_resamples,
        rng,
    ).get("prmse", np.zeros(0))
    if dist.size == 0:
        undefined("the bootstrap needs at least one response and one resample")
    finite = dist[np.isfinite(dist)]
    return {
        "prmse": float(point),
        "ci": percentile_interval(dist, confidence),
        "se": float(np.std(finite, ddof=1)) if finite.size > 1 else float("nan"),
        "samples": dist,
    }


def bootstrap_fairness(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    groups: ArrayLike,
    n_resamples: int = 1000,
    seed: int | np.random.Generator = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Bootstrap percentile intervals of overall score accuracy, overall score difference and conditional score
    difference (Loukina, Madnani & Zechner 2019; RSMTool ``get_fairness_analyses``).

    Responses are resampled with replacement (:func:`resample_chunks`, the draws of ``evaluate``); each resample's
    adjusted R2 values are those of :func:`core.metrics.estimates.fairness.fairness_analysis` on that resample, computed
    in batches by :meth:`core.metrics.estimates.fairness_resampled.FairnessDesign.resampled`; percentile intervals as
    :func:`percentile_interval` (Efron & Tibshirani 1993, 13.3).

    Returns
    -------
    dict with ``point`` (``fairness_analysis`` result), ``ci`` ({key: (low, high)}), ``reasons`` ({key: why the
    interval is NaN}) and ``samples`` ({key: array (n_resamples,)}).

    Parameters
    ----------
    y_true, y_pred, groups : as :func:`~core.metrics.estimates.fairness.fairness_analysis`

    References
    ----------
    Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall, ch. 6 and 13. Loukina,
    Madnani & Zechner (2019).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> h = rng.integers(1, 5, 60).astype(float)
    >>> res = bootstrap_fairness(h, h + rng.normal(0, .5, 60), rng.choice(["a", "b"], 60), n_resamples=20)
    >>> sorted(res["ci"])
    ['csd', 'osa', 'osd']
    """
    rng = np.random.default_rng(seed)  # a Generator is returned as it is
    point, why, _ = capture(fairness_analysis, y_true, y_pred, groups)
    design = fairness_design(y_true, y_pred, groups)
    resamples = n_resamples if design.problem is None else 0
    drawn = bootstrap_sums(RowSums(design.n), lambda t: {}, resamples, rng, per_chunk=lambda _, c: design.resampled(c))
    samples = {k: drawn.get(k, np.zeros(0)) for k in FAIRNESS_KEYS}
    ci = {k: percentile_interval(samples[k], confidence) for k in FAIRNESS_KEYS}
    reasons = {
        k: fairness_ci_reason(design.problem, point[k]["value"], "; ".join(why), n_resamples)
        for k in FAIRNESS_KEYS
        if not np.isfinite(ci[k][0])
    }
    return {"point": point, "ci": ci, "reasons": reasons, "samples": samples}


def fairness_ci_reason(problem: str | None, value: float, value_reason: str, n_resamples: int) -> str:
    """Why a fairness interval is NaN: the design's problem, the undefined point value, or too few defined
    resamples."""
    if problem is not None:
        return problem
    if not np.isfinite(value):
        return value_reason or "the fairness value itself is undefined for these data"
    if n_resamples < 1:
        return "no bootstrap resamples"
    return (
        "fewer than half of the bootstrap resamples gave a defined value (resamples with one subgroup or "
        "constant errors)"
    )
