"""A Dask client: a LocalCluster on this machine (``"local"``) or an existing scheduler at an address.

The local cluster runs one single-threaded worker process per core (the metrics are numpy code that holds the
GIL between calls, so processes, not threads, give parallelism), each with a memory limit of 3/4 of the
machine's memory shared out, at most :data:`LOCAL_WORKER_MEMORY`. Workers spill to disk at 60% of that limit and
are restarted above 95% (``distributed``'s defaults); a task whose worker dies is re-run on another worker, at most
``distributed.scheduler.allowed-failures`` times, after which the computation fails with ``KilledWorker``.

:func:`dask_map` runs independent simulation runs on a client with the ``map_fn`` contract of
:mod:`core.simulate`: every task is submitted at once; results are yielded in task order, each as soon as it
and all earlier ones are done. An argument object shared by several tasks and larger than :data:`SCATTER_BYTES` (a
simulated data set) is sent to the workers once (``Client.scatter``) instead of once per task. A task that keeps
killing workers fails the sweep with one clear error.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.simulate import MapFn

#: Upper bound on the memory limit of one local worker (bytes).
LOCAL_WORKER_MEMORY = 4 * 2**30


def _total_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def local_sizing(workers: int | None = None, memory_limit: int | str | None = None) -> tuple[int, int]:
    """(number of workers, memory limit per worker in bytes) of the local cluster; the limit may be a size such
    as ``"2GiB"``.

    Examples
    --------
    >>> local_sizing(2, "1GiB")
    (2, 1073741824)
    """
    n = workers or max(1, os.cpu_count() or 1)
    if isinstance(memory_limit, str):
        from dask.utils import parse_bytes

        try:
            memory_limit = int(parse_bytes(memory_limit))
        except ValueError:
            raise EaslError(f"the worker memory limit {memory_limit!r} is not a size (e.g. 2GiB).") from None
    mem = memory_limit or int(min(LOCAL_WORKER_MEMORY, 0.75 * _total_memory() / n))
    return n, mem


@contextmanager
def connect(target: str, *, workers: int | None = None, memory_limit: int | str | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` for ``target`` (``"local"`` or a scheduler address such as ``tcp://host:8786``).

    The local cluster is closed on exit; a remote scheduler is only disconnected from.
    """
    try:
        import distributed
    except ImportError:
        raise EaslError(
            "the Dask engine needs the dask extra: pip install 'easl-toolkit[dask]' (dask[dataframe], distributed)."
        ) from None
    Client: Any = distributed.Client  # untyped in places: called through Any
    LocalCluster: Any = distributed.LocalCluster
    if target == "local":
        n, mem = local_sizing(workers, memory_limit)
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            memory_limit=mem,
            dashboard_address=":0",  # a free port: never the "8787 in use" warning
            silence_logs=logging.CRITICAL,  # a task's error reaches the user once, as the command's error
        )
        client = Client(cluster)
    else:
        cluster = None
        try:
            client = Client(target, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise EaslError(f"cannot reach the Dask scheduler at {target}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


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
