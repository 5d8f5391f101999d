"""The webhook writer: one thread that makes acknowledged events durable, in batches (group commit).

The web service (``service.py``) hands each valid webhook to ``EventWriter.append`` and answers Label Studio once
the returned awaitable resolves: the event is then committed to the project file's ``events`` table, or, while the
worker or another process (``easl ingest``, the TUI) holds the file's write lock, appended and flushed to the spill
journal next to it (``journal.py``). Either way it survives ``kill -9``.

What keeps the acknowledgement short and bounded under a burst:

- the event loop only puts the event on an in-memory queue; it never touches the disk nor waits for the write
  lock (the gate shared with the worker);
- the writer takes whatever arrived while it was busy as one batch: one transaction and one fsync for the batch,
  whatever its size (up to ``max_batch``);
- it never waits for a lock either: when the worker holds the gate, or another process holds SQLite's write
  lock for more than ``LOCK_WAIT_S`` (``transaction(max_wait_s=...)`` instead of SQLite's 30 s busy timeout: an
  ``easl ingest`` holds it for its whole transaction, minutes for a large file; once found taken, the next
  batches do not wait at all until a move succeeds), the batch goes to the journal (one fdatasync), and the
  journal is moved into ``events`` in arrival order as soon as both are free (tried every ``BUSY_POLL_S``, in
  slices of ``MOVE_SLICE`` events, between batches; while it holds events, new ones are journaled behind them). A
  batch that cannot be committed for another reason (disk full in the file, a damaged page) goes to the journal
  too: only when the journal cannot be written either does the sender get a 503;
- it wakes each event loop once per batch, not once per event;
- it never copies the WAL back into the database file on the way (SQLite's automatic checkpoint, which the
  committing connection runs whenever the WAL passes 1,000 pages: 100-400 ms of writing and flushing on a busy
  disk, with every acknowledgement in flight waiting behind it). The worker's connection checkpoints when it
  commits (the writer journals meanwhile), and the writer itself only after ``CHECKPOINT_IDLE_S`` seconds
  without a webhook;
- the queue is bounded (``max_waiting``): beyond it ``append`` fails at once with ``QueueUnavailable``, which the
  service answers with 503, instead of letting memory and latency grow without limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol

from easl_toolkit.core.store.db import FileBusy
from easl_toolkit.easl_plugin import bookkeeping
from easl_toolkit.easl_plugin.journal import Journal, journal_path

log = logging.getLogger("easl.serve")
CHECKPOINT_IDLE_S = 1.0  #: the writer checkpoints the WAL only after this long without a webhook
LOCK_WAIT_S = 0.05  #: the longest wait of a batch for the file's write lock before it goes to the journal
MOVE_SLICE = 256  #: journaled events moved per transaction (``EventWriter._move``)
BUSY_POLL_S = 0.05  #: while another process holds the file's write lock, the journal's move is tried this often


class Gate(Protocol):
    """The write gate: a ``threading.Lock`` or a ``multiprocessing`` lock (a worker in another process)."""

    def acquire(self, blocking: bool = ..., timeout: float = ..., /) -> bool: ...

    def release(self) -> None: ...


class QueueUnavailable(Exception):
    """An event could not be made durable in time (queue full, disk error, writer stopped); ``str(exc)`` says
    which, without any payload content."""


class EventWriter:
    """One thread that commits queued webhook events to the project file in batches (group commit).

    Parameters
    ----------
    project_path : str
    on_commit : callable
        Called in the writer thread after each batch is durable and before its acknowledgements are released
        (it wakes the worker, so whoever sees a 200 also sees the worker woken).
    max_batch : int
        Most events in one transaction.
    gate : lock, optional
        Shared with the worker: one writer of the file at a time. The writer only ever tries it without waiting.
    shared_busy, shared_last_commit : ``multiprocessing.Value``, optional
        The "acknowledgements in flight" count and the last commit time, for a worker in another process.
    max_waiting : int
        Most events waiting for the writer; beyond it ``append`` raises ``QueueUnavailable`` at once.
    """

    def __init__(
        self,
        project_path: str,
        on_commit: Callable[[], None],
        *,
        max_batch: int = 512,
        gate: Gate | None = None,
        shared_busy=None,
        shared_last_commit=None,
        max_waiting: int = 10_000,
    ) -> None:
        self._path = project_path
        self._shared_busy = shared_busy
        self._shared_last_commit = shared_last_commit
        self.gate: Gate = gate if gate is not None else threading.Lock()
        self._busy = 0
        self.last_commit = 0.0  # time.monotonic() of the last commit (the worker paces itself)
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._max_waiting = max_waiting
        self._q: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="easl-event-writer", daemon=True)
        self._stop = object()
        self._stopped = False
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.committed_total = 0  # events stored in ``events`` directly
        self.journaled_total = 0  # events spilled to the journal (moved into ``events`` later)
        self.failed_total = 0  # events that could not be stored (their sender got 503)
        self._unchecked = 0  # commits since the writer's last checkpoint
        self._file_busy = False  # the last try found the file's write lock taken by another connection
        self._move_error: str | None = None  # the last failure to move the journal (logged once)
        self._move_tried = 0.0  # time.monotonic() of the last try to move the journal
        self._backlog: list[dict] | None = None  # the journal's records being moved, slice by slice
        self._moved_n = 0  # how many of them are moved

    def start(self) -> None:
        """Open the project file in the writer thread, move what a previous run journaled, start committing."""
        self._thread.start()
        self.ready.wait(60)
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Commit what is queued, then end the thread."""
        self._stopped = True
        self._q.put(self._stop)
        self._thread.join(30)

    def waiting(self) -> bool:
        """True while acknowledgements are queued or being committed (the worker then holds back)."""
        return self._busy > 0 or not self._q.empty()

    def figures(self) -> dict:
        """Queue figures for the authenticated ``/status``."""
        return {
            "acks_waiting": self._q.qsize() + self._busy,
            "events_committed": self.committed_total,
            "events_journaled": self.journaled_total,
            "events_failed": self.failed_total,
        }

    def submit(self, loop: asyncio.AbstractEventLoop, action: str, payload_text: str) -> asyncio.Future:
        """Queue one event without waiting; the future resolves with its row id once committed (None when
        journaled), or with the exception that prevented it. Raises ``QueueUnavailable`` when the queue is full
        or the writer has stopped."""
        if self._stopped or not self._thread.is_alive():
            raise QueueUnavailable("the event writer is not running")
        if self._q.qsize() >= self._max_waiting:
            raise QueueUnavailable(f"{self._max_waiting} events are already waiting to be stored")
        fut = loop.create_future()
        self._q.put((loop, fut, action, payload_text))
        return fut

    async def append(self, action: str, payload_text: str, timeout_s: float) -> int | None:
        """Make one event durable; returns its ``events`` row id, or None when it went to the journal.

        Raises ``QueueUnavailable`` when the queue is full, the writer has stopped, storing failed, or it took
        longer than ``timeout_s`` (the event may still be stored later: applying it is idempotent).
        """
        fut = self.submit(asyncio.get_running_loop(), action, payload_text)
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            raise QueueUnavailable(f"not stored within {timeout_s:g} s") from None
        except QueueUnavailable:
            raise
        except Exception as exc:
            raise QueueUnavailable(f"could not store the event ({exc.__class__.__name__})") from exc

    # ------------------------------------------------------------------------------------------ writer thread

    def _run(self) -> None:
        try:
            project = bookkeeping.open_project(self._path)
            project.set_auto_checkpoint(0)  # no automatic checkpoint in the acknowledgement path (module docstring)
            journal = Journal(journal_path(self._path))
            if self.gate.acquire(True, 10.0):
                try:  # events journaled before a crash or stop; while another process writes, the loop moves them
                    with contextlib.suppress(FileBusy):
                        self._move(project, journal)
                finally:
                    self.gate.release()
        except BaseException as exc:  # reported by start()
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        try:
            stopping = False
            while not stopping:
                try:  # while events wait in the journal, wake up regularly to move them
                    first = self._q.get(timeout=self._poll_s(journal))
                except queue.Empty:
                    # never wait for the worker or another process here: a webhook arriving meanwhile must find
                    # this thread free
                    if journal.count:
                        self._try_move(project, journal)
                    elif self._unchecked:
                        self._checkpoint(project)
                    continue
                batch, stopping = self._take(first)
                if batch:
                    self._store(project, journal, batch)
                poll = self._poll_s(journal)
                if journal.count and poll is not None and time.monotonic() - self._move_tried >= poll:
                    self._try_move(project, journal)  # webhooks keep coming: move between batches too
            if self.gate.acquire(True, 10.0):  # a worker that died holding the gate must not hang the stop
                try:
                    with contextlib.suppress(FileBusy):
                        self._move(project, journal)
                finally:
                    self.gate.release()
            if journal.count:
                log.warning("%d journaled event(s) stay in %s until the next start", journal.count, journal.path)
        finally:
            self._fail_waiting()
            journal.close()
            project.close()

    def _poll_s(self, journal: Journal) -> float | None:
        """How long the loop waits for a webhook before it tries to move the journal (or checkpoints): 20 ms
        after the worker held the gate, ``BUSY_POLL_S`` while another process holds the file's lock."""
        if journal.count:
            return BUSY_POLL_S if self._file_busy else 0.02
        return CHECKPOINT_IDLE_S if self._unchecked else None

    def _take(self, first) -> tuple[list, bool]:
        """The batch: ``first`` plus whatever else is queued, up to ``max_batch``; and whether to stop."""
        batch, stopping = [], first is self._stop
        if not stopping:
            batch.append(first)
        while len(batch) < self._max_batch:
            try:
                nxt = self._q.get_nowait()
            except queue.Empty:
                break
            if nxt is self._stop:
                stopping = True
                break
            batch.append(nxt)
        return batch, stopping

    def _store(self, project, journal: Journal, batch: list) -> None:
        """Make one batch durable (events table if the file is free, else the journal), then release its
        acknowledgements.

        Nothing here waits long for a lock: the gate is tried without waiting (the worker), the file's write lock
        for at most ``LOCK_WAIT_S`` (another process, such as ``easl ingest``, may hold it for minutes).
        When either is taken, or the file cannot be written at all, the batch goes to the journal (one
        fdatasync); only when that fails too does the sender get a 503.
        """
        self._set_busy(len(batch))
        events = [(a, p) for _, _, a, p in batch]
        outcome: list = []
        try:  # while the journal holds events, later ones go there too (arrival order); the mover drains it
            outcome = [] if journal.count else self._commit(project, events)
        except Exception as exc:  # not busy but failing (disk full, damaged file): the journal may still work
            log.warning(
                "could not store %d webhook event(s) in the project file (%s); journaling them", len(batch), exc
            )
        if outcome:
            self.committed_total += len(batch)
            self._unchecked += 1
        else:
            try:
                journal.append(events, bookkeeping.now())
                outcome = [None] * len(batch)
                self.journaled_total += len(batch)
            except Exception as exc:  # the journal's disk is full or gone: the senders get 503
                log.error("could not queue %d webhook event(s): %s", len(batch), exc)
                outcome = [exc] * len(batch)
                self.failed_total += len(batch)
        self._set_busy(0)
        self.last_commit = time.monotonic()
        if self._shared_last_commit is not None:
            self._shared_last_commit.value = self.last_commit
        self._on_commit()  # before the acknowledgements: whoever sees a 200 also sees the worker woken
        _release(batch, outcome)

    def _commit(self, project, events: list[tuple[str, str]]) -> list:
        """Commit ``events`` to the ``events`` table in one transaction (one fsync); returns their row ids, or
        ``[]`` when the gate or the file's lock is taken."""
        if not self.gate.acquire(False):
            return []
        try:
            try:
                with project.transaction(max_wait_s=self._lock_wait_s()):
                    outcome: list = bookkeeping.enqueue(project, events)
            except FileBusy:
                self._file_busy = True
                return []
            self._file_busy = False
            return outcome
        finally:
            self.gate.release()

    def _lock_wait_s(self) -> float:
        """How long a batch may wait for the file's write lock: ``LOCK_WAIT_S`` (a short transaction of another
        connection, such as a recorded delivery, ends within it), nothing once the last try found it taken
        (another process's long transaction: each batch would wait in vain)."""
        return 0.0 if self._file_busy else LOCK_WAIT_S

    def _try_move(self, project, journal: Journal) -> bool:
        """Move the next ``MOVE_SLICE`` journaled events into ``events`` if neither the gate nor the file's lock
        is taken; whether it did."""
        self._move_tried = time.monotonic()
        if not self.gate.acquire(False):
            return False
        try:
            self._move(project, journal, MOVE_SLICE)
        except FileBusy:
            self._file_busy = True
            return False
        except Exception as exc:  # the journal keeps the events; the next try may succeed
            if str(exc) != self._move_error:  # once per distinct problem, not every 20 ms
                log.warning("could not move the journal into the project file yet: %s", exc)
            self._move_error = str(exc)
            return False
        finally:
            self.gate.release()
        self._file_busy, self._move_error = False, None
        self._unchecked += 1
        self._on_commit()
        return True

    def _checkpoint(self, project) -> None:
        """Copy the WAL into the database file while idle (PASSIVE: never waits for readers or the worker)."""
        try:
            project.checkpoint()
            self._unchecked = 0
        except Exception as exc:  # the worker's connection checkpoints too; try again when next idle
            log.debug("checkpoint skipped: %s", exc)

    def _fail_waiting(self) -> None:
        """After the thread's loop ended: whatever is still queued gets an error (its sender answers 503)."""
        left = []
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if item is not self._stop:
                left.append(item)
        _release(left, [QueueUnavailable("the event writer stopped")] * len(left))

    def _set_busy(self, n: int) -> None:
        self._busy = n
        if self._shared_busy is not None:
            self._shared_busy.value = n

    def _move(self, project, journal: Journal, limit: int | None = None) -> None:
        """Move the journal's next ``limit`` events (all when None) into the project file, in one transaction
        (caller holds the gate); ``FileBusy`` (nothing moved) when another connection holds the file's lock.
        The journal is emptied once every record is moved.

        In slices: after a long ingest the journal holds thousands of events, and one transaction for them all
        would hold up the acknowledgements queued behind it (hundreds of milliseconds). The records are read
        once per backlog (``_backlog``); each slice is ``move_journal`` of a longer prefix, which skips what the
        previous slices moved (``ls.journal_moved``)."""
        if journal.count == 0:
            return
        with project.transaction(max_wait_s=0):  # the lock first: the journal is read only once it can be moved
            if self._backlog is None or len(self._backlog) < journal.count:
                self._backlog = journal.read()  # (appended to since: read again; the moved prefix is unchanged)
                journal.count = len(self._backlog)  # (a line that is not a record is not counted)
            end = len(self._backlog) if limit is None else min(len(self._backlog), self._moved_n + limit)
            bookkeeping.move_journal(project, self._backlog[:end])
        self._moved_n = end
        if end >= journal.count:
            self._backlog, self._moved_n = None, 0
            self._clear(journal)

    @staticmethod
    def _clear(journal: Journal) -> None:
        """Empty the journal after a committed move; if that fails, the next move skips the moved records
        (``journal.py``), so the failure costs nothing but a log line."""
        try:
            journal.clear()
        except OSError as exc:
            log.warning("could not empty %s (its moved records will be skipped): %s", journal.path, exc)


def _release(batch: list, outcome: list) -> None:
    """Resolve the batch's futures: one wake-up per event loop, not one per event."""
    per_loop: dict = {}
    for (loop, fut, _, _), res in zip(batch, outcome):
        per_loop.setdefault(loop, []).append((fut, res))
    for loop, pairs in per_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for these any more
            loop.call_soon_threadsafe(_resolve_all, pairs)


def _resolve_all(pairs: list) -> None:
    for fut, res in pairs:
        if fut.done():
            continue
        if isinstance(res, BaseException):
            fut.set_exception(res)
        else:
            fut.set_result(res)
