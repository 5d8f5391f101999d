"""How deep the queue of open tasks is kept, measured while the campaign runs, and the next HITs chosen ahead.

**The depth** (:class:`QueueMeter`, :class:`QueuePlan`). Label Studio hands each annotator who presses *Label All
Tasks* the first unlocked task and locks it for them; the backend cannot see the locks. So that every annotator
finds a free task after a submission, the queue keeps

    depth = A + max(A, ceil(rate * cycle)) + 1

open HITs, where ``A`` is the annotators active in the last :data:`~easl_plugin.bookkeeping.ACTIVE_WINDOW_S`
seconds (who submitted, or saved a draft as far as the last reconciliation saw), each of whom may hold one locked
task; ``max(A, ...)`` is what must be free for a burst: every active annotator submitting within the same second
takes one free task each, and the submissions that arrive while the backend tops the queue up (``rate``: the
submissions of the last :data:`RATE_WINDOW_S` seconds per second; ``cycle``: the longest of the backend's last
:data:`CYCLES_KEPT` cycles, from a webhook's arrival to the import of the tasks it made room for) take one each;
the last ``1`` is for an annotator who starts now. Only whole HITs of items in no open HIT can be opened, so a
small campaign may hold fewer. ``easl serve --queue-depth N`` fixes the depth instead (``0``: the paper's batches).

**Chosen ahead** (:class:`Ahead`). Right after a top-up, the HITs of the next one are chosen
(``Project.choose_top_up``: the same choice, from the same generator, that the top-up would make then) and kept;
the next top-up records those that are still free of open HITs (``Project.add_hits``) and imports them, so it is
an import, not a choice, and only what is missing is chosen then. A plan older than :data:`AHEAD_TTL_S` seconds,
or made before another iteration started, is dropped (the posterior has moved).
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.store import Project
from easl_toolkit.easl_plugin import bookkeeping as bk
from easl_toolkit.easl_plugin.campaign import seconds_since

RATE_WINDOW_S = 60.0  #: submissions counted for the rate
CYCLES_KEPT = 20  #: backend cycles remembered; the longest counts
DEFAULT_CYCLE_S = 2.0  #: the cycle assumed before one was measured
AHEAD_TTL_S = 60.0  #: HITs chosen ahead are dropped after this long


@dataclass(frozen=True)
class QueuePlan:
    """The queue's depth and what it was computed from (module docstring); kept in ``ls.queue`` for
    ``easl ls status``."""

    depth: int
    active: int
    rate_per_s: float
    cycle_s: float
    burst: int
    fixed: bool = False  # --queue-depth: the depth was given, not measured

    def to_json(self) -> str:
        """The plan as JSON (``ls.queue``)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def read(cls, project: Project) -> QueuePlan | None:
        """The last plan kept in the project file (None before ``easl serve`` kept one)."""
        raw = project.get_meta(bk.KEY_QUEUE_PLAN)
        return cls(**json.loads(raw)) if raw else None


class QueueMeter:
    """What the depth is measured from: when each annotator was last seen, the submissions' times and the
    backend's cycles (``time.time()`` seconds)."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.submissions: deque[float] = deque()
        self.cycles: deque[float] = deque(maxlen=CYCLES_KEPT)

    def seed(self, project: Project, now: float) -> None:
        """Start from the project's live ratings of the last :data:`~easl_plugin.bookkeeping.ACTIVE_WINDOW_S`
        seconds (after a restart)."""
        r = project.ratings()
        if r.empty:
            return
        r = r.drop_duplicates("annotation_id")
        for who, at in zip(r["annotator"], r["created_at"]):
            age = seconds_since(at, now)
            if who is not None and age is not None and age <= bk.ACTIVE_WINDOW_S:
                self.saw(str(who), now - age)
                if age <= RATE_WINDOW_S:
                    self.submissions.append(now - age)

    def saw(self, annotator: str, at: float) -> None:
        """An annotator was active at ``at``."""
        self.seen[annotator] = max(at, self.seen.get(annotator, at))

    def submitted(self, annotator: str | None, at: float) -> None:
        """A submission (an annotation event) arrived at ``at``."""
        self.submissions.append(at)
        if annotator is not None:
            self.saw(annotator, at)

    def cycle(self, seconds: float) -> None:
        """One backend cycle: from the arrival of the oldest webhook it applied to the import of its top-up."""
        self.cycles.append(max(0.0, seconds))

    def plan(self, project: Project, now: float) -> QueuePlan:
        """The depth now (module docstring), or ``--queue-depth`` when it was given."""
        raw = project.get_meta(bk.KEY_TASK_HOLDERS)
        for h in (json.loads(raw) if raw else {}).values():
            age = seconds_since(h.get("at"), now) if h.get("how") == "draft" else None
            if age is not None:
                self.saw(str(h["annotator"]), now - age)
        while self.submissions and now - self.submissions[0] > RATE_WINDOW_S:
            self.submissions.popleft()
        people = project.external_map(bk.USER)  # Label Studio user id -> e-mail: one person, one key
        active = len({people.get(k, k) for k, at in self.seen.items() if now - at <= bk.ACTIVE_WINDOW_S})
        rate = len(self.submissions) / RATE_WINDOW_S
        cycle = max(self.cycles) if self.cycles else DEFAULT_CYCLE_S
        burst = max(active, math.ceil(rate * cycle))
        fixed = project.get_meta(bk.KEY_QUEUE_DEPTH)
        depth = int(fixed) if fixed is not None else active + burst + 1
        return QueuePlan(depth, active, round(rate, 3), round(cycle, 3), burst, fixed is not None)


class Ahead:
    """The HITs of the next top-up, chosen ahead (module docstring)."""

    def __init__(self) -> None:
        self.rows: NDArray[Any] = np.zeros((0, 0), dtype=np.int64)
        self.iteration = -1
        self.made_at = 0.0

    def refill(self, project: Project, n_target: int) -> int:
        """Choose the HITs a top-up to ``n_target`` open HITs would add now (``Project.choose_top_up``); returns
        how many were chosen."""
        self.rows = project.choose_top_up(n_target)
        self.iteration, self.made_at = project.iteration(), time.monotonic()
        return len(self.rows)

    def take(self, project: Project, need: int) -> int:
        """Record up to ``need`` of the HITs chosen ahead that are still free of open HITs (``Project.add_hits``,
        one new iteration); returns how many. Call it under the service's write gate."""
        fresh = self.iteration == project.iteration() and time.monotonic() - self.made_at <= AHEAD_TTL_S
        if need <= 0 or not fresh or not len(self.rows):
            return 0
        mask, _ = project.open_item_mask()
        free = self.rows[~mask[self.rows].any(axis=1)][:need]
        self.rows, self.iteration = np.zeros((0, 0), dtype=np.int64), -1  # used once
        if len(free):
            project.add_hits(free)
        return len(free)
