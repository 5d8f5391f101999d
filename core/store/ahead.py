"""Work done one step ahead in a thread: while the writer appends chunk k of an ingest (SQLite runs without holding
the GIL), chunk k + 1 is parsed and validated (:meth:`core.store.observations.Observations.ingest_chunks`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


def read_ahead(produce: Iterator[T]) -> Generator[T, None, None]:
    """Yield the items of ``produce``, each made in a thread of its own while the caller works on the one before.

    At most two items are alive at once (the caller's and the next one), so memory stays that of two chunks. The
    items come in order; an exception raised by ``produce`` is raised here, at the item it replaced. When the
    caller stops early (an exception, or closing this generator), the thread finishes the item it is making, then
    ``produce`` is closed in that thread and the thread is joined: nothing runs on after this generator ends.
    """
    ready: queue.SimpleQueue[tuple[object, T | BaseException | None]] = queue.SimpleQueue()
    room = threading.Semaphore(1)  # released when the caller takes an item: the thread may make the next one
    stop = threading.Event()

    def work() -> None:
        try:
            while True:
                room.acquire()
                if stop.is_set():
                    return
                try:
                    item = next(produce)
                except StopIteration:
                    ready.put((_DONE, None))
                    return
                ready.put((None, item))
                del item
        except BaseException as exc:  # handed to the caller, which raises it
            ready.put((_DONE, exc))
        finally:
            close = getattr(produce, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=work, name="easl-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            done, value = ready.get()
            if done is _DONE:
                if value is not None:
                    raise value  # type: ignore[misc]
                return
            room.release()
            yield value  # type: ignore[misc]
            del value
    finally:
        stop.set()
        room.release()
        thread.join()
