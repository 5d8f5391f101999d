"""Work done one step ahead in a thread: while the writer appends chunk k of an ingest, chunk k + 1 is parsed and
validated (:meth:`core.store.observations.Observations.ingest_chunks`).

Python threads run in parallel only while one of them is outside the interpreter: SQLite's long statements (an
``INSERT ... SELECT``, a commit) release the GIL for their whole run, but ``executemany`` takes it back after every
row, and a row waits for the other thread's time slice (5 ms) whenever that thread runs Python. So the writer says
when the thread may go on (:meth:`ReadAhead.go_on`): after it has bound its rows, before its long statements.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

_DONE = object()


class ReadAhead(Generic[T]):
    """Iterate over ``produce``, each item made in a thread of its own while the caller works on the one before.

    The thread makes the next item once the caller has taken the previous one and called :meth:`go_on` (taking
    an item without having called it calls it), so at most two items are alive at once: the caller's and the next
    one. Items come in order; an exception raised by ``produce`` is raised by ``next`` where its item would have
    come. :meth:`close` (also on leaving a ``with`` block) lets the thread finish the item it is making, closes
    ``produce`` in that thread and joins it: nothing runs on afterwards.
    """

    def __init__(self, produce: Iterator[T]) -> None:
        self._produce = produce
        self._ready: queue.SimpleQueue[tuple[object, object]] = queue.SimpleQueue()
        self._room = threading.Semaphore(1)  # released by go_on: the thread may make the next item
        self._stop = threading.Event()
        self._released = True  # go_on was called for the item the caller holds (none yet)
        self._thread = threading.Thread(target=self._work, name="easl-read-ahead", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            while True:
                self._room.acquire()
                if self._stop.is_set():
                    return
                try:
                    item = next(self._produce)
                except StopIteration:
                    self._ready.put((_DONE, None))
                    return
                self._ready.put((None, item))
                del item
        except BaseException as exc:  # handed to the caller, which raises it
            self._ready.put((_DONE, exc))
        finally:
            close = getattr(self._produce, "close", None)
            if close is not None:
                close()

    def go_on(self) -> None:
        """Let the thread make the next item now (once per item taken; later calls do nothing)."""
        if not self._released:
            self._released = True
            self._room.release()

    def __iter__(self) -> ReadAhead[T]:
        return self

    def __next__(self) -> T:
        self.go_on()
        done, value = self._ready.get()
        if done is _DONE:
            self._ready.put((_DONE, None))  # a later call ends too
            if isinstance(value, BaseException):
                raise value
            raise StopIteration
        self._released = False
        return value  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the thread after the item it is making, close ``produce`` and join the thread."""
        if self._thread.is_alive():
            self._stop.set()
            self._room.release()
            self._thread.join()

    def __enter__(self) -> ReadAhead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
