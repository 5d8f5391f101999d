"""An evaluation campaign as a project: human scores from the annotators' ratings, the draw of an iteration's
responses with recorded probabilities, and the per-system report with intervals (``easl status``).

Human scores (:func:`human_scores`). Each rating ``x`` (unit scale) of annotator ``a`` is put on the scale of the
average counted annotator with the annotator-aware model's offsets ``o`` and slopes ``s`` (``core.models.aware.fit``:
``x = c + o_a + s_a (mu_i - c) + e``): ``h = c + o_bar + (s_bar / s_a) (x - c - o_a)``, ``o_bar`` and ``s_bar`` the
means over the counted annotators weighted by their ratings, the ratio ``s_bar / s_a`` kept within
[1 / :data:`SLOPE_RATIO_MAX`, :data:`SLOPE_RATIO_MAX`]. ``h`` does not depend on where the fit puts its latent scale
(an affine change of ``mu`` changes ``o`` and ``s`` so that every annotator's expected score stays), and its mean
given the response is the average annotator's expected score. The ratings of an annotator the model's diagnostics
flag ``random`` are not counted (``core.models.aware.diagnostics``). A response's
first human score is its earliest counted rating in log order, its second the earliest counted rating by another
annotator.

Probabilities. Iteration 0 is a uniform pilot of whole HITs (simple random samples, :func:`pilot_design`); iteration
t > 0 draws every response's open slots by Poisson sampling with the probabilities of
:func:`core.campaign.design.choose_iteration`, and fills its last HIT up with responses scored twice already
(:func:`arrange`: a third rating is no first or second score, so it leaves the design as it is); the design
records, for every response, the probability its first and second slot would have had if open (``p_first``,
``p_second``) and their unions over the iterations so far, ``1 - prod_t (1 - p_t)`` (``union_first``,
``union_second``), the probability that a response is ever drawn for the slot, which the estimator weights by (the
union form of :func:`core.campaign.design.apply_iteration`). A rating that does not count (a random clicker's)
leaves its slot open for a later iteration. The weights are those of the latest recorded design: while an
iteration's HITs are being answered, its draw already counts in the unions (the figures of ``easl status`` then
lean on the responses answered so far); once they are answered, as when the stopping rule is asked, the weights
are exact.

Estimates (:func:`campaign_estimates`): :func:`core.campaign.estimators.estimate` with the control variates of the
human-score model (:mod:`core.campaign.model`), cross-fitted: each response's from a model fitted on the scores of
the other responses' fold (:func:`core.campaign.model.cross_fitted_predictions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.campaign.estimators import MIN_DOUBLE, CampaignEstimates, estimate
from easl_toolkit.core.campaign.model import cross_fitted_predictions

#: Largest factor by which a rating's distance from an annotator's offset is stretched or shrunk (module docstring).
SLOPE_RATIO_MAX = 4.0
#: Share of the pilot's expected human scores spent on second scores (the rater error variance PRMSE needs).
PILOT_SECOND_SHARE = 0.2
#: Share of an iteration's human scores that may go to second scores while fewer than :data:`MIN_DOUBLE`
#: responses are scored twice and a target needs them (:data:`NEEDS_DOUBLE`): no interval for those before.
SECOND_CATCH_UP = 0.5
#: The targets whose intervals need responses scored twice.
NEEDS_DOUBLE = frozenset({"prmse", "hh_r", "hh_qwk"})
#: The metrics a campaign reports, as a user names them, and the estimator's name of each.
REPORTED = {
    "mean": "mean",
    "r": "r",
    "qwk": "qwk",
    "rmse": "rmse",
    "smd": "smd",
    "prmse": "prmse_combined",
    "hh_r": "hh_r",
    "hh_qwk": "hh_qwk",
}
#: The design's targets for a user's target (the combined PRMSE is not a function of the moments alone).
DESIGN_TARGETS = {"prmse": ("prmse", "prmse_double")}
CENTER = 0.5


def human_scores(
    item: NDArray[Any],
    annotator: NDArray[Any],
    score01: NDArray[Any],
    offset: NDArray[Any],
    slope: NDArray[Any],
    counted: NDArray[Any],
    n_items: int,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """(first, second): each response's first and second human score on the unit scale, NaN where none (module
    docstring). ``item, annotator, score01`` are the live ratings in log order; ``offset, slope, counted`` per
    annotator (``counted``: not flagged ``random``)."""
    first = np.full(n_items, np.nan)
    second = np.full(n_items, np.nan)
    item = np.asarray(item, dtype=np.int64)
    annotator = np.asarray(annotator, dtype=np.int64)
    keep = np.flatnonzero(np.asarray(counted, dtype=bool)[annotator]) if item.size else np.zeros(0, np.int64)
    if not keep.size:
        return first, second
    it, an = item[keep], annotator[keep]
    n_a = np.bincount(an, minlength=offset.size).astype(np.float64)
    o_bar, s_bar = float(n_a @ offset / n_a.sum()), float(n_a @ slope / n_a.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.clip(np.nan_to_num(s_bar / slope, nan=1.0, posinf=SLOPE_RATIO_MAX), 0.0, None)
    ratio = np.clip(ratio, 1.0 / SLOPE_RATIO_MAX, SLOPE_RATIO_MAX)
    h = CENTER + o_bar + ratio[an] * (np.asarray(score01, dtype=np.float64)[keep] - CENTER - offset[an])
    _, pos = np.unique(it, return_index=True)
    first[it[pos]] = h[pos]
    rater = np.full(n_items, -1, dtype=np.int64)
    rater[it[pos]] = an[pos]
    other = np.flatnonzero(an != rater[it])
    _, pos2 = np.unique(it[other], return_index=True)
    second[it[other][pos2]] = h[other][pos2]
    return first, second


def design_targets(targets: Sequence[str]) -> tuple[str, ...]:
    """The estimator's metrics that drive the design for a user's ``targets`` (:data:`DESIGN_TARGETS`)."""
    out: list[str] = []
    for t in targets:
        out.extend(m for m in DESIGN_TARGETS.get(t, (t,)) if m not in out)
    return tuple(out)


def pilot_hits(n_items: int, n_hits: int, hit_size: int) -> tuple[int, int]:
    """``(n_first, n_second)`` of the pilot: whole HITs of first scores and of second scores, the second ones
    :data:`PILOT_SECOND_SHARE` of the HITs (at least one when there are two or more, never more than the first
    ones), each at most ``n_items``."""
    second_hits = min(max(1, round(PILOT_SECOND_SHARE * n_hits)), n_hits // 2) if n_hits >= 2 else 0
    n_first = min(n_items, (n_hits - second_hits) * hit_size)
    return n_first, min(n_first, second_hits * hit_size)


def pilot_design(n_items: int, n_first: int, n_second: int) -> dict[str, NDArray[Any]]:
    """Iteration 0's design: a simple random sample of ``n_first`` responses gets a first score and a simple random
    sample of ``n_second`` of those a second one (:func:`draw_pilot`), so every response's first slot is drawn with
    probability ``n_first / N`` and its second with ``n_second / N``, exactly (module docstring, the arrays
    recorded)."""
    n = max(n_items, 1)
    first, second = np.full(n_items, n_first / n), np.full(n_items, n_second / n)
    return {"p_first": first, "p_second": second, "union_first": first.copy(), "union_second": second.copy()}


def draw_pilot(
    n_items: int, n_first: int, n_second: int, rng: np.random.Generator
) -> tuple[NDArray[Any], NDArray[Any]]:
    """(new first, new second) masks of the pilot (:func:`pilot_design`): fixed-size samples, so that its HITs are
    whole."""
    chosen = rng.permutation(n_items)[:n_first]
    new1, new2 = np.zeros(n_items, dtype=bool), np.zeros(n_items, dtype=bool)
    new1[chosen] = True
    new2[rng.permutation(chosen)[:n_second]] = True
    return new1, new2


def draw(
    p_first: NDArray[Any], p_second: NDArray[Any], first: NDArray[Any], second: NDArray[Any], rng: np.random.Generator
) -> tuple[NDArray[Any], NDArray[Any]]:
    """(new first, new second) masks of one iteration: Poisson draws of the open slots (a response without a score
    gets its second score with probability ``p_second / p_first`` given its first, so that both come together with
    probability ``p_second``), the uniforms from ``rng`` (:func:`core.campaign.design.poisson_sample`)."""
    u1, u2 = rng.random(p_first.size), rng.random(p_first.size)
    open1 = np.isnan(first)
    new1 = open1 & (u1 < p_first)
    with np.errstate(invalid="ignore", divide="ignore"):
        cond = np.where(p_first > 0, p_second / np.where(p_first > 0, p_first, 1.0), 0.0)
    draw2 = np.where(open1, u2 < cond, u2 < p_second)
    new2 = np.isnan(second) & (~open1 | new1) & draw2
    return new1, new2


def arrange(
    new1: NDArray[Any],
    new2: NDArray[Any],
    hit_size: int,
    rng: np.random.Generator,
    filler: NDArray[Any] | None = None,
) -> NDArray[Any]:
    """HITs of ``hit_size`` responses: the first scores' slots, then the second scores', each kind shuffled, cut
    into HITs in that order, a response drawn for both kept out of one HIT (:func:`_apart`). The last HIT, where it
    is short, is filled up with ``filler`` responses (those scored twice already: a further rating of one is not a
    first or second score, so the design is unchanged, and it helps the annotator model place its annotator), so
    that every HIT shows ``hit_size`` responses, as a Label Studio task must; with too few, it ends in -1."""
    slots = np.concatenate([rng.permutation(np.flatnonzero(m)) for m in (new1, new2)]).astype(np.int64)
    n_hits = -(-slots.size // hit_size)
    padded = np.full(n_hits * hit_size, -1, dtype=np.int64)
    padded[: slots.size] = slots
    spare = rng.permutation(np.asarray(filler if filler is not None else [], dtype=np.int64))
    missing = padded.size - slots.size
    if 0 < missing <= spare.size:
        padded[slots.size :] = spare[:missing]
    return _apart(padded.reshape(n_hits, hit_size))


def _apart(rows: NDArray[Any]) -> NDArray[Any]:
    """``rows`` with no response twice in one HIT: a repeated response swaps places with one of another HIT that
    holds neither (a response drawn for its first and second score in one iteration, which the cut into HITs put
    together: rare, but for tiny iterations)."""
    ordered = np.sort(rows, axis=1)
    twice = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1)
    for h in np.flatnonzero(twice):
        row = rows[h]
        values, counts = np.unique(row[row >= 0], return_counts=True)
        for value in values[counts > 1]:
            j = int(np.flatnonzero(row == value)[-1])
            for other in range(rows.shape[0]):
                if other == h or value in rows[other]:
                    continue
                k = next((k for k, v in enumerate(rows[other]) if v >= 0 and v not in row), None)
                if k is not None:
                    row[j], rows[other, k] = rows[other, k], value
                    break
    return rows


def second_floor(
    all_first: NDArray[Any], all_second: NDArray[Any], second: NDArray[Any], budget: float, targets: Sequence[str]
) -> NDArray[Any]:
    """``all_second`` raised while fewer than ``core.campaign.estimators.MIN_DOUBLE`` responses have two scores (PRMSE
    and human-human agreement get an interval from that many on, and the design allocates second scores by the
    spread of the double-scored responses' terms), so that the
    iteration is expected to draw ``min(need, share x budget)`` second scores (``need`` the double-scored responses
    missing; ``share`` :data:`SECOND_CATCH_UP` when a target needs responses scored twice, PRMSE or human-human
    agreement, else :data:`PILOT_SECOND_SHARE`), spread evenly over the responses and at most ``all_first``."""
    n_double = int(np.sum(~np.isnan(second)))
    if n_double >= MIN_DOUBLE or not second.size:
        return all_second
    share = SECOND_CATCH_UP if set(targets) & NEEDS_DOUBLE else PILOT_SECOND_SHARE
    rate = min(1.0, min(MIN_DOUBLE - n_double, share * budget) / second.size)
    out: NDArray[Any] = np.maximum(all_second, np.minimum(rate, all_first))
    return out


def slot_probabilities(
    all_first: NDArray[Any], all_second: NDArray[Any], first: NDArray[Any], second: NDArray[Any]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """(p_first, p_second) of the open slots from the as-if-open probabilities (0 for a closed slot): a response
    without a score gets both in one iteration with probability ``min(p_second, p_first)``
    (:func:`core.campaign.design.choose_iteration`)."""
    open1, open2 = np.isnan(first), np.isnan(second)
    p1 = np.where(open1, all_first, 0.0)
    p2 = np.where(open2, np.where(open1, np.minimum(all_second, all_first), all_second), 0.0)
    return p1, p2


def union(previous: dict[str, NDArray[Any]], p_first: NDArray[Any], p_second: NDArray[Any]) -> dict[str, NDArray[Any]]:
    """The design arrays of an iteration: its probabilities and their unions with ``previous`` (module docstring)."""
    u1 = previous.get("union_first", np.zeros_like(p_first))
    u2 = previous.get("union_second", np.zeros_like(p_second))
    return {
        "p_first": p_first,
        "p_second": p_second,
        "union_first": 1.0 - (1.0 - u1) * (1.0 - p_first),
        "union_second": 1.0 - (1.0 - u2) * (1.0 - p_second),
    }


def weights(design: dict[str, NDArray[Any]], n_items: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """(p_first, p_second) the estimator weights every scored response by: the unions of the recorded design, 1
    where a response was never drawable (a rating outside every HIT, or no design recorded)."""
    out = []
    for key in ("union_first", "union_second"):
        p = design.get(key)
        p = np.ones(n_items) if p is None or p.size != n_items else p
        out.append(np.where(p > 0, p, 1.0))
    return out[0], out[1]


def campaign_estimates(
    systems: NDArray[Any],
    first: NDArray[Any],
    second: NDArray[Any],
    p_first: NDArray[Any],
    p_second: NDArray[Any],
    metrics: Sequence[str] = tuple(REPORTED),
) -> CampaignEstimates:
    """Estimates of ``metrics`` (names of :data:`REPORTED`) for one campaign: systems (N, K), human scores and their
    probabilities (N,), with the cross-fitted control variates of the human-score model
    (:func:`core.campaign.model.cross_fitted_predictions`; :func:`core.campaign.estimators.estimate`)."""
    s, f, g = systems[None], first[None], second[None]
    predictions = cross_fitted_predictions(s, f, g)
    names = [REPORTED[t] for t in metrics]
    return estimate(s, f, g, p_first[None], p_second[None], predictions=predictions, metrics=names)


@dataclass(frozen=True)
class CampaignReport:
    """The figures of an evaluation campaign (``easl status``): ``systems`` (name -> metric -> figures),
    ``overall`` (metrics of the human scores alone), ``reached``/``reason`` of the stopping rule."""

    systems: dict[str, dict[str, dict[str, Any]]]
    overall: dict[str, dict[str, Any]]
    reached: bool
    reason: str
    widest: float | None


#: The range of each reported metric (the estimator's names): an estimate or interval bound outside it is moved to
#: its edge (a projection onto the values the metric can take, which can only bring an interval closer to the true
#: value). RMSE is at least 0; correlations and kappas lie in [-1, 1]; PRMSE is at most 1.
RANGES = {
    "r": (-1.0, 1.0),
    "qwk": (-1.0, 1.0),
    "hh_r": (-1.0, 1.0),
    "hh_qwk": (-1.0, 1.0),
    "rmse": (0.0, np.inf),
    "prmse_combined": (-np.inf, 1.0),
}


def _figures(est: CampaignEstimates, t: int) -> dict[str, Any]:
    lo_edge, hi_edge = RANGES.get(est.labels[t][0], (-np.inf, np.inf))
    value, low, high = (float(np.clip(a[0, t], lo_edge, hi_edge)) for a in (est.value, est.low, est.high))
    out: dict[str, Any] = {"estimate": None, "ci_low": None, "ci_high": None, "width": None}
    if np.isfinite(value):
        out["estimate"] = value
    if np.isfinite(low) and np.isfinite(high):
        out.update(ci_low=low, ci_high=high, width=high - low)
    if out["width"] is None:
        out["reason"] = str(est.reason[0, t]) or "no interval (too few human scores)"
    return out


def report(
    est: CampaignEstimates, names: Sequence[str], targets: Sequence[str], stop_width: float | None
) -> CampaignReport:
    """The per-system figures of ``est`` (made with the metrics of :data:`REPORTED`), and the stopping rule: every
    target metric's 95% interval narrower than ``stop_width``."""
    back = {v: k for k, v in REPORTED.items()}
    systems: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in names}
    overall: dict[str, dict[str, Any]] = {}
    widths: list[float] = []
    missing: list[str] = []  # the targets without an interval, each with its reason
    for t, (metric, j) in enumerate(est.labels):
        user = back[metric]
        fig = _figures(est, t)
        (overall if j is None else systems[names[j]])[user] = fig
        if user in targets:
            widths.append(np.inf if fig["width"] is None else fig["width"])
            if fig["width"] is None:
                missing.append(f"{user if j is None else names[j] + ' ' + user} ({fig['reason']})")
    widest = max(widths) if widths else None
    if stop_width is None:
        hint = "no stop width (set one with easl status PROJECT --set-stop-width W)"
        return CampaignReport(systems, overall, False, hint, widest)
    reached = widest is not None and widest < stop_width
    if missing:
        reason = "no interval yet for " + "; ".join(missing)
    else:
        shown = "undefined" if widest is None or not np.isfinite(widest) else f"{widest:.4g}"
        reason = f"widest target interval {shown} {'<' if reached else 'not below'} {stop_width:g}"
    return CampaignReport(systems, overall, bool(reached), reason, widest if widest is None else float(widest))
