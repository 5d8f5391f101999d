"""Which responses get a human score, and which a second one: inclusion probabilities and Poisson sampling.

Each response has two *slots*: its first score and its second score. For target metrics t with delta-method
gradients a_t, the contribution of response i to the error of the estimate of t is the residual of its pseudo-outcome,
u_ti = a_t'(phi_i - f_i) (first-score terms for slot 1, double-score terms for slot 2; :mod:`core.campaign.estimators`).
Its predicted squared spread sigma_ti^2 = E[u_ti^2 | S_i] comes from the earlier iterations (:func:`core.campaign.
model.binned_spread`). The variance of the estimate of t is, up to terms the design does not change,
sum_i sigma_ti^2 (1 / p_i - 1) / N^2 (Zrnic & Candès 2024, eq. 4). Minimising sum_t Var_t / V_t, V_t = sum_i
sigma_ti^2 (so every target weighs by its relative variance), under an expected budget sum_i p_i = n gives the
Neyman allocation (Neyman 1934; Zrnic & Candès 2024, section 3):

    p_i = min(1, c s_i),   s_i^2 = sum_t sigma_ti^2 / V_t,   c such that sum_i p_i = n,

over both slots at once (one Lagrange multiplier for the whole budget, which also decides how many second scores
to buy: a slot whose spread is larger gets more budget). The uniform floor mixes with the uniform design of the
same first/second split: p = (1 - tau) p_Neyman + tau n_slot / N_slot, tau >= :data:`TAU_MIN`, so no response has
a probability near 0.

Robust rule (Li, Zrnic & Candès 2025, robust active inference: choose the mixing weight by an estimated variance):
tau is a value on a grid from :data:`TAU_MIN` to 1 (1 = uniform), chosen with two-fold cross-fitted estimates of
each target's design variance, V_hat_t(tau) = sum over earlier-scored responses of u_ti^2 (1 / p_i(tau) - 1) / q_i,
where u_ti are their *actual* residuals, q_i the probability under which they were scored, and p_i(tau) the
allocation computed with spreads fitted on the other fold. A tau below 1 is eligible only where, for every target
(and every guarded metric, :func:`choose_iteration`), V_hat_t(tau) + z se_t < V_hat_t(1), se_t the standard
error of the difference from its per-response terms: an intersection-union test (Berger 1982) of one-sided tests
at level :data:`DEPART_ALPHA`, z = :data:`DEPART_Z` (Bonferroni over the grid). Among the eligible values the one
with the smallest sum_t V_hat_t(tau) / V_hat_t(1) is chosen; with none the design is exactly uniform. A wrong
spread model, a noisy comparison, or one target that a departure would make worse (a homoscedastic mean pulled
by an allocation for r) all keep the uniform design, so the design is never worse than uniform for any target
beyond the test's level.

Second scores: a response scored once in an earlier iteration gets a second score with probability p2_i from the
slot-2 allocation; an unscored response with p1_i and p2_i <= p1_i (both drawn in this iteration, the second
given the first with probability p2_i / p1_i). The allocation respects p2 <= p1 by pooling the two slots' spreads
where the second's is larger (:func:`pooled`).

Sampling is Poisson (independent Bernoulli draws with the recorded probabilities) from a seeded
``numpy.random.Generator`` passed in explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.campaign.estimators import metric_labels
from easl_toolkit.core.campaign.model import N_BINS, HumanScoreModel, binned_mean, fit_model, predict
from easl_toolkit.core.campaign.moments import Layout, gradient, metric_function, moment_predictions, moment_terms

#: Smallest share of the uniform design in the mixture.
TAU_MIN = 0.1
#: Grid of mixing weights tried by the robust rule.
TAU_GRID = tuple(np.round(np.linspace(TAU_MIN, 1.0, 10), 2))
#: One-sided level of each target's test that a mixing weight below 1 lowers its variance.
DEPART_ALPHA = 0.05
#: z_{1 - alpha / 9}, Bonferroni over the 9 mixing weights below 1 (scipy.stats.norm.ppf(1 - 0.05 / 9); easl next
#: need not import SciPy).
DEPART_Z = 2.539184813651313


@dataclass(frozen=True)
class IterationDesign:
    """Probabilities of one iteration, each (C, N): ``p_first`` for responses without a score (0 elsewhere),
    ``p_second`` the overall probability of a second score this iteration (0 for double-scored responses);
    ``tau`` (C,) the uniform share chosen, ``model`` the fitted human-score model; ``all_first``/``all_second`` the
    probabilities every response would have had if its slot were open (for the union probabilities)."""

    p_first: NDArray[Any]
    p_second: NDArray[Any]
    tau: NDArray[Any]
    model: HumanScoreModel
    all_first: NDArray[Any]
    all_second: NDArray[Any]


def check_probabilities(p: NDArray[Any], name: str = "p") -> None:
    """Raise ValueError unless every probability is in (0, 1]."""
    bad = ~((p > 0) & (p <= 1))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be in (0, 1]: entry {idx} is {p[idx]}")


def poisson_sample(p: NDArray[Any], uniforms: NDArray[Any]) -> NDArray[Any]:
    """xi_i = 1[U_i < p_i]: Poisson sampling with probabilities p and uniforms U (drawn with ``rng.random``)."""
    return uniforms < p


def neyman(values: NDArray[Any], counts: NDArray[Any], budget: NDArray[Any]) -> NDArray[Any]:
    """Neyman probabilities of groups of slots: p_g = min(1, c s_g) with sum_g n_g p_g = budget; (C, G).

    ``values`` (C, G) spreads s_g >= 0 of each group (a bin of responses), ``counts`` (C, G) the open slots in it,
    ``budget`` (C,). The scale c is found by bisection on log c; a budget at or above the open slots with positive
    spread gives p = 1 for all of them.
    """
    s = np.where(counts > 0, np.maximum(values, 0.0), 0.0)
    lo: NDArray[Any] = np.full(s.shape[0], -700.0)
    smin = np.min(np.where(s > 0, s, np.inf), axis=1)
    hi: NDArray[Any] = np.log(1.0 / np.where(np.isfinite(smin), smin, 1.0)) + 1.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        spent = (counts * np.minimum(1.0, np.exp(mid)[:, None] * s)).sum(axis=1)
        over = spent > budget
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    return np.asarray(np.minimum(1.0, np.exp(lo)[:, None] * s), dtype=np.float64)


def pooled(s1: NDArray[Any], s2: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Slot spreads under the constraint p2 <= p1: where s2 > s1 both become sqrt((s1^2 + s2^2) / 2).

    A second score of an unscored response needs its first (p2 <= p1). Minimising s1^2 / p1 + s2^2 / p2 + lambda
    (p1 + p2) with p1 = p2 = p where the constraint binds gives p = sqrt((s1^2 + s2^2) / 2) / sqrt(lambda): the
    Neyman allocation with the pooled spread for both slots (the two-slot case of the pool-adjacent-violators
    solution of an order-constrained allocation). Without it p2 is clipped to p1 after the allocation, and the
    budget it was given is not spent. Responses scored once already have no such constraint; their second slot
    takes the pooled spread of their bin too, a small loss of efficiency, not of validity (the probabilities are
    recorded).
    """
    both = np.sqrt((s1 * s1 + s2 * s2) / 2.0)
    bind = s2 > s1
    return np.where(bind, both, s1), np.where(bind, both, s2)


