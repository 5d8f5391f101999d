"""The prepare stage of the evaluation pipeline (:mod:`core.metrics.pipeline`): the explicit score policy
(:func:`apply_score_policy`: RSMTool's zero / non-numeric policy, with counts of what it dropped and changed;
``exclude_zero_scores``, docs/design.md section 4.1), the responses of the comparisons with the first human
column, and the scale (with a note when it comes from the data), in a :class:`Prepared`. Also RSMTool's
post-processing of system scores for the library's users: :func:`trim_scores` to the score range and
:func:`scale_scores` to the human scale (RSMTool ``rsmtool.utils.metrics`` / ``rsmtool.preprocessor``, docs/design.md
section 4.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from easl_toolkit.core.metrics.data import Scale, as_vector, round_to_categories

# Reasons for leaving a response out of the comparisons with the first human column (keys of ``dropped``).
DROP_H1_MISSING = "first human score missing or non-numeric"
DROP_H1_ZERO = "first human score is 0 (zeros excluded)"
DROP_H1_OUT_OF_SCALE = "first human score outside the scale"
DROP_SYSTEM_MISSING = "system score missing or non-numeric"
SET_MISSING_ZERO = "other human score 0 set to missing (zeros excluded)"
SET_MISSING_OUT_OF_SCALE = "other human score outside the scale set to missing"


@dataclass
class PolicyResult:
    """Output of :func:`apply_score_policy`: ``keep`` marks RSMTool's evaluation set (the responses of the
    comparisons with the first human column), ``human`` / ``system`` are those rows; ``ratings`` keeps every input
    row, with the per-rating rules applied to every column, for the metrics that use every rating."""

    keep: NDArray[Any]  # (n,) bool: responses of the comparisons with the first human column
    human: NDArray[Any]  # (n_kept, R) human ratings after the policy
    system: dict[str, NDArray[Any]]  # name -> (n_kept,)
    dropped: dict[str, int]  # reason -> number of responses left out of those comparisons
    changed: dict[str, int]  # reason -> number of ratings set to missing (response kept)
    ratings: NDArray[Any] = field(default_factory=lambda: np.zeros((0, 1)))  # (n, R) every row, per-rating rules
    system_all: dict[str, NDArray[Any]] = field(default_factory=dict)  # name -> (n,) every row
    system_ok: NDArray[Any] = field(default_factory=lambda: np.zeros(0, bool))  # (n,) every system score finite


def apply_score_policy(
    human: ArrayLike, system: dict[str, NDArray[Any]], *, scale: Scale | None = None, exclude_zeros: bool = False
) -> PolicyResult:
    """Apply the explicit zero / non-numeric policy (RSMTool semantics, docs/design.md section 4.1).

    Per rating: an infinite score, a score outside ``scale`` and (under ``exclude_zeros``) a 0 become missing.
    Per response, for the comparisons with the first human column only: a response is left out when its first
    human score is missing, non-numeric or infinite, is 0 under ``exclude_zeros``, or lies outside ``scale``, or
    when any system score is missing or infinite. Metrics over every rating (agreement among all raters, the
    true-score metrics) keep the other responses. Every drop and change is counted by reason.

    Parameters
    ----------
    human : array of shape (n, R)
        Human ratings, NaN for missing (non-numeric values must already be NaN).
    system : dict of name -> array of shape (n,)
    scale : Scale, optional
    exclude_zeros : bool
        RSMTool's ``exclude_zero_scores`` (default off here; on in RSMTool).

    Returns
    -------
    PolicyResult

    References
    ----------
    RSMTool ``exclude_zero_scores`` and its handling of non-numeric scores (RSMTool documentation, "Evaluation
    metrics"; docs/design.md section 4.1).

    Examples
    --------
    >>> import numpy as np
    >>> p = apply_score_policy(np.array([[0, 1], [2, 0], [3, np.nan]]), {"s": np.array([1., 2, 3])},
    ...                        exclude_zeros=True)
    >>> p.keep.tolist(), sum(p.dropped.values()), sum(p.changed.values()), p.ratings[0].tolist()
    ([False, True, True], 1, 1, [nan, 1.0])
    """
    h = np.array(human, dtype=np.float64, copy=True)
    if h.ndim == 1:
        h = h[:, None]
    keep, dropped, sys_out, system_ok = _responses_kept(h[:, 0], system, scale, exclude_zeros)
    changed = _set_missing(h, keep, scale, exclude_zeros)
    return PolicyResult(
        keep=keep,
        human=h[keep],
        system={k: v[keep] for k, v in sys_out.items()},
        dropped=dropped,
        changed=changed,
        ratings=h,
        system_all=sys_out,
        system_ok=system_ok,
    )


def _responses_kept(
    first: NDArray[Any], system: dict[str, NDArray[Any]], scale: Scale | None, exclude_zeros: bool
) -> tuple[NDArray[Any], dict[str, int], dict[str, NDArray[Any]], NDArray[Any]]:
    """The per-response rule of :func:`apply_score_policy`: (rows kept, drops by reason, system scores as float
    arrays, rows with every system score)."""
    n = first.shape[0]
    dropped: dict[str, int] = {}
    keep = np.ones(n, dtype=bool)

    def drop(mask: NDArray[Any], reason: str) -> None:
        new = mask & keep
        if new.any():
            dropped[reason] = dropped.get(reason, 0) + int(new.sum())
            keep[new] = False

    drop(~np.isfinite(first), DROP_H1_MISSING)
    if exclude_zeros:
        drop(first == 0, DROP_H1_ZERO)
    if scale is not None:
        drop((first < scale.min) | (first > scale.max), DROP_H1_OUT_OF_SCALE)
    sys_out = {}
    system_ok = np.ones(n, dtype=bool)
    for name, values in system.items():
        v = np.asarray(values, dtype=np.float64)
        if v.shape != (n,):
            raise ValueError(f"system {name!r} has {v.size} scores for {n} responses")
        drop(~np.isfinite(v), DROP_SYSTEM_MISSING)
        system_ok &= np.isfinite(v)
        sys_out[name] = v
    return keep, dropped, sys_out, system_ok


def _set_missing(h: NDArray[Any], keep: NDArray[Any], scale: Scale | None, exclude_zeros: bool) -> dict[str, int]:
    """The per-rating rule of :func:`apply_score_policy`, in place on ``h``: infinite scores, 0 (under
    ``exclude_zeros``) and scores outside the scale become missing; returns the other columns' changes of the kept
    responses by reason."""
    changed: dict[str, int] = {}
    h[np.isinf(h)] = np.nan
    if exclude_zeros:
        z = (h[:, 1:] == 0) & keep[:, None]
        if z.any():
            changed[SET_MISSING_ZERO] = int(z.sum())
        h[h == 0] = np.nan
    if scale is not None:
        out = (h < scale.min) | (h > scale.max)
        if (out[:, 1:] & keep[:, None]).any():
            changed[SET_MISSING_OUT_OF_SCALE] = int((out[:, 1:] & keep[:, None]).sum())
        h[out] = np.nan
    return changed


@dataclass
class Prepared:
    """Step 1's output over the responses with at least one human rating (the rows of every comparison)."""

    human: NDArray[Any]  # (n, R) after the per-rating policy
    system: dict[str, NDArray[Any]]  # name -> (n,), NaN where missing
    reference: NDArray[Any]  # (n,) bool: compared with the first human column
    system_ok: NDArray[Any]  # (n,) bool: every system score present
    groups: NDArray[Any] | None
    names: list[str]
    scale: Scale
    cats: NDArray[Any] | None
    policy: PolicyResult
    n_input: int
    notes: list[str]
    off_categories: int = 0  # human ratings not on the scale's categories

    @property
    def n_reference(self) -> int:
        return int(self.reference.sum())


def prepare(
    human: ArrayLike,
    system: dict[str, NDArray[Any]],
    *,
    human_names: Sequence[str] | None = None,
    scale: Scale | None = None,
    groups: ArrayLike | None = None,
    exclude_zeros: bool = False,
    notes: list[str] | None = None,
) -> Prepared:
    """Apply the score policy, choose the scale (with a note when it comes from the data), note what changed."""
    h_all = np.asarray(human, dtype=np.float64)
    if h_all.ndim == 1:
        h_all = h_all[:, None]
    names = list(human_names) if human_names else [f"h{j + 1}" for j in range(h_all.shape[1])]
    if len(names) != h_all.shape[1]:
        raise ValueError("human_names must name every human column")
    if not system:
        raise ValueError("at least one system score vector is needed")
    policy = apply_score_policy(h_all, system, scale=scale, exclude_zeros=exclude_zeros)
    rated = np.isfinite(policy.ratings).any(axis=1)
    h = policy.ratings[rated]
    grp = None if groups is None else np.asarray(groups, dtype=object)[rated]
    scale_note = None
    if scale is None:
        finite = h[np.isfinite(h)]
        scale, scale_note = scale_from_range(*((finite.min(), finite.max()) if finite.size else (np.nan, np.nan)))
    cats = scale.category_array if scale.is_categorical else None
    off = 0
    if cats is not None:
        h_obs = h[np.isfinite(h)]
        off = int((round_to_categories(h_obs, cats) != h_obs).sum())
    notes = [*(notes or []), *policy_notes(policy.dropped, policy.changed, scale_note, scale.is_categorical, off)]
    systems = {s: v[rated] for s, v in policy.system_all.items()}
    notes += clipped_notes(systems, policy.keep[rated] & policy.system_ok[rated], scale)
    return Prepared(
        h,
        systems,
        policy.keep[rated],
        policy.system_ok[rated],
        grp,
        names,
        scale,
        cats,
        policy,
        h_all.shape[0],
        notes,
        off,
    )


def clipped_notes(system: dict[str, NDArray[Any]], compared: NDArray[Any], scale: Scale) -> list[str]:
    """One note per system with scores outside ``scale`` among the ``compared`` responses: how many, and that the
    categorical metrics clip them to the scale while the others use them as they are (human scores outside the
    scale are dropped instead, with their own note).

    Examples
    --------
    >>> clipped_notes({"m": np.array([0.5, 3.0, 7.0])}, np.array([True, True, True]), Scale(1, 6))[0][:52]
    'm: 2 of 3 system scores lie outside the scale [1, 6]'
    """
    notes = []
    n = int(compared.sum())
    for name, v in system.items():
        x = v[compared]
        out = int(((x < scale.min) | (x > scale.max)).sum())
        if out:
            notes.append(
                f"{name}: {out} of {n} system scores lie outside the scale [{scale.min:g}, {scale.max:g}]; the "
                "categorical metrics (exact and adjacent agreement, the chance-corrected coefficients) clip them to "
                "the scale, the other metrics use them as they are"
            )
    return notes


def scale_from_range(lo: float, hi: float) -> tuple[Scale, str]:
    """The scale when none is given: [floor(lo), ceil(hi)] of the human scores (a two-point scale at ``lo`` when
    they do not vary), and the note that says so."""
    if np.isfinite(lo) and hi > lo:
        scale = Scale(float(np.floor(lo)), float(np.ceil(hi)))
        return scale, (
            f"no scale given: using [{scale.min:g}, {scale.max:g}] from the human scores; give the "
            "scale explicitly, the categorical coefficients depend on it"
        )
    base = float(lo) if np.isfinite(lo) else 0.0
    return Scale(base, base + 1.0), "no scale given and the human scores do not vary: using a two-point scale"


def policy_notes(
    dropped: dict[str, int], changed: dict[str, int], scale_note: str | None, categorical: bool, off_categories: int
) -> list[str]:
    """The notes of the preparation: responses left out and ratings changed by the policy (by reason), how the
    scale was chosen, and the ratings off the scale's categories (or that the scale has none)."""
    notes = [
        f"{count} response(s) left out of the comparisons with the first human column: {reason}"
        for reason, count in dropped.items()
    ]
    notes += [f"{count} rating(s): {reason}" for reason, count in changed.items()]
    if scale_note:
        notes.append(scale_note)
    if not categorical:
        notes.append(
            "the scale has no categories: exact/adjacent agreement and the chance-corrected coefficients are undefined"
        )
    elif off_categories:
        notes.append(
            f"{off_categories} human rating(s) are not on the scale's categories; the categorical metrics use "
            "them rounded half-to-even and clipped to the scale"
        )
    return notes


#: RSMTool's default trimming tolerance (``trim_tolerance``).
TRIM_TOLERANCE = 0.4998


def trim_scores(
    values: ArrayLike, *, trim_min: float, trim_max: float, tolerance: float = TRIM_TOLERANCE
) -> NDArray[Any]:
    """Clip scores to [trim_min - tolerance, trim_max + tolerance] (RSMTool ``trim``; its default range).

    Parameters
    ----------
    values : array-like of shape (n,)
    trim_min, trim_max : float
        The score scale.
    tolerance : float, default 0.4998
        So that a trimmed score still rounds to the scale's end points.

    Returns
    -------
    ndarray of shape (n,)

    References
    ----------
    RSMTool ``rsmtool.utils.conversion`` / ``preprocessor.trim`` (``trim_min``, ``trim_max``, ``trim_tolerance``).

    Examples
    --------
    >>> trim_scores([0.2, 3.1, 7.9], trim_min=1, trim_max=6).round(4).tolist()
    [0.5002, 3.1, 6.4998]
    """
    v = as_vector(values, "values")
    return np.clip(v, trim_min - tolerance, trim_max + tolerance)


def scale_scores(values: ArrayLike, *, from_mean: float, from_sd: float, to_mean: float, to_sd: float) -> NDArray[Any]:
    """Scaled scores: (M - mean_M) / sd_M * sd_H + mean_H (RSMTool ``scale`` of raw predictions).

    RSMTool takes mean_M, sd_M of the system's predictions and mean_H, sd_H of the human scores on the training
    set; pass the statistics of the set the scaling is to follow.

    Parameters
    ----------
    values : array-like of shape (n,)
    from_mean, from_sd : float
        Mean and sd of the system's scores (training set).
    to_mean, to_sd : float
        Mean and sd of the human scores (training set).

    Returns
    -------
    ndarray of shape (n,)

    References
    ----------
    RSMTool documentation, "Score post-processing: scaled scores".

    Examples
    --------
    >>> scale_scores([1.0, 2.0, 3.0], from_mean=2.0, from_sd=1.0, to_mean=3.5, to_sd=0.5).tolist()
    [3.0, 3.5, 4.0]
    """
    if not from_sd > 0:
        raise ValueError("from_sd must be positive")
    v = as_vector(values, "values")
    return (v - from_mean) / from_sd * to_sd + to_mean
