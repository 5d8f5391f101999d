"""TrueSkill 1-vs-1 (Herbrich et al. 2006; Sakaguchi & Van Durme 2018, eq 3-11): its Gaussian factors and
:class:`TrueSkillModel`, the unbounded Gaussian baseline on the pairwise outcomes of HIT submissions.

``N`` and ``Phi`` are the standard normal density and distribution function; ``t`` is the scaled skill
difference and ``e`` the scaled draw margin. ``v`` is the mean-shift factor and ``w`` the variance factor of
a win (eq 5, 9) or a draw (eq 6, 10). The names are the paper's; the formulas are evaluated so that they stay
finite far in the tails (``erfcx``, an asymptotic series, a log-space normaliser), where a direct
``pdf / cdf`` divides by zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.models.base import PairwiseModel, Posterior, State
from easl_toolkit.core.models.beta import beta_mean, beta_variance

#: The two-sided 95% normal quantile, ``Phi^-1(0.975) = 1.959963984540054``.
Z975 = 1.959963984540054  # written out: importing the models loads no SciPy

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: Below ``t - e = -30`` the win variance factor is taken from its asymptotic series.
_ASYMPTOTE_Z = 30.0


def _log_pdf(x: NDArray[Any]) -> NDArray[Any]:
    log_pdf: NDArray[Any] = -0.5 * x * x - _LOG_SQRT_2PI
    return log_pdf


def v_win(t: Any, eps: Any = 0.0) -> NDArray[Any]:
    """Mean-shift factor for a win (eq 5), ``v(t, e) = N(t - e) / Phi(t - e)``, computed as ``sqrt(2/pi) /
    erfcx(-(t - e)/sqrt(2))``, which neither underflows nor divides by zero for any ``t`` (``v -> -(t - e)`` as
    ``t -> -inf``, ``v -> 0`` as ``t -> +inf``).

    Parameters
    ----------
    t : array_like of float
        Scaled skill difference ``(mu_w - mu_l) / c``.
    eps : array_like of float, default 0
        Scaled draw margin ``epsilon / c``.

    Returns
    -------
    ndarray of float64
        ``v >= 0``.

    References
    ----------
    Herbrich, Minka & Graepel (2006), "TrueSkill: A Bayesian Skill Rating System", NIPS; Sakaguchi & Van Durme
    (2018), eq 5.

    Examples
    --------
    >>> round(float(v_win(0, 0)), 10), round(float(v_win(1, 0.5)), 10), round(float(v_win(-1, 0.5)), 10)
    (0.7978845608, 0.5091604338, 1.9386771666)
    """
    from scipy import special

    x = np.asarray(t, dtype=np.float64) - np.asarray(eps, dtype=np.float64)
    with np.errstate(over="ignore"):
        v: NDArray[Any] = _SQRT_2_OVER_PI / special.erfcx(-x / math.sqrt(2.0))
    return v


def w_win(t: Any, eps: Any = 0.0) -> NDArray[Any]:
    """Variance factor for a win (eq 9), ``w(t, e) = v (v + t - e)``, in ``[0, 1]``. For ``z = e - t > 30`` the
    product cancels catastrophically; there ``v + t - e`` is taken from the asymptotic series of the inverse Mills
    ratio, ``1/z - 2/z^3 + 10/z^5 - 74/z^7 + 706/z^9 - 8162/z^11`` (so ``w ~ 1 - 1/z^2``). Clamped into ``[0, 1]``.

    Parameters
    ----------
    t, eps : array_like of float
        As in :func:`v_win`.

    Returns
    -------
    ndarray of float64
        ``w`` in ``[0, 1]``.

    References
    ----------
    Herbrich, Minka & Graepel (2006); Sakaguchi & Van Durme (2018), eq 9.

    Examples
    --------
    >>> round(float(w_win(0, 0)), 10), round(float(w_win(1, 0.5)), 10)
    (0.6366197724, 0.5138245643)
    """
    x = np.asarray(t, dtype=np.float64) - np.asarray(eps, dtype=np.float64)
    v = np.asarray(v_win(x), dtype=np.float64)
    d = v + x
    far = -x > _ASYMPTOTE_Z
    if np.any(far):
        z = np.where(far, -x, 1.0)
        zi2 = 1.0 / (z * z)
        d_asym = (1.0 + zi2 * (-2.0 + zi2 * (10.0 + zi2 * (-74.0 + zi2 * (706.0 - 8162.0 * zi2))))) / z
        v, d = np.where(far, z + d_asym, v), np.where(far, d_asym, d)
    return np.clip(v * d, 0.0, 1.0)


def _draw_terms(t: Any, eps: Any) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
    """``t`` as an array and, for ``u = |t|``: ``a = e - u``, ``b = -e - u`` and ``log Z``, ``Z = Phi(a) - Phi(b)``
    (log space)."""
    from scipy import special

    t = np.asarray(t, dtype=np.float64)
    eps = np.asarray(eps, dtype=np.float64)
    u = np.abs(t)
    a = eps - u
    b = -eps - u
    la = special.log_ndtr(a)
    lb = special.log_ndtr(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_z = la + np.log(-np.expm1(lb - la))
    return t, a, b, log_z


def v_draw(t: Any, eps: Any) -> NDArray[Any]:
    """Mean-shift factor for a draw (eq 6), ``v~(t, e) = [N(-e - t) - N(e - t)] / [Phi(e - t) - Phi(-e - t)]``.
    Odd in ``t``; evaluated for ``|t|`` with the normaliser in log space (``scipy.special.log_ndtr``), so it stays
    finite far in the tails.

    Parameters
    ----------
    t, eps : array_like of float
        As in :func:`v_win`; ``eps > 0``.

    Returns
    -------
    ndarray of float64
        ``v~``; NaN where ``eps = 0`` (a draw has probability zero).

    References
    ----------
    Herbrich, Minka & Graepel (2006); Sakaguchi & Van Durme (2018), eq 6.

    Examples
    --------
    >>> round(float(v_draw(1, 0.5)), 10), round(float(v_draw(3, 0.2)), 10)
    (-0.9206446052, -2.9611273599)
    """
    t, a, b, log_z = _draw_terms(t, eps)
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.exp(_log_pdf(b) - log_z) - np.exp(_log_pdf(a) - log_z)
    return np.where(t < 0, -v, v)


def w_draw(t: Any, eps: Any) -> NDArray[Any]:
    """Variance factor for a draw (eq 10), ``w~(t, e) = v~^2 + [(e - t) N(e - t) + (e + t) N(e + t)] / [Phi(e -
    t) - Phi(-e - t)]``. Even in ``t``; log-space normaliser as in :func:`v_draw`; clamped into ``[0, 1]``.

    Parameters
    ----------
    t, eps : array_like of float
        As in :func:`v_draw`.

    Returns
    -------
    ndarray of float64
        ``w~`` in ``[0, 1]``.

    References
    ----------
    Herbrich, Minka & Graepel (2006); Sakaguchi & Van Durme (2018), eq 10.

    Examples
    --------
    >>> round(float(w_draw(1, 0.5)), 10), round(float(w_draw(3, 0.2)), 10)
    (0.9230579021, 0.987632105)
    """
    _, a, b, log_z = _draw_terms(t, eps)
    with np.errstate(invalid="ignore", over="ignore"):
        pa = np.exp(_log_pdf(a) - log_z)
        pb = np.exp(_log_pdf(b) - log_z)
        v = pb - pa
        w = v * v + a * pa - b * pb
    clipped: NDArray[Any] = np.clip(w, 0.0, 1.0)
    return clipped


def draw_margin(draw_probability: float, beta: float, n_players: int = 2) -> float:
    """Draw margin from a draw probability: ``epsilon = Phi^-1((p + 1) / 2) sqrt(n) beta`` (with ``epsilon = 0.1``
    and ``beta = 0.1`` two equal items draw with probability 0.52).

    Parameters
    ----------
    draw_probability : float
        ``p`` in ``[0, 1)``, the probability that two equal players draw.
    beta : float
        Performance noise (> 0).
    n_players : int, default 2
        Players in the game.

    Returns
    -------
    float
        ``epsilon >= 0``.

    References
    ----------
    Herbrich, Minka & Graepel (2006), section 2 (draw margin).

    Examples
    --------
    >>> round(draw_margin(0.10, 25 / 6), 6)
    0.740467
    """
    from scipy import special

    return float(special.ndtri((draw_probability + 1.0) / 2.0) * math.sqrt(n_players) * beta)


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
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
    """TrueSkill update of a 1-vs-1 game (eq 3-10), vectorised over games.

    The dynamics ``tau`` are added first (``sigma^2 += tau^2``); then with ``c^2 = 2 beta^2 + sigma_w^2 +
    sigma_l^2``, ``t = (mu_w - mu_l) / c``, ``e = draw_margin / c``: ``mu_w += sigma_w^2 / c * v``,
    ``mu_l -= sigma_l^2 / c * v`` (eq 3-4) and ``sigma^2 *= 1 - sigma^2 / c^2 * w`` (eq 7-8), with ``v, w`` of
    a win (eq 5, 9) or, where ``drawn``, of a draw (eq 6, 10). The model (:class:`TrueSkillModel`) runs
    the same update on variances without dynamics.

    Parameters
    ----------
    mu_w, sigma_w, mu_l, sigma_l : array_like of float
        Means and standard deviations of the first (winner) and second (loser) players; broadcast together.
    beta : float
        Performance noise (> 0).
    tau : float, default 0
        Dynamics added to both variances before the game.
    draw_margin : float, default 0
        Draw margin (see :func:`draw_margin`).
    drawn : array_like of bool, default False
        Which games were draws.

    Returns
    -------
    (mu_w, sigma_w, mu_l, sigma_l) : tuple of ndarray of float64
        The posteriors of the first (winner) and second (loser) players.

    References
    ----------
    Herbrich, Minka & Graepel (2006); Sakaguchi & Van Durme (2018), eq 3-10. The reference values below are
    the reference library's (``sublee/trueskill``).

    Examples
    --------
    >>> out = rate_1vs1(25.0, 25 / 3, 25.0, 25 / 3, beta=25 / 6, tau=25 / 300, draw_margin=draw_margin(0.1, 25 / 6))
    >>> [round(float(x), 3) for x in out]
    [29.396, 7.171, 20.604, 7.171]
    """
    mu_w, sigma_w, mu_l, sigma_l = (np.asarray(x, dtype=np.float64) for x in (mu_w, sigma_w, mu_l, sigma_l))
    mw, s2w, ml, s2l = _rate_1vs1_var(
        mu_w, sigma_w * sigma_w + tau * tau, mu_l, sigma_l * sigma_l + tau * tau, beta, draw_margin, drawn
    )
    return mw, np.sqrt(s2w), ml, np.sqrt(s2l)


def _rate_1vs1_var(
    mu_w: Any, s2w: Any, mu_l: Any, s2l: Any, beta: float, draw_margin: float, drawn: Any
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
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


class TrueSkillModel(PairwiseModel):
    """TrueSkill 1-vs-1 (Herbrich et al. 2006; eq 3-11) on the pairwise outcomes of HIT submissions
    (:func:`pair_schedule`; ties are draws), the unbounded Gaussian baseline.

    On the unit scale: ``beta = gamma``, draw margin ``= epsilon``, no dynamics (``tau = 0``: an item's
    quality does not drift). Prior: the Gaussian with the mean and variance of Beta(alpha0, beta0), i.e.
    ``mu0 = 0.5`` and ``sigma0^2 = 1/12`` (``sigma0 ~ 0.289``) by default, so that TrueSkill starts from the
    same uncertainty as EASL and RA and Algorithm 1 treats all methods alike. The skill ``mu`` is unbounded
    (the prior's interval is [-0.07, 1.07]), so the summary reports the expected bounded score of one performance,
    ``G(mu)`` with
    ``G(m) ~ E[clip(m + e, 0, 1)]``, ``e ~ N(0, beta^2)`` (:func:`core.models.aware.scale.expected_score`):
    estimate and mean ``G(mu)`` (strictly increasing: the order of ``mu``; ``G(mu) ~ mu`` within 4e-5 for
    ``mu`` in [0.3, 0.7] at ``beta = 0.1``), interval ``[G(mu - 1.96 sigma), G(mu + 1.96 sigma)]``, variance
    ``sigma^2`` (the skill's, as Algorithm 1 and ``easl status`` use it).
    """

    name = "trueskill"

    def init_state(self, n_items: int) -> State:
        a0, b0 = self.hyper.alpha0, self.hyper.beta0
        sigma0 = float(np.sqrt(beta_variance(a0, b0)))
        return {
            "mu": np.full(n_items, float(beta_mean(a0, b0)), dtype=np.float64),
            "sigma2": np.full(n_items, sigma0**2, dtype=np.float64),
            "count": np.zeros(n_items, dtype=np.float64),
        }

    def apply(self, state: State, item: Any, score01: Any, group: Any, sign: int = 1) -> None:
        mu, s2 = state["mu"], state["sigma2"]
        gamma, eps = self.hyper.gamma, self.hyper.epsilon
        for w, lo, drawn in self._pairwise_steps(state, item, score01, group, sign):
            mu[w], s2[w], mu[lo], s2[lo] = _rate_1vs1_var(mu[w], s2[w], mu[lo], s2[lo], gamma, eps, drawn)

    def summary(self, state: State) -> Posterior:
        from easl_toolkit.core.models.aware.scale import bounded_interval  # here: it loads SciPy

        mu, s2 = state["mu"], state["sigma2"]
        estimate, low, high = bounded_interval(mu, Z975 * np.sqrt(s2), self.hyper.gamma)
        return Posterior(estimate, estimate.copy(), s2.copy(), low, high)

    def selection_keys(self, state: State) -> tuple[NDArray[Any], NDArray[Any]]:
        return state["mu"].copy(), state["sigma2"].copy()
