"""Work done one step ahead in a thread: while the writer appends chunk k of an ingest, chunk k + 1 is parsed and
validated (:meth:`core.store.observations.ObservationLog.ingest_chunks`). The writer says when the thread may go on
(:meth:`ReadAhead.go_on`): after it has bound its rows, before its long statements, which release the GIL. It is
what makes large ingests fast (why: docs/studies/code-notes.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")

_DONE = object()


class ReadAhead(Generic[T]):
    """Iterate over ``produce``, each item made by a worker thread (``concurrent.futures``) while the caller works
    on the one before.

    The first item is asked for at once, each later one when the caller calls :meth:`go_on` after taking the one
    before (taking an item without having called it calls it), so at most two items are alive at once: the
    caller's and the next one. Items come in order; an exception raised by ``produce`` is raised by ``next`` where
    its item would have come, and the iteration ends there. :meth:`close` (also on leaving a ``with`` block) lets
    the worker finish the item it is making, closes ``produce`` in that thread and joins it.
    """

    def __init__(self, produce: Iterator[T]) -> None:
        self._produce = produce
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="easl-read-ahead")
        self._next: Future[object] | None = None
        self._ended = False
        self.go_on()

    def go_on(self) -> None:
        """Let the worker make the next item now (once per item taken; later calls do nothing)."""
        if self._next is None:
            self._next = self._pool.submit(next, self._produce, _DONE)

    def __iter__(self) -> ReadAhead[T]:
        return self

    def __next__(self) -> T:
        if self._ended:
            raise StopIteration
        self.go_on()
        assert self._next is not None
        future, self._next = self._next, None
        try:
            item = future.result()
        except BaseException:
            self._ended = True
            raise
        if item is _DONE:
            self._ended = True
            raise StopIteration
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop after the item being made, close ``produce`` in the worker thread and join it."""
        close = getattr(self._produce, "close", None)
        if close is not None:
            self._pool.submit(close)
        self._pool.shutdown(wait=True)

    def __enter__(self) -> ReadAhead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
