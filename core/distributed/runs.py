"""Independent simulation runs on a Dask cluster, with the ``map_fn`` contract of :mod:`core.simulate`.

Every task is submitted at once; results are yielded in task order, each as soon as it and all earlier ones are
done. An argument object shared by several tasks and larger than :data:`SCATTER_BYTES` (a simulated data set) is
sent to the workers once (``Client.scatter``) instead of once per task. A task whose worker dies is re-run
elsewhere by the scheduler; a task that keeps killing workers fails the sweep with one clear error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from core.errors import EaslError
from core.simulate import MapFn

#: Shared arguments at least this large (bytes, ``dask.sizeof``) are scattered once.
SCATTER_BYTES = 1_000_000


def dask_map(client: Any, scatter_bytes: int = SCATTER_BYTES) -> MapFn:
    """A ``map_fn`` that runs ``fn(*task)`` for every task on ``client``'s workers (ordered results)."""

    def map_fn(fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        import distributed
        from dask.sizeof import sizeof

        tasks = [tuple(t) for t in tasks]
        uses = Counter(id(a) for t in tasks for a in t)
        shared: dict[int, Any] = {}
        for t in tasks:
            for a in t:
                if uses[id(a)] > 1 and id(a) not in shared and sizeof(a) >= scatter_bytes:
                    shared[id(a)] = client.scatter(a, broadcast=True, hash=False)
        futures = [client.submit(fn, *[shared.get(id(a), a) for a in t], pure=False) for t in tasks]
        try:
            for fut in futures:
                try:
                    result = fut.result()
                except distributed.KilledWorker as exc:
                    raise EaslError(
                        f"the Dask sweep failed: the workers running {getattr(fn, '__name__', fn)} died "
                        f"repeatedly ({exc}); no result was written."
                    ) from None
                fut.release()
                yield result
        finally:
            client.cancel(futures)

    return map_fn
