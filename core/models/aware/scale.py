"""Estimates on the bounded score scale: the expected score a typical annotator gives an item.

The annotator-aware model's ``mu_i`` (:mod:`core.models.aware.fit`) and TrueSkill's skill ``mu``
(:mod:`core.models.gaussian`) live on an unbounded scale: a posterior mean or a t interval can leave [0, 1]
(``mu_i`` beyond the range when the annotators' offsets and slopes put the consensus outside what anyone scored).
What such a project reports is instead the score a typical annotator would give the item on the bounded scale, the
mean of a censored normal (notation: unit scale, ``m`` the item's location, ``s`` the standard deviation of one
score's noise, every function's ``s`` (> 0), ``Phi`` and ``phi`` the standard normal cdf and density)::

    g(m) = E[clip(m + e, 0, 1)],   e ~ N(0, s^2)
         = m (Phi(b) - Phi(a)) + s (phi(a) - phi(b)) + (1 - Phi(b)),   a = -m / s,  b = (1 - m) / s
    g'(m) = Phi(b) - Phi(a) > 0

It is the model's own prediction of a score (offset 0, slope 1, noise ``s^2 = q0`` for the aware model;
``s = beta = gamma`` for TrueSkill), inside (0, 1) and strictly increasing, so the ranks are those of ``m``, an
interval's ends map to an interval of the same coverage, and a variance maps by the delta method, ``g'(m)^2
Var(m)`` (why this map: docs/studies/code-notes.md).

Numerics. With ``psi(z) = E[(Z + z)^+] = phi(z) + z Phi(z)`` (so ``psi(z) = z + psi(-z)``),
``g(m) = max(m, 0) + s psi(-|m| / s) - s psi((m - 1) / s)`` and ``g(1 - m) = 1 - g(m)``; ``g`` is computed for
``m <= 1/2`` from ``psi`` at arguments ``<= 0``, ``psi(-x) = phi(x) (1 - x R(x))`` with the Mills ratio
``R(x) = sqrt(pi / 2) erfcx(x / sqrt(2))`` (``scipy.special.erfcx``), and reflected above: no cancellation of
large terms, no overflow, no warnings, for any finite ``m``.

Ties. ``g`` saturates: ``1 - g(m) ~ s phi(z) / z^2`` with ``z = (m - 1) / s`` drops below the spacing of
float64 near 1 (1.1e-16) once ``m > 1 + 8 s``, where distinct items would all get 1.0 and lose their order.
So the noise is contaminated: with weight :data:`EPS` (1e-9) a wide uniform component ``U(-WIDE, WIDE)``,
``WIDE = 4`` (four widths of the scale), whose censored mean is a polynomial (no special function, for the export
target; measurements: docs/studies/code-notes.md)::

    G(m) = (1 - EPS) g(m; s) + EPS u(m),   u(m) = (F(m + WIDE) - F(m - WIDE)) / (2 WIDE),
    F(t) = 0 (t < 0),  t^2 / 2 (0 <= t <= 1),  t - 1/2 (t > 1),   u'(m) = (clip(m + WIDE) - clip(m - WIDE)) / (2 WIDE)

still ``E[clip(m + e, 0, 1)]`` for a noise ``e``, inside [0, 1] and strictly increasing, within 1e-9 of
``g(m; s)`` (1e-7 points on a 0-100 scale), and strictly increasing in float64 for ``|m| <= 3`` on any grid
of step >= 1e-5 (``G' >= EPS u'(m) = EPS / (2 WIDE) = 1.25e-10`` for ``|m| <= 3``).

References: the mean of a censored (Tobit) normal, Tobin (1958), "Estimation of relationships for limited
dependent variables", Econometrica 26; Johnson, Kotz & Balakrishnan (1994), *Continuous Univariate
Distributions* vol. 1, section 10.1 (truncated and censored normal moments).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

#: weight of the wide noise component (module docstring, "Ties")
EPS = 1e-9
#: half width of the wide uniform noise component (unit scale: four widths of the scale)
WIDE = 4.0

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_X_MAX = 1e100  # psi(-x) is 0 in float64 long before this; caps x so that x * x stays finite


def _psi_neg(x: NDArray[Any]) -> NDArray[Any]:
    """``psi(-x) = E[(Z - x)^+] = phi(x) - x Q(x)`` for ``x >= 0`` (module docstring), without cancellation."""
    x = np.minimum(x, _X_MAX)
    phi = _INV_SQRT_2PI * np.exp(-0.5 * x * x)
    near = x <= 1.0  # each branch only where it is used (the export target)
    out: NDArray[Any] = np.empty_like(phi)
    xn, xf = x[near], x[~near]
    out[near] = phi[near] - xn * special.ndtr(-xn)
    out[~near] = phi[~near] * (1.0 - xf * _SQRT_HALF_PI * special.erfcx(xf * math.sqrt(0.5)))
    np.maximum(out, 0.0, out=out)
    return out


def _low(m: NDArray[Any], s: float) -> NDArray[Any]:
    """``g(m; s)`` for ``m <= 1/2``: ``max(m, 0) + s psi(-|m| / s) - s psi((m - 1) / s)``."""
    with np.errstate(over="ignore"):
        x_low, x_high = np.abs(m) / s, (1.0 - m) / s
    out: NDArray[Any] = np.maximum(m, 0.0) + s * _psi_neg(x_low) - s * _psi_neg(x_high)
    return out


def _big_f(t: NDArray[Any]) -> NDArray[Any]:
    """``F(t)`` of the module docstring: ``u(m) = (F(m + WIDE) - F(m - WIDE)) / (2 WIDE)`` is the censored mean
    under ``U(-WIDE, WIDE)`` noise."""
    inside = np.clip(t, 0.0, 1.0)
    out: NDArray[Any] = 0.5 * inside * inside + np.maximum(t - 1.0, 0.0)
    return out


def _check_sd(s: float) -> float:
    s = float(s)
    if not (s > 0.0 and math.isfinite(s)):
        raise ValueError(f"the noise standard deviation must be finite and > 0, got {s}")
    return s


def expected_score(m: ArrayLike, s: float) -> NDArray[Any]:
    """The expected score on [0, 1] of a location ``m``: ``G(m) = (1 - EPS) g(m; s) + EPS u(m)``,
    ``g(m; s) = E[clip(m + e, 0, 1)]``, ``e ~ N(0, s^2)`` (module docstring).

    Parameters
    ----------
    m : array_like of float
        Locations on the unbounded unit scale (any finite value).

    Returns
    -------
    ndarray of float64
        ``G(m)``, within [0, 1], strictly increasing in ``m``; NaN where ``m`` is NaN.

    Raises
    ------
    ValueError
        ``s`` is not finite and positive.

    References
    ----------
    Tobin (1958), Econometrica 26 (the censored normal's mean).

    Examples
    --------
    >>> [round(float(v), 6) for v in expected_score([-1.0, 0.0, 0.3, 0.5, 1.0, 2.0], 0.1)]
    [0.0, 0.039894, 0.300038, 0.5, 0.960106, 1.0]
    """
    s = _check_sd(s)
    m = np.asarray(m, dtype=np.float64)
    upper = m > 0.5
    low = np.where(upper, 1.0 - m, m)  # g(1 - m) = 1 - g(m): evaluate on the lower half only
    g = (1.0 - EPS) * _low(low, s) + EPS * ((_big_f(low + WIDE) - _big_f(low - WIDE)) / (2.0 * WIDE))
    out: NDArray[Any] = np.clip(np.where(upper, 1.0 - g, g), 0.0, 1.0)
    return out


def expected_score_slope(m: ArrayLike, s: float) -> NDArray[Any]:
    """``G'(m) = (1 - EPS) g'(m; s) + EPS u'(m)``, ``g'(m; s) = Phi((1 - m) / s) - Phi(-m / s)``:
    the derivative of :func:`expected_score`, for the delta method.

    Parameters
    ----------
    m : array_like of float
        Locations on the unbounded unit scale.

    Returns
    -------
    ndarray of float64
        ``G'(m)``, in (0, 1]; 1/2 ... 1 in the middle of the scale, toward 0 far outside it.

    Examples
    --------
    >>> [round(float(v), 4) for v in expected_score_slope([-0.2, 0.0, 0.5, 1.0], 0.1)]
    [0.0228, 0.5, 1.0, 0.5]
    """
    s = _check_sd(s)
    m = np.asarray(m, dtype=np.float64)
    low = np.where(m > 0.5, 1.0 - m, m)  # g' is symmetric about 1/2
    wide = (np.clip(low + WIDE, 0.0, 1.0) - np.clip(low - WIDE, 0.0, 1.0)) / (2.0 * WIDE)
    with np.errstate(over="ignore"):  # g'(m; s) = Phi(m / s) - Phi((m - 1) / s) for m <= 1/2
        g_slope = np.maximum(special.ndtr(low / s) - special.ndtr((low - 1.0) / s), 0.0)
    out: NDArray[Any] = (1.0 - EPS) * g_slope + EPS * wide
    return out


def bounded_interval(m: ArrayLike, half: ArrayLike, s: float) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """``(G(m), G(m - half), G(m + half))``: the estimate and the image of the interval ``m -+ half``
    (:func:`expected_score`; a monotone map carries the interval's quantiles over), its ends widened to the
    estimate where float64 rounding would leave it a hair outside.

    Parameters
    ----------
    m, half : array_like of float
        Locations and interval half widths (>= 0) on the unbounded unit scale; broadcast together.

    Returns
    -------
    (estimate, low, high) : tuple of ndarray of float64
        Within [0, 1], ``low <= estimate <= high``.

    Examples
    --------
    >>> est, lo, hi = bounded_interval([0.95, 0.2], [0.2, 0.1], 0.05)
    >>> [round(float(v), 4) for v in (*est, *lo, *hi)]
    [0.9458, 0.2, 0.75, 0.1004, 1.0, 0.3]
    """
    m = np.asarray(m, dtype=np.float64)
    half = np.asarray(half, dtype=np.float64)
    est = expected_score(m, s)
    low = np.minimum(expected_score(m - half, s), est)
    high = np.maximum(expected_score(m + half, s), est)
    return est, low, high
