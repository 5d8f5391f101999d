"""Step 1 of the evaluation pipeline (:mod:`core.metrics.pipeline`): the explicit score policy per rating
(:func:`core.metrics.data.apply_score_policy`), the responses of the comparisons with the first human column, and
the scale (with a note when it comes from the data), in a :class:`Prepared`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.data import PolicyResult, Scale, apply_score_policy, round_to_categories


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
    return Prepared(
        h,
        {s: v[rated] for s, v in policy.system_all.items()},
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
