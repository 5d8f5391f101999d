"""Posterior models of EASL and its baselines, vectorised over items.

Source: Sakaguchi & Van Durme (2018), "Efficient Online Scalar Annotation with Bounded Support", ACL
(``shared/papers/easl_sakaguchi_vandurme_acl2018.txt``; equation numbers below refer to it) and
``shared/reference/engine.md`` (what the authors' release does where the paper is silent, and the reference
TrueSkill test values).

Four models share one interface (:class:`Model`):

* ``"easl"``      EASL: Beta posteriors updated directly by scalar scores (eq 24-25).
* ``"ra"``        bounded online ranking aggregation: Beta posteriors updated by the pairwise outcomes of a
                  HIT (Rao-Kupper probabilities eq 20-22, updates eq 14-19).
* ``"trueskill"`` TrueSkill 1-vs-1 (Herbrich et al. 2006; eq 3-11) on the same pairwise outcomes.
* ``"da"``        direct assessment: the mean of each item's scores.

Models work on the unit interval; :class:`Hyper` converts from and to the project's score range.
State is a ``dict`` of float64 arrays of length ``n_items``; every state has ``count`` (the number of
observations of each item, an exact integer in float64).
"""

from __future__ import annotations

import abc
import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from core.errors import UserError

METHODS = ("easl", "ra", "trueskill", "da")
PARTNER_POOLS = ("paper", "all")
Z975 = float(special.ndtri(0.975))  # 1.959963984540054, the two-sided 95% normal quantile