def allocate(
    tables: tuple[NDArray[Any], NDArray[Any]],
    counts: tuple[NDArray[Any], NDArray[Any]],
    budget: NDArray[Any],
    tau: NDArray[Any],
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Per-bin probabilities (p1, p2), each (C, B): Neyman over both slots (their spreads :func:`pooled`), mixed
    with the uniform design of the same first/second split with share ``tau`` (C,).

    ``tables`` are the spreads s of slot 1 and slot 2 per bin, ``counts`` the open slots per bin.
    """
    nb = tables[0].shape[1]
    s1, s2 = pooled(*tables)
    p = neyman(np.concatenate((s1, s2), axis=1), np.concatenate(counts, axis=1), budget)
    p1, p2 = p[:, :nb], p[:, nb:]
    n2 = (counts[1] * p2).sum(axis=1)
    # the rest of the budget, not the sum of p1 (which differs from it by rounding): with no second scores every
    # spread model gives the same uniform design, bit for bit
    n1 = np.minimum(budget - n2, counts[0].sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        u1 = np.nan_to_num(n1 / counts[0].sum(axis=1))
        u2 = np.nan_to_num(n2 / counts[1].sum(axis=1))
    t = tau[:, None]
    return (1.0 - t) * p1 + t * u1[:, None], (1.0 - t) * p2 + t * u2[:, None]


@dataclass(frozen=True)
class Residuals:
    """Actual residuals u_ti (C, N, T) of the scored responses for slots 1 and 2, their masks, the probabilities
    under which they were scored, and every response's bin (C, N)."""

    u1: NDArray[Any]
    u2: NDArray[Any]
    mask1: NDArray[Any]
    mask2: NDArray[Any]
    q1: NDArray[Any]
    q2: NDArray[Any]
    bins: NDArray[Any]


def target_residuals(
    systems: NDArray[Any],
    first: NDArray[Any],
    second: NDArray[Any],
    p_first: NDArray[Any],
    p_second: NDArray[Any],
    model: HumanScoreModel,
    targets: Sequence[str],
) -> Residuals:
    """u_ti = a_t'(phi_i - f_i) on each slot's terms, a_t the gradient of target t at the weighted moment estimate."""
    c, n, k = systems.shape
    lay = Layout(k)
    m, v, bins = predict(model, systems)
    f = moment_predictions(systems, m, v, model.error_var)
    phi = moment_terms(systems, first, second)
    mask1 = ~np.isnan(first)
    mask2 = mask1 & ~np.isnan(second)
    q1 = np.where(mask1, p_first, 1.0)
    q2 = np.where(mask2, p_second, 1.0)
    mu = np.empty(phi.shape[:2])
    blocks = (slice(0, lay.h), slice(lay.h, lay.a), slice(lay.a, lay.d))  # the levels' moments are contiguous
    for cols, weight in zip(blocks, (np.ones_like(q1), mask1 / q1, mask2 / q2), strict=True):
        with np.errstate(invalid="ignore", divide="ignore"):
            mu[:, cols] = np.einsum("cjn,cn->cj", phi[:, cols], weight) / weight.sum(axis=1)[:, None]
    labels = metric_labels(targets, k)
    a = np.nan_to_num(np.stack([gradient(metric_function(t, j, k, n), mu) for t, j in labels], axis=1))
    l1, l2 = blocks[1], blocks[2]
    np.subtract(phi[:, lay.h :], f[:, lay.h :], out=phi[:, lay.h :])  # phi - f where the design needs it, in place
    u1 = (a[..., l1] @ phi[:, l1]).transpose(0, 2, 1) * mask1[..., None]
    u2 = (a[..., l2] @ phi[:, l2]).transpose(0, 2, 1) * mask2[..., None]
    return Residuals(u1=u1, u2=u2, mask1=mask1, mask2=mask2, q1=q1, q2=q2, bins=bins)


def bin_counts(bins: NDArray[Any], mask: NDArray[Any], n_bins: int = N_BINS) -> NDArray[Any]:
    """(C, n_bins) number of responses of each bin in ``mask``."""
    c = bins.shape[0]
    flat = (np.arange(c)[:, None] * n_bins + bins)[mask]
    return np.bincount(flat, minlength=c * n_bins).reshape(c, n_bins).astype(np.float64)


def spread_tables(
    res: Residuals, fit_mask: NDArray[Any] | None = None, n_bins: int = N_BINS
) -> tuple[NDArray[Any], NDArray[Any]]:
    """(s1, s2) per bin, each (C, n_bins): s = sqrt(sum_t sigma_t^2 / V_t), spreads fitted on ``fit_mask``.

    V_t = the mean over all responses of sigma_t1^2 + sigma_t2^2 (the uniform design's variance scale of target t).
    """
    m1 = res.mask1 if fit_mask is None else res.mask1 & fit_mask
    m2 = res.mask2 if fit_mask is None else res.mask2 & fit_mask
    sig1 = np.nan_to_num(binned_mean(res.u1 * res.u1, res.bins, m1, n_bins), nan=1.0)
    sig2 = np.nan_to_num(binned_mean(res.u2 * res.u2, res.bins, m2, n_bins), nan=0.0)
    sig2 = np.where(np.abs(res.u2).sum(axis=1)[:, None, :] > 0, sig2, 0.0)
    share = bin_counts(res.bins, np.ones_like(res.mask1), n_bins)
    share = share / share.sum(axis=1, keepdims=True)
    scale = np.einsum("cb,cbt->ct", share, sig1 + sig2)[:, None, :]
    scale = np.where(scale > 0, scale, 1.0)
    return np.sqrt((sig1 / scale).sum(axis=-1)), np.sqrt((sig2 / scale).sum(axis=-1))


def robust_tau(
    res: Residuals,
    budget: NDArray[Any],
    counts: tuple[NDArray[Any], NDArray[Any]],
    rng: np.random.Generator,
    *,
    invert: bool = False,
    margin: float = DEPART_Z,
    n_targets: int | None = None,
) -> NDArray[Any]:
    """The uniform share tau in :data:`TAU_GRID`, from two-fold cross-fitted variance estimates; (C,).

    For every target t and mixing weight tau, D_t(tau) = V_hat_t(tau) - V_hat_t(1) is a sum of per-response terms
    (module docstring) with standard error se_t from their spread. tau < 1 is eligible only where
    D_t(tau) + margin se_t < 0 for *every* target (an intersection-union test, Berger 1982: each target's
    one-sided test at level alpha, no correction across targets; ``margin`` = z_{1 - alpha / 9}, Bonferroni over
    the grid); among the eligible values the one with the smallest sum_t V_hat_t(tau) / V_hat_t(1) is chosen,
    and tau = 1 (exactly the uniform design) where none is eligible. The Neyman part does not depend on tau, so
    each fold allocates once and every tau is a mixture of it. ``invert`` replaces each spread s by 1 / s (a
    deliberately wrong model, for the study). The residuals' first ``n_targets`` columns (all if None) are the
    targets, which the allocation and the objective use; the others are guarded metrics, tested only.
    """
    c, n = res.mask1.shape
    fold = rng.random((c, n)) < 0.5
    aim = _targets_only(res, n_targets)
    neyman_parts = []
    for part in (fold, ~fold):
        t1, t2 = spread_tables(aim, ~part)
        if invert:
            t1, t2 = _inverted(t1), _inverted(t2)
        neyman_parts.append(allocate((t1, t2), counts, budget, np.zeros(c)))
    uniform = allocate(neyman_parts[0], counts, budget, np.ones(c))
    # each response's probabilities looked up once per fold; a mixture of the lookups equals the lookup of the mixture
    u1, u2 = (np.take_along_axis(u, res.bins, axis=1) for u in uniform)
    looked = [tuple(np.take_along_axis(q, res.bins, axis=1) for q in qs) for qs in neyman_parts]
    # each response's Neyman probabilities come from the allocation fitted on the other fold
    own1, own2 = (np.where(fold, looked[0][i], looked[1][i]) for i in (0, 1))

    def weights(t: float) -> tuple[NDArray[Any], NDArray[Any]]:
        """(1 / p_i(tau) - 1) / q_i on each scored slot, (C, N) for slots 1 and 2."""
        with np.errstate(divide="ignore", invalid="ignore"):
            w1 = np.where(res.mask1, (1.0 / ((1.0 - t) * own1 + t * u1) - 1.0) / res.q1, 0.0)
            w2 = np.where(res.mask2, (1.0 / ((1.0 - t) * own2 + t * u2) - 1.0) / res.q2, 0.0)
        return np.nan_to_num(w1, posinf=1e300), np.nan_to_num(w2, posinf=1e300)

    e1, e2 = res.u1 * res.u1, res.u2 * res.u2  # (C, N, T); 0 where the slot is not scored
    squares = (e1 * e1, e1 * e2 if res.mask2.any() else None, e2 * e2)
    b1, b2 = weights(1.0)
    base_total = _dot(b1, e1) + _dot(b2, e2)  # (C, T)
    live = base_total > 0  # a target without residual variance cannot lose
    scale = np.where(live, base_total, 1.0)
    m = np.maximum(res.mask1.sum(axis=1), 1)[:, None]
    best: NDArray[Any] = (base_total / scale)[:, :n_targets].sum(axis=1)
    tau: NDArray[Any] = np.ones(c)
    for t in TAU_GRID[:-1]:
        w1, w2 = weights(t)
        d1, d2 = w1 - b1, w2 - b2  # D_ti = e1_ti d1_i + e2_ti d2_i, summed and squared through the weights
        total = _dot(d1, e1) + _dot(d2, e2)
        square = _dot(d1 * d1, squares[0]) + _dot(d2 * d2, squares[2])
        if squares[1] is not None:
            square += 2.0 * _dot(d1 * d2, squares[1])
        with np.errstate(invalid="ignore", over="ignore"):
            se = np.sqrt(np.maximum(square - total * total / m, 0.0))
        eligible = ((total + margin * se < 0.0) | ~live).all(axis=1) & live.any(axis=1)
        objective = ((base_total + total) / scale)[:, :n_targets].sum(axis=1)
        better = eligible & (objective < best * (1.0 - 1e-9))
        best = np.where(better, objective, best)
        tau = np.where(better, t, tau)
    return tau


def _dot(w: NDArray[Any], x: NDArray[Any]) -> NDArray[Any]:
    """sum_i w_ci x_cit, (C, T), as a batched matrix product."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(np.matmul(w[:, None, :], x)[:, 0, :], dtype=np.float64)


def _targets_only(res: Residuals, n_targets: int | None) -> Residuals:
    """The residuals of the first ``n_targets`` columns (the targets; the rest are guarded metrics)."""
    return res if n_targets is None else replace(res, u1=res.u1[..., :n_targets], u2=res.u2[..., :n_targets])


def _inverted(s: NDArray[Any]) -> NDArray[Any]:
    with np.errstate(divide="ignore"):
        return np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0), 0.0)


def choose_iteration(
    systems: NDArray[Any],
    first: NDArray[Any],
    second: NDArray[Any],
    p_first: NDArray[Any],
    p_second: NDArray[Any],
    *,
    budget: NDArray[Any] | float,
    targets: Sequence[str],
    rng: np.random.Generator,
    tau: float | None = None,
    model: HumanScoreModel | None = None,
    tables: tuple[NDArray[Any], NDArray[Any]] | None = None,
    invert: bool = False,
    margin: float = DEPART_Z,
    guard: Sequence[str] = (),
) -> IterationDesign:
    """The probabilities of the next iteration, from the scores of earlier iterations only.

    ``budget``: expected number of new human scores per campaign. ``tau``: a fixed uniform share (1 = uniform
    design), or None for the robust rule. ``model`` and ``tables``: a fitted model and per-bin spreads to use
    instead of those of the earlier scores (the oracle of the study, with perfectly known spreads). ``invert``:
    allocate by 1 / spread (a deliberately wrong model). ``margin``: see :func:`robust_tau`. ``guard``: metrics
    besides the targets that the robust rule must not make worse (tested, not allocated for).
    """
    c, n, _ = systems.shape
    budget_arr = np.broadcast_to(np.asarray(budget, dtype=np.float64), (c,)).copy()
    if not (np.isfinite(budget_arr).all() and (budget_arr > 0).all()):
        raise ValueError(f"the budget of an iteration must be a positive number, got {budget!r}")
    fitted = model if model is not None else fit_model(systems, first, second)
    n_targets = len(metric_labels(targets, systems.shape[2]))
    guarded = tuple(targets) + tuple(m for m in guard if m not in targets)
    res = target_residuals(systems, first, second, p_first, p_second, fitted, guarded)
    open1, open2 = np.isnan(first), np.isnan(second)
    counts = (bin_counts(res.bins, open1), bin_counts(res.bins, open2))
    if tau is None:
        taus = robust_tau(res, budget_arr, counts, rng, invert=invert, margin=margin, n_targets=n_targets)
    else:
        taus = np.full(c, float(tau))
    t1, t2 = spread_tables(_targets_only(res, n_targets)) if tables is None else np.broadcast_arrays(*tables)
    if invert:
        t1, t2 = _inverted(t1), _inverted(t2)
    q1, q2 = allocate(
        (np.broadcast_to(t1, (c, t1.shape[1])), np.broadcast_to(t2, (c, t2.shape[1]))), counts, budget_arr, taus
    )
    all1 = np.take_along_axis(q1, res.bins, axis=1)
    all2 = np.minimum(np.take_along_axis(q2, res.bins, axis=1), all1)
    p1 = np.where(open1, all1, 0.0)
    p2 = np.where(open2, np.where(open1, all2, np.take_along_axis(q2, res.bins, axis=1)), 0.0)
    return IterationDesign(p_first=p1, p_second=p2, tau=taus, model=fitted, all_first=all1, all_second=all2)


def apply_iteration(
    design: IterationDesign,
    truth: tuple[NDArray[Any], NDArray[Any]],
    scores: tuple[NDArray[Any], NDArray[Any]],
    uniforms: tuple[NDArray[Any], NDArray[Any]],
    previous: tuple[NDArray[Any], NDArray[Any]] | None = None,
) -> tuple[tuple[NDArray[Any], NDArray[Any]], tuple[NDArray[Any], NDArray[Any]]]:
    """Draw the iteration (Poisson, with the given uniforms) and return the updated (scores, probabilities).

    ``truth`` are the human scores a response would get (first, second); ``scores`` those observed so far (NaN =
    none). The returned probability of a score:

    - ``previous`` None (conditioning): 1 for scores from earlier iterations (the estimator conditions on them,
      exactly design-unbiased given the earlier iterations), this iteration's probability for new ones;
    - ``previous`` = (p1, p2) the earlier iterations' probabilities of every response (union): the probability of
      being scored in either, 1 - (1 - p_earlier)(1 - p_now), for every scored response, with p_now what this
      design gives the response's slot (as if open). This uses every score at its sampling weight; p_now depends
      on the earlier scores only through the fitted model, so the estimator is design-consistent.
    """
    first, second = scores
    new1 = np.isnan(first) & poisson_sample(design.p_first, uniforms[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        cond = np.where(np.isnan(first), design.p_second / np.where(design.p_first > 0, design.p_first, 1.0), 1.0)
    had_first = ~np.isnan(first)
    draw2 = np.where(had_first, poisson_sample(design.p_second, uniforms[1]), poisson_sample(cond, uniforms[1]))
    new2 = np.isnan(second) & (had_first | new1) & draw2
    if previous is None:
        p1 = np.where(new1, design.p_first, 1.0)
        p2 = np.where(new2, design.p_second, 1.0)
    else:
        p1 = 1.0 - (1.0 - previous[0]) * (1.0 - design.all_first)
        p2 = 1.0 - (1.0 - previous[1]) * (1.0 - design.all_second)
    first_out = np.where(new1, truth[0], first)
    second_out = np.where(new2, truth[1], second)
    return (first_out, second_out), (p1, p2)
