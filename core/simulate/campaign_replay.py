"""Replay of evaluation campaigns on real human scores with a real system's scores.

A ratings file has one row per response and the columns:

- ``system``: the scoring system's score of the response (a number; the column's name can be chosen);
- ``human_1``, ``human_2``, ... (every column whose name starts with ``human_``): the human scores of the response,
  one column per rating (blank where a response has fewer ratings); every response needs at least two;
- anything else (an id, the rater of each score, ...) is carried along and ignored.

The shipped sets (``core/data/wmt23_mqm_ende/``, :func:`core.datasets.wmt23_mqm_ratings`, and
``core/data/mlqe_pe_roen/``, :func:`core.datasets.mlqe_pe_roen_ratings`) have this format.

Campaigns (the population is the real data, the responses a sample from it): each campaign draws N responses
with replacement from the M real ones (N = M unless set), and for each drawn response a random ordered pair of two
of its real ratings as the first and second human score (each pair equally likely); the system's score is the
real one. Drawing with replacement makes the responses of a campaign an independent sample of the population,
the setting the intervals are built for (superpopulation, :mod:`core.campaign.estimators`). The true value of a
metric is its value on :attr:`CampaignStudySettings.truth_responses` responses drawn the same way, every one
double-scored. Everything else (designs, budgets, the oracle) is :func:`core.simulate.campaign_study.run_draws`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.errors import InputError
from easl_toolkit.core.simulate.campaign_study import CampaignStudySettings, World, run_draws

#: Prefix of the human-score columns of a ratings file.
HUMAN_PREFIX = "human_"
#: Fewest responses a replay accepts (below this no design has a pilot to fit on).
MIN_RESPONSES = 50


@dataclass(frozen=True)
class ReplayData:
    """Real responses: ``system`` (M,) the system's scores, ``human`` (M, K) the human scores (NaN where a response
    has fewer than K), ``name`` a label for the tables."""

    system: NDArray[Any]
    human: NDArray[Any]
    name: str

    @property
    def n_responses(self) -> int:
        """M, the number of real responses."""
        return int(self.system.shape[0])


def _numeric(frame: pd.DataFrame, column: str, where: str) -> NDArray[Any]:
    """The column as float64; a located InputError at the first value that is not a number."""
    raw = frame[column]
    values: NDArray[Any] = np.asarray(pd.to_numeric(raw, errors="coerce"), dtype=np.float64)
    bad = np.flatnonzero(np.isnan(values) & raw.notna().to_numpy())
    if bad.size:
        row = int(bad[0])
        msg = f"{where}: line {row + 2}, column {column!r}: {raw.iloc[row]!r} is not a number"
        raise InputError(msg, path=where, line=row + 2, field=column)
    inf = np.flatnonzero(np.isinf(values))
    if inf.size:
        line = int(inf[0]) + 2
        raise InputError(
            f"{where}: line {line}, column {column!r}: infinite value", path=where, line=line, field=column
        )
    return values


def check_ratings(frame: pd.DataFrame, system: str = "system", where: str = "ratings") -> ReplayData:
    """Validate a ratings table (module docstring) and return its arrays; one located InputError otherwise.

    Messages name the file's line (the header is line 1) and the column."""
    humans = [c for c in frame.columns if str(c).startswith(HUMAN_PREFIX)]
    if system not in frame.columns:
        raise InputError(f"{where}: no column {system!r} (the system's scores); columns: {', '.join(map(str, frame))}")
    if system in humans:
        raise InputError(f"{where}: the system column {system!r} is also a human-score column")
    if len(humans) < 2:
        raise InputError(
            f"{where}: needs two or more human-score columns named {HUMAN_PREFIX}1, {HUMAN_PREFIX}2, ...;"
            f" found {len(humans)}"
        )
    if len(frame) < MIN_RESPONSES:
        raise InputError(f"{where}: {len(frame)} responses; a replay needs at least {MIN_RESPONSES}")
    sys_scores = _numeric(frame, system, where)
    missing = np.flatnonzero(np.isnan(sys_scores))
    if missing.size:
        raise InputError(f"{where}: line {int(missing[0]) + 2}: no system score in column {system!r}")
    human = np.column_stack([_numeric(frame, c, where) for c in humans])
    few = np.flatnonzero((~np.isnan(human)).sum(axis=1) < 2)
    if few.size:
        raise InputError(f"{where}: line {int(few[0]) + 2}: fewer than 2 human scores (a replay needs two)")
    return ReplayData(system=sys_scores, human=human, name=Path(where).stem)


def read_ratings(path: str | Path, system: str = "system") -> ReplayData:
    """Read and validate a ratings CSV (module docstring); one located InputError on bad input."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    try:
        frame = pd.read_csv(p)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    return check_ratings(frame, system, str(path))


def shipped_ratings(name: str = "wmt23_mqm_ende") -> ReplayData:
    """A shipped set (:data:`core.datasets.CAMPAIGN_SETS`): by default the WMT23 English-German MQM set
    (:func:`core.datasets.wmt23_mqm_ratings`), or the MLQE-PE Romanian-English set
    (:func:`core.datasets.mlqe_pe_roen_ratings`)."""
    from easl_toolkit.core.datasets import campaign_ratings

    return replace(check_ratings(campaign_ratings(name), "system", name), name=name)


def draw_replay(data: ReplayData, shape: tuple[int, int], rng: Any) -> World:
    """C campaigns of N responses drawn with replacement, each with a random ordered pair of its real ratings."""
    idx = rng.integers(0, data.n_responses, size=shape)
    human = data.human[idx]
    keys = np.where(np.isnan(human), np.inf, rng.random(human.shape))
    order = np.argsort(keys, axis=-1)[..., :2]
    pair = np.take_along_axis(human, order, axis=-1)
    return World(first=pair[..., 0], second=pair[..., 1], systems=data.system[idx][..., None])


def replay_settings(
    data: ReplayData, *, n_campaigns: int = 1000, budgets: tuple[float, ...] = (0.1, 0.2, 0.3, 0.5), seed: int = 2020
) -> CampaignStudySettings:
    """The study's settings for a replay of ``data``: N = M responses per campaign."""
    return replace(
        CampaignStudySettings(),
        n_responses=data.n_responses,
        n_campaigns=n_campaigns,
        chunk=max(1, min(n_campaigns, 200_000 // data.n_responses)),
        budgets=budgets,
        truth_responses=max(200_000, 200 * data.n_responses),
        oracle_responses=max(100_000, 100 * data.n_responses),
        seed=seed,
    )


def run_replay(
    data: ReplayData, s: CampaignStudySettings, progress: Callable[[str], None] | None = None
) -> pd.DataFrame:
    """Every design at every budget of ``s`` on campaigns replayed from ``data`` (rows as the simulated study's; the
    ``rater`` column holds the data's name, ``system_r`` its true human-system r)."""

    def draw(shape: tuple[int, int], rng: Any) -> World:
        return draw_replay(data, shape, rng)

    return run_draws(s, draw, {"rater": data.name, "system_r": None}, [s.seed, 99], progress)
