"""Streaming mode: keep ``N`` HITs open in Label Studio and top them up as annotations arrive.

Batch mode waits for every HIT of an iteration before selecting the next (Algorithm 1 of Sakaguchi & Van Durme
2018). Streaming mode instead re-selects as soon as a HIT completes, from the current posterior: each new HIT is
Algorithm 1 with one anchor (the highest-variance item not in an open HIT; partners by match quality, eq 11/23),
chosen by the store's one HIT-choosing function (``core.store.hits.choose_hits``, the same as batch mode's) with
``n_hits=1`` and every item of every open HIT excluded, so no item is ever in two open HITs.

Each top-up is recorded as a new (small) iteration of the project file (``Project.top_up_hits``, one transaction)
so that the engine's HIT bookkeeping, validation and ``easl verify`` apply unchanged.
"""

from __future__ import annotations

import contextlib

from core.store import Project
from easl_plugin.client import LabelStudioClient
from easl_plugin.push import push
from label_config.layouts import Layout


def push_streaming(
    project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout, n_target: int, gate=None
) -> int:
    """Top up to ``n_target`` open HITs and push every open HIT without a task; returns tasks created.
    ``gate`` (the service's write gate) is held while the new HITs are selected."""
    with gate if gate is not None else contextlib.nullcontext():
        project.top_up_hits(n_target)
    return push(project, client, ls_project_id, layout, project.open_hits(every_iteration=True))