# --------------------------------------------------------------------------------------------------
# Hyper-parameters
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hyper:
    """Hyper-parameters of a project, recorded in the project file at ``easl init``.

    Defaults are the paper's (section 5): ``alpha0 = beta0 = 1``, ``gamma = 0.1``, ``epsilon = 0.1``,
    ``n = 5`` items per HIT and ``k = N // n`` HITs per iteration (Algorithm 1).

    Attributes
    ----------
    method : {"easl", "ra", "trueskill", "da"}
        The posterior model (see :func:`get_model`).
    hit_size : int
        ``n``, items per HIT (>= 2).
    gamma : float
        Skill chain (eq 11, 23); also TrueSkill's performance noise ``beta`` (> 0).
    epsilon : float
        Tie margin of RA (eq 16-22) and TrueSkill's draw margin (eq 5-10) on the unit scale (> 0).
    alpha0, beta0 : float
        Beta prior (>= 1 so that the mode, eq 12, is defined). TrueSkill's prior is the Gaussian with the
        same mean and variance.
    score_min, score_max : float
        The project's score range; the models work on ``[0, 1]``.
    partner_pool : {"paper", "all"}
        Partners are drawn from the non-anchors (the paper) or from every item but the anchor.
    hits_per_iteration : int or None
        ``k``; ``None`` means ``N // n`` (Algorithm 1).
    seed : int
        Seed of the project's random generator (>= 0).
    """

    method: str = "easl"
    hit_size: int = 5
    gamma: float = 0.1
    epsilon: float = 0.1
    alpha0: float = 1.0
    beta0: float = 1.0
    score_min: float = 0.0
    score_max: float = 100.0
    partner_pool: str = "paper"
    hits_per_iteration: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        def bad(field: str, value: Any, need: str) -> UserError:
            return UserError(f"Hyper-parameter '{field}' must be {need}, got {value!r}.")

        def as_int(field: str, value: Any, minimum: int) -> int:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                if isinstance(value, (float, np.floating)) and float(value).is_integer():
                    value = int(value)
                else:
                    raise bad(field, value, f"an integer >= {minimum}")
            if int(value) < minimum:
                raise bad(field, value, f"an integer >= {minimum}")
            return int(value)

        def as_float(field: str, value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise bad(field, value, "a finite number")
            if not math.isfinite(float(value)):
                raise bad(field, value, "a finite number")
            return float(value)

        if self.method not in METHODS:
            raise bad("method", self.method, "one of " + ", ".join(METHODS))
        if self.partner_pool not in PARTNER_POOLS:
            raise bad("partner_pool", self.partner_pool, "one of " + ", ".join(PARTNER_POOLS))
        object.__setattr__(self, "hit_size", as_int("hit_size", self.hit_size, 2))
        object.__setattr__(self, "seed", as_int("seed", self.seed, 0))
        if self.hits_per_iteration is not None:
            object.__setattr__(
                self, "hits_per_iteration", as_int("hits_per_iteration", self.hits_per_iteration, 1)
            )
        for name in ("gamma", "epsilon", "alpha0", "beta0", "score_min", "score_max"):
            object.__setattr__(self, name, as_float(name, getattr(self, name)))
        for name in ("gamma", "epsilon"):
            if getattr(self, name) <= 0:
                raise bad(name, getattr(self, name), "a positive finite number")
        for name in ("alpha0", "beta0"):
            if getattr(self, name) < 1:
                raise bad(name, getattr(self, name), "a finite number >= 1 (the mode, eq 12, needs it)")
        if not self.score_max > self.score_min:
            raise bad("score_max", self.score_max, f"greater than score_min ({self.score_min!r})")

    # -- serialisation -----------------------------------------------------------------------------

    def to_json(self) -> str:
        """Serialise to a JSON object (sorted keys), the form stored in the project file."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, s: str, *, source: str = "project file") -> Hyper:
        """Parse :meth:`to_json` output; missing fields take their defaults.

        Raises
        ------
        UserError
            Invalid JSON, a field that is not a hyper-parameter, or an invalid value (naming ``source``).
        """
        try:
            data = json.loads(s)
        except (TypeError, ValueError) as exc:
            raise UserError(f"{source}: hyper-parameters are not valid JSON ({exc}).") from None
        if not isinstance(data, dict):
            raise UserError(f"{source}: hyper-parameters must be a JSON object, got {type(data).__name__}.")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"{source}: unknown hyper-parameter field '{unknown[0]}'.")
        try:
            return cls(**data)
        except UserError as exc:
            raise UserError(f"{source}: {exc}") from None

    # -- score range -------------------------------------------------------------------------------

    @property
    def score_span(self) -> float:
        """``score_max - score_min``."""
        return self.score_max - self.score_min

    def to_unit(self, scores: Any) -> np.ndarray:
        """Map project scores to the unit interval: ``(s - score_min) / (score_max - score_min)``."""
        return (np.asarray(scores, dtype=np.float64) - self.score_min) / self.score_span

    def from_unit(self, values: Any) -> np.ndarray:
        """Map unit-interval locations (estimates, means, interval ends) back to the score range."""
        return np.asarray(values, dtype=np.float64) * self.score_span + self.score_min

    def variance_from_unit(self, variance: Any) -> np.ndarray:
        """Scale a unit-interval variance to the score range: ``var * (score_max - score_min)^2``."""
        return np.asarray(variance, dtype=np.float64) * self.score_span**2


# --------------------------------------------------------------------------------------------------
# Beta helpers (eq 12-13)
# --------------------------------------------------------------------------------------------------


def beta_mode(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Mode of Beta(alpha, beta) for alpha, beta >= 1 (eq 12): ``(alpha - 1) / (alpha + beta - 2)``.

    ``mode(1, 1) = 0.5`` (the untouched uniform prior, as in the authors' code).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    den = alpha + beta - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        mode = (alpha - 1.0) / den
    return np.where(den > 0, mode, 0.5)


def beta_mean(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Mean of Beta(alpha, beta): ``alpha / (alpha + beta)`` (footnote 9)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return alpha / (alpha + np.asarray(beta, dtype=np.float64))


def beta_variance(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Variance of Beta(alpha, beta) (eq 13): ``alpha beta / ((alpha + beta)^2 (alpha + beta + 1))``."""
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    s = alpha + beta
    return alpha * beta / (s * s * (s + 1.0))


def beta_interval(alpha: np.ndarray, beta: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed credible interval of Beta(alpha, beta): the ``(1 -+ level) / 2`` quantiles
    (``scipy.special.betaincinv``, evaluated once per distinct ``(alpha, beta)``: items with the same posterior,
    e.g. untouched or scored alike on a slider, share the work)."""
    lo = (1.0 - level) / 2.0
    alpha, beta = np.broadcast_arrays(np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64))
    if alpha.ndim == 0 or alpha.size < 64:
        return special.betaincinv(alpha, beta, lo), special.betaincinv(alpha, beta, 1.0 - lo)
    keys, inverse = np.unique(alpha.ravel() + 1j * beta.ravel(), return_inverse=True)
    if keys.size > 0.8 * alpha.size:
        return special.betaincinv(alpha, beta, lo), special.betaincinv(alpha, beta, 1.0 - lo)
    ua, ub = keys.real, keys.imag
    low = special.betaincinv(ua, ub, lo)[inverse].reshape(alpha.shape)
    high = special.betaincinv(ua, ub, 1.0 - lo)[inverse].reshape(alpha.shape)
    return low, high


# --------------------------------------------------------------------------------------------------
# TrueSkill 1-vs-1 (Herbrich et al. 2006; paper eq 3-11), numerically stable
# --------------------------------------------------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_ASYMPTOTE_Z = 30.0


def _log_pdf(x: np.ndarray) -> np.ndarray:
    return -0.5 * x * x - _LOG_SQRT_2PI


def v_win(t: Any, eps: Any = 0.0) -> np.ndarray:
    """Mean-shift factor for a win (eq 5): ``v(t, e) = N(t - e) / Phi(t - e)``.

    Computed as ``sqrt(2/pi) / erfcx(-(t - e)/sqrt(2))``, which neither underflows nor divides by zero for
    any ``t`` (``v -> -(t - e)`` as ``t -> -inf``, ``v -> 0`` as ``t -> +inf``).
    """
    x = np.asarray(t, dtype=np.float64) - np.asarray(eps, dtype=np.float64)
    with np.errstate(over="ignore"):
        return _SQRT_2_OVER_PI / special.erfcx(-x / math.sqrt(2.0))


def w_win(t: Any, eps: Any = 0.0) -> np.ndarray:
    """Variance factor for a win (eq 9): ``w(t, e) = v (v + t - e)``, in ``[0, 1]``.

    For ``z = e - t > 30`` the product cancels catastrophically; there ``v + t - e`` is taken from the
    asymptotic series of the inverse Mills ratio, ``1/z - 2/z^3 + 10/z^5 - 74/z^7 + 706/z^9 - 8162/z^11``
    (so ``w ~ 1 - 1/z^2``). The result is clamped into ``[0, 1]``.
    """
    x = np.asarray(t, dtype=np.float64) - np.asarray(eps, dtype=np.float64)
    v = np.asarray(v_win(x), dtype=np.float64)
    d = v + x
    far = -x > _ASYMPTOTE_Z
    if np.any(far):
        z = -x[far] if x.ndim else -x
        zi2 = 1.0 / (z * z)
        d_asym = (1.0 + zi2 * (-2.0 + zi2 * (10.0 + zi2 * (-74.0 + zi2 * (706.0 - 8162.0 * zi2))))) / z
        if x.ndim:
            v, d = v.copy(), d.copy()
            v[far], d[far] = z + d_asym, d_asym
        else:
            v, d = z + d_asym, d_asym
    return np.clip(v * d, 0.0, 1.0)


def _draw_terms(t: np.ndarray, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For ``u = |t|``: ``a = e - u``, ``b = -e - u`` and ``log Z``, ``Z = Phi(a) - Phi(b)`` (log space)."""
    u = np.abs(t)
    a = eps - u
    b = -eps - u
    la = special.log_ndtr(a)
    lb = special.log_ndtr(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_z = la + np.log(-np.expm1(lb - la))
    return u, a, b, log_z


def v_draw(t: Any, eps: Any) -> np.ndarray:
    """Mean-shift factor for a draw (eq 6): ``[N(-e - t) - N(e - t)] / [Phi(e - t) - Phi(-e - t)]``.

    Odd in ``t``; evaluated for ``|t|`` with the normaliser in log space (``scipy.special.log_ndtr``), so it
    stays finite far in the tails. Undefined (NaN) for ``e = 0``, where a draw has probability zero.
    """
    t = np.asarray(t, dtype=np.float64)
    eps = np.asarray(eps, dtype=np.float64)
    u, a, b, log_z = _draw_terms(t, eps)
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.exp(_log_pdf(b) - log_z) - np.exp(_log_pdf(a) - log_z)
    return np.where(t < 0, -v, v)


def w_draw(t: Any, eps: Any) -> np.ndarray:
    """Variance factor for a draw (eq 10): ``v~^2 + [(e - t) N(e - t) + (e + t) N(e + t)] / Z``.

    Even in ``t``; log-space normaliser as in :func:`v_draw`; clamped into ``[0, 1]``.
    """
    t = np.asarray(t, dtype=np.float64)
    eps = np.asarray(eps, dtype=np.float64)
    u, a, b, log_z = _draw_terms(t, eps)
    with np.errstate(invalid="ignore", over="ignore"):
        pa = np.exp(_log_pdf(a) - log_z)
        pb = np.exp(_log_pdf(b) - log_z)
        v = pb - pa
        w = v * v + a * pa - b * pb
    return np.clip(w, 0.0, 1.0)


def draw_margin(draw_probability: float, beta: float, n_players: int = 2) -> float:
    """Draw margin from a draw probability (Herbrich et al. 2006): ``Phi^-1((p + 1) / 2) sqrt(n) beta``."""
    return float(special.ndtri((draw_probability + 1.0) / 2.0) * math.sqrt(n_players) * beta)


def match_quality_1vs1(mu1: Any, sigma1: Any, mu2: Any, sigma2: Any, beta: float) -> np.ndarray:
    """1-vs-1 match quality (eq 11): ``sqrt(2 beta^2 / c^2) exp(-(mu1 - mu2)^2 / (2 c^2))``,
    ``c^2 = 2 beta^2 + sigma1^2 + sigma2^2``."""
    mu1, sigma1, mu2, sigma2 = (np.asarray(x, dtype=np.float64) for x in (mu1, sigma1, mu2, sigma2))
    c2 = 2.0 * beta * beta + sigma1 * sigma1 + sigma2 * sigma2
    return np.sqrt(2.0 * beta * beta / c2) * np.exp(-((mu1 - mu2) ** 2) / (2.0 * c2))


def rate_1vs1(
    mu_w: Any,
    sigma_w: Any,
    mu_l: Any,
    sigma_l: Any,
    *,
    beta: float,
    tau: float = 0.0,
    draw_margin: float = 0.0,
    drawn: Any = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """TrueSkill update of a 1-vs-1 game (eq 3-10), vectorised over games.

    The dynamics ``tau`` are added first (``sigma^2 += tau^2``); then with
    ``c^2 = 2 beta^2 + sigma_w^2 + sigma_l^2``, ``t = (mu_w - mu_l) / c``, ``e = draw_margin / c``:
    ``mu_w += sigma_w^2 / c * v``, ``mu_l -= sigma_l^2 / c * v`` (eq 3-4) and
    ``sigma^2 *= 1 - sigma^2 / c^2 * w`` (eq 7-8), with ``v, w`` of a win (eq 5, 9) or, where ``drawn``,
    of a draw (eq 6, 10).

    Returns
    -------
    (mu_w, sigma_w, mu_l, sigma_l) : tuple of ndarray
        The posteriors of the first (winner) and second (loser) players.
    """
    mu_w, sigma_w, mu_l, sigma_l = (np.asarray(x, dtype=np.float64) for x in (mu_w, sigma_w, mu_l, sigma_l))
    mw, s2w, ml, s2l = _rate_1vs1_var(
        mu_w, sigma_w * sigma_w + tau * tau, mu_l, sigma_l * sigma_l + tau * tau, beta, draw_margin, drawn
    )
    return mw, np.sqrt(s2w), ml, np.sqrt(s2l)


def _rate_1vs1_var(mu_w, s2w, mu_l, s2l, beta: float, draw_margin: float, drawn):
    """:func:`rate_1vs1` on variances (eq 3-10), without dynamics."""
    c2 = 2.0 * beta * beta + s2w + s2l
    c = np.sqrt(c2)
    t = (mu_w - mu_l) / c
    e = draw_margin / c
    drawn = np.broadcast_to(np.asarray(drawn, dtype=bool), np.shape(t))
    if not drawn.any():
        v, w = v_win(t, e), w_win(t, e)
    elif drawn.all():
        v, w = v_draw(t, e), w_draw(t, e)
    else:
        t, e = np.broadcast_arrays(t, e)
        won = ~drawn
        v = np.empty(t.shape)
        w = np.empty(t.shape)
        v[won], w[won] = v_win(t[won], e[won]), w_win(t[won], e[won])
        v[drawn], w[drawn] = v_draw(t[drawn], e[drawn]), w_draw(t[drawn], e[drawn])
    return mu_w + s2w / c * v, s2w * (1.0 - s2w / c2 * w), mu_l - s2l / c * v, s2l * (1.0 - s2l / c2 * w)


# --------------------------------------------------------------------------------------------------
# Rao-Kupper probabilities (eq 20-22)
# --------------------------------------------------------------------------------------------------


def rao_kupper(m_i: Any, m_j: Any, epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Win / loss / tie probabilities of Bradley-Terry with Rao-Kupper ties (eq 20-22).

    ``pi = exp(M)``, ``theta = exp(epsilon)``:
    ``p(i > j) = pi_i / (pi_i + theta pi_j)``, ``p(i < j) = pi_j / (theta pi_i + pi_j)``,
    ``p(tie) = (theta^2 - 1) pi_i pi_j / ((pi_i + theta pi_j)(theta pi_i + pi_j))``.
    """
    pi_i = np.exp(np.asarray(m_i, dtype=np.float64))
    pi_j = np.exp(np.asarray(m_j, dtype=np.float64))
    theta = math.exp(epsilon)
    d1 = pi_i + theta * pi_j
    d2 = theta * pi_i + pi_j
    return pi_i / d1, pi_j / d2, (theta * theta - 1.0) * pi_i * pi_j / (d1 * d2)


# --------------------------------------------------------------------------------------------------
# Pairwise outcomes of HIT submissions and their exact sequential schedule
# --------------------------------------------------------------------------------------------------


@dataclass
class PairSchedule:
    """The pairwise outcomes of a batch of HIT submissions, in the order they are applied.

    Order (documented, fixed): submissions (``group`` ids) in order of first appearance in the batch; the
    rows of a submission in batch order; its pairs by position ``(0, 1), (0, 2), ..., (0, m-1), (1, 2), ...``.
    Outcome of a pair ``(a, b)``: ``+1`` if ``s_a > s_b``, ``-1`` if ``s_a < s_b``, ``0`` (tie) if equal. Pairs
    of an item with itself (an item twice in one submission) are dropped.

    For speed the pairs are grouped into *steps* ("waves"): a pair's wave is 0 if neither item occurred in an
    earlier pair, else 1 + the largest wave of the latest earlier pair touching either item. Pairs of one
    wave touch disjoint items, and every item sees its pairs in sequential order, so applying the waves in
    order performs exactly the same updates, in the same order and with the same operands, as the
    sequential loop: the result equals sequential replay bit for bit.

    Attributes
    ----------
    first, second : ndarray of int64
        Items of each pair, in application order.
    outcome : ndarray of int8
        ``+1`` first wins, ``-1`` second wins, ``0`` tie.
    step_bounds : ndarray of int64
        Pairs ``step_bounds[s]:step_bounds[s+1]`` form step ``s``; all their items are distinct.
    """

    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    step_bounds: np.ndarray

    @property
    def n_pairs(self) -> int:
        return int(self.first.size)

    def winner_first(self) -> tuple[np.ndarray, np.ndarray]:
        """``(i, j)`` with the winner first (ties keep the submission order)."""
        swap = self.outcome < 0
        return np.where(swap, self.second, self.first), np.where(swap, self.first, self.second)


def _pair_levels(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Wave of each pair in the dependency order of a sequential loop over pairs (``first != second``).

    A pair's wave is 0 if neither item was touched by an earlier pair, else 1 + the largest wave of the
    latest earlier pair touching either item (the recurrence ``w = 1 + max(last[a], last[b])``). Computed as a
    topological frontier, vectorised per wave: pairs whose predecessors are all placed form the next wave.
    """
    n_pairs = first.size
    touched = np.stack([first, second], axis=1).ravel()  # row r = 2 p + slot
    order = np.argsort(touched, kind="stable")  # by item, then pair
    same = touched[order[1:]] == touched[order[:-1]]
    succ = np.full(2 * n_pairs, -1, dtype=np.int64)  # row -> the next pair touching that row's item
    succ[order[:-1][same]] = order[1:][same] // 2
    indeg = np.bincount(order[1:][same] // 2, minlength=n_pairs)
    level = np.zeros(n_pairs, dtype=np.int64)
    stamp = np.zeros(n_pairs, dtype=np.int64)
    ready = np.flatnonzero(indeg == 0)
    current = 0
    while ready.size:
        level[ready] = current
        nxt = np.concatenate((succ[2 * ready], succ[2 * ready + 1]))
        nxt = nxt[nxt >= 0]
        if nxt.size == 0:
            break
        np.subtract.at(indeg, nxt, 1)
        ready = nxt[indeg[nxt] == 0]
        # a pair reached through both of its items appears twice: keep one copy (no sort needed)
        pos = np.arange(ready.size)
        stamp[ready] = pos
        ready = ready[stamp[ready] == pos]
        current += 1
    return level


def pair_schedule(item: Any, score01: Any, group: Any) -> PairSchedule:
    """Pairwise outcomes of HIT submissions (eq 14-22 inputs) in the exact sequential order, batched into
    steps of item-disjoint pairs (see :class:`PairSchedule`)."""
    item = np.asarray(item, dtype=np.int64)
    score = np.asarray(score01, dtype=np.float64)
    group = np.asarray(group, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    none = PairSchedule(empty, empty.copy(), np.zeros(0, dtype=np.int8), np.zeros(1, dtype=np.int64))
    if item.size < 2:
        return none
    uniq, first_idx, inverse = np.unique(group, return_index=True, return_inverse=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first_idx, kind="stable")] = np.arange(uniq.size)
    gid = rank[inverse]
    order = np.argsort(gid, kind="stable")
    gid, item, score = gid[order], item[order], score[order]
    n_groups = int(uniq.size)
    gstart = np.searchsorted(gid, np.arange(n_groups))
    gsize = np.bincount(gid, minlength=n_groups)

    # pairs of every submission in sequential order, built per distinct submission size (few)
    max_size = np.int64(gsize.max())
    parts_g, parts_a, parts_b = [], [], []
    for m in np.unique(gsize):
        if m < 2:
            continue
        ta, tb = np.triu_indices(int(m), k=1)  # (0,1), (0,2), ..., (1,2), ...: lexicographic
        gs = np.flatnonzero(gsize == m)
        parts_g.append(np.repeat(gs, ta.size))
        parts_a.append(np.tile(ta, gs.size))
        parts_b.append(np.tile(tb, gs.size))
    if not parts_g:
        return none
    g = np.concatenate(parts_g)
    pa = np.concatenate(parts_a).astype(np.int64)
    pb = np.concatenate(parts_b).astype(np.int64)
    o = np.lexsort(((pa * max_size + pb), g))
    ra = gstart[g[o]] + pa[o]
    rb = gstart[g[o]] + pb[o]
    first, second = item[ra], item[rb]
    outcome = np.sign(score[ra] - score[rb]).astype(np.int8)
    keep = first != second
    first, second, outcome = first[keep], second[keep], outcome[keep]
    n_pairs = first.size
    if n_pairs == 0:
        return none
    level = _pair_levels(first, second)
    o = np.argsort(level, kind="stable")
    first, second, outcome, level = first[o], second[o], outcome[o], level[o]
    change = np.flatnonzero(np.diff(level)) + 1
    bounds = np.concatenate(([0], change, [n_pairs])).astype(np.int64)
    return PairSchedule(first, second, outcome, bounds)


# --------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------


def _check_batch(state: dict[str, np.ndarray], item: Any, score01: Any, group: Any):
    item = np.asarray(item, dtype=np.int64).ravel()
    score = np.asarray(score01, dtype=np.float64).ravel()
    group = np.asarray(group, dtype=np.int64).ravel()
    if not (item.size == score.size == group.size):
        raise ValueError(f"item, score01 and group differ in length ({item.size}, {score.size}, {group.size})")
    n = state["count"].size
    if item.size and (item.min() < 0 or item.max() >= n):
        raise ValueError(f"item index out of range [0, {n})")
    if item.size and not (np.all(score >= 0.0) and np.all(score <= 1.0)):
        raise ValueError("score01 must be finite and within [0, 1]")
    return item, score, group


class Model(abc.ABC):
    """Interface of a posterior model (see docs/ARCHITECTURE.md).

    Attributes
    ----------
    name : str
        ``Hyper.method``.
    order_dependent : bool
        True when the result depends on the order of observations (RA, TrueSkill): replay in log order,
        and retraction means replaying without the retracted rows.
    needs_whole_hit : bool
        True when the update needs every score of a HIT submission (pairwise outcomes).
    """

    name: str = ""
    order_dependent: bool = False
    needs_whole_hit: bool = False

    def __init__(self, hyper: Hyper) -> None:
        self.hyper = hyper

    @abc.abstractmethod
    def init_state(self, n_items: int) -> dict[str, np.ndarray]:
        """The prior state of ``n_items`` items (float64 arrays, including ``count``)."""

    @abc.abstractmethod
    def apply(self, state: dict[str, np.ndarray], item: Any, score01: Any, group: Any, sign: int = 1) -> None:
        """Update ``state`` in place with observations (rows in log order).

        Parameters
        ----------
        item : int array, item indices in ``[0, n_items)``.
        score01 : float array, scores on ``[0, 1]``.
        group : int array, id of the HIT submission each row belongs to.
        sign : +1 to add, -1 to retract (commutative models only).
        """

    @abc.abstractmethod
    def summary(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``estimate, mean, variance, ci_low, ci_high`` per item, on ``[0, 1]`` (95% interval)."""

    @abc.abstractmethod
    def selection_keys(self, state: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``(location M, variance)`` that drive Algorithm 1 (anchors by variance; match quality eq 23)."""

    @staticmethod
    def _commutative_batch(state, item, score01, group, sign):
        """Validate a batch for a commutative model (EASL, DA), where ``sign = -1`` retracts exactly."""
        item, score, _ = _check_batch(state, item, score01, group)
        if sign not in (1, -1):
            raise ValueError("sign must be +1 or -1")
        return item, score

    def _require_add(self, sign: int) -> None:
        if sign != 1:
            raise ValueError(f"{self.name} is order dependent: observations cannot be retracted by sign=-1")


class EaslModel(Model):
    """EASL (section 4): item ``i`` is Beta(alpha_i, beta_i); a score ``s`` in ``[0, 1]`` adds
    ``alpha_i += s``, ``beta_i += 1 - s`` (eq 24-25). Commutative, so ``sign = -1`` retracts; an item whose
    count returns to 0 is reset to the prior exactly. Estimate: the mode (eq 12); variance eq 13; 95%
    equal-tailed credible interval from Beta quantiles.
    """

    name = "easl"

    def init_state(self, n_items: int) -> dict[str, np.ndarray]:
        return {
            "alpha": np.full(n_items, self.hyper.alpha0, dtype=np.float64),
            "beta": np.full(n_items, self.hyper.beta0, dtype=np.float64),
            "count": np.zeros(n_items, dtype=np.float64),
        }

    def apply(self, state, item, score01, group, sign=1) -> None:
        item, score = self._commutative_batch(state, item, score01, group, sign)
        if item.size == 0:
            return
        n = state["count"].size
        s_sum = np.bincount(item, weights=score, minlength=n)
        c_sum = np.bincount(item, minlength=n).astype(np.float64)
        state["alpha"] += sign * s_sum
        state["beta"] += sign * (c_sum - s_sum)
        state["count"] += sign * c_sum
        if sign < 0:
            empty = state["count"] <= 0
            state["alpha"][empty] = self.hyper.alpha0
            state["beta"][empty] = self.hyper.beta0
            state["count"][empty] = 0.0

    def summary(self, state):
        a, b = state["alpha"], state["beta"]
        lo, hi = beta_interval(a, b)
        return {
            "estimate": beta_mode(a, b),
            "mean": beta_mean(a, b),
            "variance": beta_variance(a, b),
            "ci_low": lo,
            "ci_high": hi,
        }

    def selection_keys(self, state):
        a, b = state["alpha"], state["beta"]
        return beta_mode(a, b), beta_variance(a, b)


class RankAggregationModel(EaslModel):
    """Bounded online ranking aggregation (section 3.2): Beta posteriors updated by the pairwise outcomes
    of each HIT submission (:func:`pair_schedule`).

    With ``M`` the mode (eq 12), ``sigma^2`` the Beta variance (eq 13), ``c^2 = 2 gamma^2 + sigma_i^2 +
    sigma_j^2`` and the Rao-Kupper probabilities of :func:`rao_kupper` (eq 20-22):

    * ``i > j``: ``alpha_i += sigma_i^2 / c (1 - p(i > j))``, ``beta_j += sigma_j^2 / c (1 - p(i > j))``
      (eq 14-15; ``p(j < i) = p(i > j)``);
    * tie, ``|M_i - M_j| > epsilon``: the higher item's ``beta`` and the lower item's ``alpha`` grow by
      ``sigma^2 / c (1 - p(tie))`` (eq 16-17);
    * tie, ``|M_i - M_j| <= epsilon``: ``alpha`` and ``beta`` of both grow by ``sigma^2 / c (1 - p(tie))``
      (eq 18-19).

    Both items of a pair are updated from their values before the pair. ``alpha``, ``beta`` never decrease.
    """

    name = "ra"
    order_dependent = True
    needs_whole_hit = True

    def apply(self, state, item, score01, group, sign=1) -> None:
        item, score, group = _check_batch(state, item, score01, group)
        self._require_add(sign)
        if item.size == 0:
            return
        state["count"] += np.bincount(item, minlength=state["count"].size)
        sched = pair_schedule(item, score, group)
        i_all, j_all = sched.winner_first()
        win_all = sched.outcome != 0
        b = sched.step_bounds
        for s in range(b.size - 1):
            sl = slice(b[s], b[s + 1])
            self._update_pairs(state, i_all[sl], j_all[sl], win_all[sl])

    def _update_pairs(self, state, i, j, win) -> None:
        """Apply item-disjoint pairs at once (eq 14-22); ``i`` won against ``j`` where ``win``, else a tie.
        Each item's increments use its values before the pair."""
        alpha, beta = state["alpha"], state["beta"]
        ai, bi, aj, bj = alpha[i], beta[i], alpha[j], beta[j]
        si, sj = ai + bi, aj + bj
        di, dj = si - 2.0, sj - 2.0
        # mode (eq 12; 0.5 for the untouched uniform prior) and variance (eq 13), inlined for speed
        mi = np.where(di > 0, (ai - 1.0) / np.where(di > 0, di, 1.0), 0.5)
        mj = np.where(dj > 0, (aj - 1.0) / np.where(dj > 0, dj, 1.0), 0.5)
        vi = ai * bi / (si * si * (si + 1.0))
        vj = aj * bj / (sj * sj * (sj + 1.0))
        gamma, eps = self.hyper.gamma, self.hyper.epsilon
        c = np.sqrt(2.0 * gamma * gamma + vi + vj)
        p_win, _, p_tie = rao_kupper(mi, mj, eps)
        f = 1.0 - np.where(win, p_win, p_tie)
        inc_i = vi / c * f
        inc_j = vj / c * f
        # win (eq 14-15): alpha_i, beta_j. Tie, |D| <= eps (eq 18-19): all four. Tie, |D| > eps (eq 16-17):
        # the higher item's beta and the lower item's alpha.
        near = np.abs(mi - mj) <= eps
        hi_i = mi > mj
        a_i = win | near | ~hi_i  # alpha_i and beta_j grow
        b_i = ~win & (near | hi_i)  # beta_i and alpha_j grow
        alpha[i] = ai + inc_i * a_i
        beta[i] = bi + inc_i * b_i
        alpha[j] = aj + inc_j * b_i
        beta[j] = bj + inc_j * a_i


class TrueSkillModel(Model):
    """TrueSkill 1-vs-1 (Herbrich et al. 2006; eq 3-11) on the pairwise outcomes of HIT submissions
    (:func:`pair_schedule`; ties are draws), the unbounded Gaussian baseline.

    On the unit scale: ``beta = gamma``, draw margin ``= epsilon``, no dynamics (``tau = 0``: an item's
    quality does not drift). Prior: the Gaussian with the mean and variance of Beta(alpha0, beta0), i.e.
    ``mu0 = 0.5`` and ``sigma0^2 = 1/12`` (``sigma0 ~ 0.289``) by default, so that TrueSkill starts from the
    same uncertainty as EASL and RA and Algorithm 1 treats all methods alike. Estimate and mean: ``mu``
    (not clipped to [0, 1]: the support is unbounded); variance ``sigma^2``; interval ``mu -+ 1.96 sigma``.
    """

    name = "trueskill"
    order_dependent = True
    needs_whole_hit = True

    @property
    def mu0(self) -> float:
        return float(beta_mean(self.hyper.alpha0, self.hyper.beta0))

    @property
    def sigma0(self) -> float:
        return float(np.sqrt(beta_variance(self.hyper.alpha0, self.hyper.beta0)))

    def init_state(self, n_items: int) -> dict[str, np.ndarray]:
        return {
            "mu": np.full(n_items, self.mu0, dtype=np.float64),
            "sigma2": np.full(n_items, self.sigma0**2, dtype=np.float64),
            "count": np.zeros(n_items, dtype=np.float64),
        }

    def apply(self, state, item, score01, group, sign=1) -> None:
        item, score, group = _check_batch(state, item, score01, group)
        self._require_add(sign)
        if item.size == 0:
            return
        state["count"] += np.bincount(item, minlength=state["count"].size)
        sched = pair_schedule(item, score, group)
        w_all, l_all = sched.winner_first()
        drawn_all = sched.outcome == 0
        mu, s2 = state["mu"], state["sigma2"]
        b = sched.step_bounds
        gamma, eps = self.hyper.gamma, self.hyper.epsilon
        for s in range(b.size - 1):
            w, lo = w_all[b[s] : b[s + 1]], l_all[b[s] : b[s + 1]]
            mu[w], s2[w], mu[lo], s2[lo] = _rate_1vs1_var(
                mu[w], s2[w], mu[lo], s2[lo], gamma, eps, drawn_all[b[s] : b[s + 1]]
            )

    def summary(self, state):
        mu, s2 = state["mu"], state["sigma2"]
        sd = np.sqrt(s2)
        return {
            "estimate": mu.copy(),
            "mean": mu.copy(),
            "variance": s2.copy(),
            "ci_low": mu - Z975 * sd,
            "ci_high": mu + Z975 * sd,
        }

    def selection_keys(self, state):
        return state["mu"].copy(), state["sigma2"].copy()


class DirectAssessmentModel(Model):
    """Direct assessment (section 5's DA baseline): each item's estimate is the mean of its scores.

    State: ``sum``, ``sumsq``, ``count``. With fewer than 2 scores the variance is the prior's, 1/12 (the
    variance of a uniform score); with one score the estimate is that score, with none it is 0.5 (prior
    placeholder). From 2 scores on, the variance is the sample variance of the mean, ``s^2 / n`` (a residual sum
    of squares below 1e-12 of the sum of squares counts as 0: rounding noise of equal scores), and the 95%
    interval is ``mean -+ t_{0.975, n-1} sqrt(s^2 / n)`` clipped to [0, 1]; below 2 scores it is the uniform
    prior's [0.025, 0.975]. Commutative: ``sign = -1`` retracts (an item back at count 0 is reset exactly).
    DA's batches are chosen by count (:func:`core.selection.select_least_annotated`).
    """

    name = "da"

    def init_state(self, n_items: int) -> dict[str, np.ndarray]:
        return {
            "sum": np.zeros(n_items, dtype=np.float64),
            "sumsq": np.zeros(n_items, dtype=np.float64),
            "count": np.zeros(n_items, dtype=np.float64),
        }

    def apply(self, state, item, score01, group, sign=1) -> None:
        item, score = self._commutative_batch(state, item, score01, group, sign)
        if item.size == 0:
            return
        n = state["count"].size
        state["sum"] += sign * np.bincount(item, weights=score, minlength=n)
        state["sumsq"] += sign * np.bincount(item, weights=score * score, minlength=n)
        state["count"] += sign * np.bincount(item, minlength=n)
        if sign < 0:
            empty = state["count"] <= 0
            for key in ("sum", "sumsq", "count"):
                state[key][empty] = 0.0

    def _mean_var(self, state):
        n = state["count"]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, state["sum"] / np.maximum(n, 1.0), 0.5)
            # residual sum of squares; below 1e-12 of the sum of squares it is rounding noise (constant scores)
            resid = state["sumsq"] - state["sum"] * mean
            resid = np.where(resid > 1e-12 * state["sumsq"], resid, 0.0)
            s2 = resid / np.maximum(n - 1.0, 1.0)
            var = np.where(n >= 2, s2 / np.maximum(n, 1.0), 1.0 / 12.0)
        return mean, var

    def summary(self, state):
        n = state["count"]
        mean, var = self._mean_var(state)
        tq = special.stdtrit(np.maximum(n - 1.0, 1.0), 0.975)  # Student t quantile
        half = tq * np.sqrt(var)
        many = n >= 2
        lo = np.where(many, np.clip(mean - half, 0.0, 1.0), 0.025)
        hi = np.where(many, np.clip(mean + half, 0.0, 1.0), 0.975)
        return {"estimate": mean, "mean": mean.copy(), "variance": var, "ci_low": lo, "ci_high": hi}

    def selection_keys(self, state):
        return self._mean_var(state)


_MODELS: dict[str, type[Model]] = {
    "easl": EaslModel,
    "ra": RankAggregationModel,
    "trueskill": TrueSkillModel,
    "da": DirectAssessmentModel,
}


def get_model(hyper: Hyper) -> Model:
    """The model named by ``hyper.method`` ("easl", "ra", "trueskill" or "da")."""
    return _MODELS[hyper.method](hyper)
