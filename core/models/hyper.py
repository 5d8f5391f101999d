"""Hyper-parameters of a project (:class:`Hyper`) and the names of the methods and partner pools.

Defaults are those of Sakaguchi & Van Durme (2018), section 5 and Algorithm 1. An invalid value raises
:class:`core.errors.HyperParameterError` naming the field, the value and what it needs; the wording of a hint
(which flag or form field to change) is the front end's.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.errors import HyperParameterError, ProjectFileError

#: The posterior models of :func:`core.models.get_model`: the paper's four, the annotator-aware model, and the
#: evaluation campaign (the annotator-aware model over responses carrying scoring systems' scores).
METHODS = ("easl", "ra", "trueskill", "da", "aware", "campaign")
#: Fields that only the annotator-aware model uses, with their defaults (left out of the other methods' files).
#: ``uniform_passes`` equals :data:`core.models.aware.alloc.UNIFORM_PASSES` (a test checks; importing loads SciPy).
DEFAULT_UNIFORM_PASSES = 2
AWARE_FIELDS: dict[str, int | None] = {"uniform_passes": DEFAULT_UNIFORM_PASSES, "stop_at": None}


#: Fields that only an evaluation campaign uses, with their defaults (left out of the other methods' files).
CAMPAIGN_FIELDS: dict[str, Any] = {"systems": (), "targets": (), "stop_width": None}
#: The metrics a campaign may target (``--target``): names of :data:`core.campaign.moments.METRICS` as a user
#: writes them ("prmse" is the combined PRMSE, of first scores and of double-scored responses).
CAMPAIGN_TARGETS = ("mean", "r", "qwk", "rmse", "smd", "prmse", "hh_r", "hh_qwk")
#: The targets of a campaign that names none: r and PRMSE of every system.
DEFAULT_CAMPAIGN_TARGETS = ("r", "prmse")


def method_fields(method: str) -> tuple[str, ...]:
    """The hyper-parameters that only ``method`` uses (:data:`AWARE_FIELDS` for the annotator-aware model,
    :data:`CAMPAIGN_FIELDS` for an evaluation campaign)."""
    return {"aware": tuple(AWARE_FIELDS), "campaign": tuple(CAMPAIGN_FIELDS)}.get(method, ())


#: The uniform passes of an ``aware`` project whose file does not name them (written when the default was 3).
LEGACY_UNIFORM_PASSES = 3
#: Where Algorithm 1 draws an anchor's partners from: the non-anchors (the paper) or every item but the anchor.
PARTNER_POOLS = ("paper", "all")


def _as_int(field: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int >= minimum`` (a float with an integral value is accepted; ``bool`` is not)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise HyperParameterError(field, value, f"an integer >= {minimum}")
    return int(value)


def _as_float(field: str, value: Any) -> float:
    """``value`` as a finite ``float`` (``bool`` and strings are not numbers here)."""
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not number or not math.isfinite(float(value)):
        raise HyperParameterError(field, value, "a finite number")
    return float(value)


@dataclass(frozen=True)
class Hyper:
    """Hyper-parameters of a project, recorded in the project file when it is created (defaults: module docstring).

    Attributes
    ----------
    method : {"easl", "ra", "trueskill", "da", "aware"}
        The posterior model (:data:`METHODS`).
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
    uniform_passes : int
        ``aware`` only: scores every item gets (least annotated first, as DA) before the allocation adapts (>= 0;
        a project file that does not name it has :data:`LEGACY_UNIFORM_PASSES`).
    stop_at : float or None
        ``aware`` only: the target expected Spearman of the stopping rule (in ``(0, 1)``), or None (no rule).
    systems : tuple of str
        ``campaign`` only (and required there): the columns of the items file holding each system's score.
    targets : tuple of str
        ``campaign`` only: the metrics that drive the design and the stopping rule (:data:`CAMPAIGN_TARGETS`;
        empty: :data:`DEFAULT_CAMPAIGN_TARGETS`).
    stop_width : float or None
        ``campaign`` only: stop when every target metric's 95% interval is narrower than this (> 0), or None.

    Raises
    ------
    core.errors.HyperParameterError
        A field is out of range; ``field``, ``value`` and ``need`` say which and why.

    Examples
    --------
    >>> h = Hyper(score_min=-2, score_max=2)
    >>> h.method, h.hit_size, h.gamma
    ('easl', 5, 0.1)
    >>> h.to_unit([-2, 0, 2]).tolist()
    [0.0, 0.5, 1.0]
    >>> Hyper(hit_size=1)
    Traceback (most recent call last):
    ...
    easl_toolkit.core.errors.HyperParameterError: hit_size = 1: an integer >= 2
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
    uniform_passes: int = DEFAULT_UNIFORM_PASSES
    stop_at: float | None = None
    systems: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    stop_width: float | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise HyperParameterError("method", self.method, "one of " + ", ".join(METHODS))
        if self.partner_pool not in PARTNER_POOLS:
            raise HyperParameterError("partner_pool", self.partner_pool, "one of " + ", ".join(PARTNER_POOLS))
        object.__setattr__(self, "hit_size", _as_int("hit_size", self.hit_size, 2))
        object.__setattr__(self, "seed", _as_int("seed", self.seed, 0))
        if self.hits_per_iteration is not None:
            object.__setattr__(self, "hits_per_iteration", _as_int("hits_per_iteration", self.hits_per_iteration, 1))
        object.__setattr__(self, "uniform_passes", _as_int("uniform_passes", self.uniform_passes, 0))
        if self.stop_at is not None:
            object.__setattr__(self, "stop_at", _as_float("stop_at", self.stop_at))
            if not 0.0 < self.stop_at < 1.0:
                raise HyperParameterError("stop_at", self.stop_at, "a Spearman correlation in (0, 1)")
            if self.method != "aware":
                raise HyperParameterError(
                    "stop_at",
                    self.stop_at,
                    f"the method aware (this project uses {self.method}; the stopping rule needs the aware posterior)",
                )
        self._check_campaign()
        for name in ("gamma", "epsilon", "alpha0", "beta0", "score_min", "score_max"):
            object.__setattr__(self, name, _as_float(name, getattr(self, name)))
        for name in ("gamma", "epsilon"):
            if getattr(self, name) <= 0:
                raise HyperParameterError(name, getattr(self, name), "a positive finite number")
        for name in ("alpha0", "beta0"):
            if getattr(self, name) < 1:
                raise HyperParameterError(name, getattr(self, name), "a finite number >= 1 (the mode, eq 12, needs it)")
        if not self.score_max > self.score_min:
            raise HyperParameterError("score_max", self.score_max, f"greater than score_min ({self.score_min!r})")

    def _check_campaign(self) -> None:
        """The campaign fields: systems required by (and only for) ``campaign``, known targets, a positive width."""
        for name in ("systems", "targets"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) and v.strip() for v in value):
                raise HyperParameterError(name, value, "a list of non-empty names")
            object.__setattr__(self, name, tuple(value))
        if self.method != "campaign":
            for name, default in CAMPAIGN_FIELDS.items():
                if getattr(self, name) != default:
                    raise HyperParameterError(
                        name, getattr(self, name), f"the method campaign (this project uses {self.method})"
                    )
            return
        if not self.systems:
            raise HyperParameterError("systems", self.systems, "at least one system column (an evaluation campaign)")
        if len(set(self.systems)) != len(self.systems):
            raise HyperParameterError("systems", self.systems, "each system column once")
        for t in self.targets:
            if t not in CAMPAIGN_TARGETS:
                raise HyperParameterError("targets", t, "one of " + ", ".join(CAMPAIGN_TARGETS))
        if self.stop_width is not None:
            object.__setattr__(self, "stop_width", _as_float("stop_width", self.stop_width))
            if not self.stop_width > 0:  # (a finite number already)
                raise HyperParameterError("stop_width", self.stop_width, "a positive interval width")

    @property
    def campaign_targets(self) -> tuple[str, ...]:
        """The targets of a campaign (:data:`DEFAULT_CAMPAIGN_TARGETS` when it names none)."""
        return self.targets or DEFAULT_CAMPAIGN_TARGETS

    def to_json(self) -> str:
        """Serialise to a JSON object (sorted keys), the form stored in the project file.

        Returns
        -------
        str
            ``json.dumps(dataclasses.asdict(self), sort_keys=True)``, without the :data:`AWARE_FIELDS` that hold
            their defaults, except an ``aware`` project's ``uniform_passes`` (:data:`LEGACY_UNIFORM_PASSES`).
        """
        data = dataclasses.asdict(self)
        for name, default in AWARE_FIELDS.items():
            if data[name] == default and not (self.method == "aware" and name == "uniform_passes"):
                del data[name]
        for name, default in CAMPAIGN_FIELDS.items():
            if data[name] == default:
                del data[name]
            elif isinstance(data[name], tuple):
                data[name] = list(data[name])
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, s: str, *, source: str = "project file") -> Hyper:
        """Parse :meth:`to_json` output; missing fields take their defaults, but an ``aware`` project's missing
        ``uniform_passes`` is :data:`LEGACY_UNIFORM_PASSES` (files written when that was the default).

        Parameters
        ----------
        s : str
            A JSON object.
        source : str
            Where ``s`` comes from (a path), named in errors.

        Returns
        -------
        Hyper

        Raises
        ------
        core.errors.ProjectFileError
            ``s`` is not valid JSON or not a JSON object.
        core.errors.HyperParameterError
            A field that is not a hyper-parameter, or an invalid value (the message names ``source``).

        Examples
        --------
        >>> Hyper.from_json('{"method": "da"}').method
        'da'
        >>> Hyper.from_json('{"gamma": -1}', source="p.easl")
        Traceback (most recent call last):
        ...
        easl_toolkit.core.errors.HyperParameterError: p.easl: gamma = -1.0: a positive finite number
        """
        try:
            data = json.loads(s)
        except (TypeError, ValueError) as exc:
            raise ProjectFileError(source, f"hyper-parameters are not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ProjectFileError(source, f"hyper-parameters must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise HyperParameterError(unknown[0], data[unknown[0]], "no such hyper-parameter", source=source)
        if data.get("method") == "aware":
            data.setdefault("uniform_passes", LEGACY_UNIFORM_PASSES)
        try:
            return cls(**data)
        except HyperParameterError as exc:
            raise HyperParameterError(exc.field, exc.value, exc.need, source=source) from None

    @property
    def score_span(self) -> float:
        """``score_max - score_min``."""
        return self.score_max - self.score_min

    def to_unit(self, scores: Any) -> NDArray[Any]:
        """Map project scores to the unit interval: ``(s - score_min) / (score_max - score_min)``."""
        return (np.asarray(scores, dtype=np.float64) - self.score_min) / self.score_span

    def from_unit(self, values: Any) -> NDArray[Any]:
        """Map unit-interval locations (estimates, means, interval ends) back to the score range:
        ``u (score_max - score_min) + score_min``."""
        return np.asarray(values, dtype=np.float64) * self.score_span + self.score_min

    def variance_from_unit(self, variance: Any) -> NDArray[Any]:
        """Scale a unit-interval variance to the score range: ``var (score_max - score_min)^2``."""
        return np.asarray(variance, dtype=np.float64) * self.score_span**2
